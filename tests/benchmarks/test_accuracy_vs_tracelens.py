"""gpuscope against TraceLens's own reports on every shared TraceLens trace: every number equal
or explained by a checked definitional difference, and docs/accuracy.md generated from it."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from tests.support.env import REPO, shared_path
from tests.support.scripts import load_script

SCRIPT = REPO / "benchmarks" / "accuracy_vs_tracelens.py"


def _script() -> Any:
    return load_script(SCRIPT)


@cache
def _rows(data: Path) -> list[Any]:
    return _script().compare_all(data)


def _data() -> Path:
    return shared_path("kineto", "tracelens")


def test_every_tracelens_number_is_equal_or_explained() -> None:
    acc = _script()
    rows = _rows(_data())
    bad = [r for r in rows if r.status == "unexplained"]
    assert bad == []
    refs = acc.references(_data())
    assert len(refs) == 12  # MANIFEST.md: every trace with a TraceLens reference
    # every row of every TraceLens op CSV was compared (FLOP and bytes)
    for csv in acc.OP_CSVS:
        n = sum(len(pd.read_csv(r.csvs / csv)) for r in refs if (r.csvs / csv).exists())
        assert sum(acc.op_row_counts(rows, csv.removesuffix(".csv")).values()) == n
    assert acc.op_row_counts(rows, "GEMM") == {"equal": 102, "explained": 0, "unexplained": 0}
    assert acc.op_row_counts(rows, "CONV_fwd") == {"equal": 1, "explained": 14, "unexplained": 0}
    assert acc.op_row_counts(rows, "SDPA_fwd") == {"equal": 4, "explained": 2, "unexplained": 0}
    explained = {r.reason for r in rows if r.status == "explained"}
    assert explained <= set(acc.EXPLANATIONS)


def test_a_difference_no_definition_accounts_for_is_unexplained(tmp_path: Path) -> None:
    """The explanations are checked, not assumed: perturbed TraceLens rows are unexplained."""
    acc = _script()
    (ref,) = [r for r in acc.references(_data()) if r.trace.name.startswith("Qwen_Qwen1.5-0.5B")]
    csvs = tmp_path / ref.csvs.name
    shutil.copytree(ref.csvs, csvs)
    gemm = pd.read_csv(csvs / "GEMM.csv")
    gemm.loc[0, "GFLOPS_first"] *= 1.01
    gemm.to_csv(csvs / "GEMM.csv", index=False)
    sdpa = pd.read_csv(csvs / "SDPA_fwd.csv")
    sdpa.loc[0, "param: causal"] = False  # the causal explanation no longer applies
    sdpa.to_csv(csvs / "SDPA_fwd.csv", index=False)
    timeline = pd.read_csv(csvs / "gpu_timeline.csv")
    # 2 µs: above the float-µs tolerance (1054 launched events × 0.49 ns)
    timeline.loc[timeline["type"] == "busy_time", "time ms"] += 0.002
    timeline.to_csv(csvs / "gpu_timeline.csv", index=False)
    moved = acc.Reference(ref.trace, csvs, ref.captures)
    data = _data()
    compared = [
        *acc.compare_timeline(moved, data),
        *acc.compare_ops(moved, "GEMM.csv", data),
        *acc.compare_ops(moved, "SDPA_fwd.csv", data),
    ]
    bad = [
        (r.section, r.item if r.section == "timeline" else r.item.split()[0])
        for r in compared
        if r.status == "unexplained"
    ]
    assert ("timeline", "busy") in bad
    assert ("GEMM", "aten::mm") in bad
    assert ("SDPA_fwd", "aten::_scaled_dot_product_flash_attention") in bad


def test_docs_accuracy_md_is_the_generated_table() -> None:
    text = _script().render(_rows(_data()))
    assert (REPO / "docs" / "accuracy.md").read_text(encoding="utf-8") == text, (
        "regenerate: python benchmarks/accuracy_vs_tracelens.py --write docs/accuracy.md"
    )
