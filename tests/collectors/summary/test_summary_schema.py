"""The summary schema matches what the writer writes (collectors/summary/schema.py).

A summary decoded with ``type=Summary`` must equal the plain decode of the same bytes: no key
dropped (every key the writer writes is in the schema), no value converted (an int the writer
writes stays an int), nothing rejected.  Checked on the summary of every trace in
``../shared/data`` (built in-process, with no NaN or infinity anywhere), on summaries the writer
builds here from the sample traces, a run directory with NVML counters and ``meta.json``, and
on every summary the test builders (``tests/support/summaries.py``) produce.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from collectors.errors import InputError
from collectors.summary.schema import SCHEMA_VERSION, RankEntry, Summary
from tests.support.env import SAMPLES, SHARED_DATA, shared_path
from tests.support.summaries import complete, kernel_row, make_summary, sim_summary, summary

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000


def round_trip(doc: dict[str, Any]) -> None:
    raw = msgspec.json.encode(doc)
    typed = msgspec.json.decode(raw, type=Summary)
    assert typed == msgspec.json.decode(raw)
    assert msgspec.json.encode(typed) == raw  # same keys, same order, same int/float types


NOT_TRACES = ("execution_trace/benchmark_simple_add_et", "memory_analysis/", "execution_details")
"""Files under ``../shared/data/kineto`` that are not Kineto traces (as the snapshot skips)."""


def shared_inputs() -> list[str]:
    """Every Kineto trace and Nsight Systems export of ``../shared/data`` (paths under it)."""
    if not SHARED_DATA.is_dir():
        return []
    kineto = [
        f.relative_to(SHARED_DATA).as_posix()
        for f in sorted((SHARED_DATA / "kineto").rglob("*.json*"))
        if not any(n in f.as_posix() for n in NOT_TRACES)
    ]
    nsys = [
        f.relative_to(SHARED_DATA).as_posix() for f in sorted(SHARED_DATA.glob("nsys/*.sqlite"))
    ]
    return kineto + nsys


def _finite(value: Any, where: str = "$") -> None:
    if isinstance(value, float):
        assert np.isfinite(value), where
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(v, f"{where}[{i}]")


@pytest.mark.parametrize("rel", shared_inputs() or ["kineto"])
def test_every_shared_trace_gives_a_finite_summary_that_validates_unchanged(rel: str) -> None:
    """Every summary of every shared trace: no NaN or infinity anywhere (JSON cannot hold
    them: ``allow_nan=False``), and the schema holds every key the writer writes."""
    from collectors.load import load_traces
    from reports.summary import build_summary

    path = shared_path(*rel.split("/"))
    if path.is_dir():
        pytest.skip(f"shared data not present: no traces under {path}")
    doc = build_summary(load_traces([path]))
    _finite(doc)
    round_trip(json.loads(json.dumps(doc, allow_nan=False)))


@pytest.mark.parametrize(
    "inputs",
    [["synthetic_2rank"], ["synthetic_8rank"], ["torch_cpu"]],
    ids=lambda x: x[0],
)
def test_summaries_of_the_sample_traces_validate_unchanged(inputs: list[str]) -> None:
    from collectors.load import load_traces
    from reports.summary import build_summary

    doc = build_summary(load_traces([SAMPLES / i for i in inputs]))
    round_trip(json.loads(json.dumps(doc)))


@pytest.mark.parametrize("ncu_gpu", [None, "H100 SXM5 80 GB"])
def test_summaries_with_every_shared_ncu_report_validate_unchanged(ncu_gpu: str | None) -> None:
    from collectors.load import load_traces
    from collectors.ncu import NcuReport, read_ncu_csv
    from reports.summary import build_summary

    traces = load_traces([SAMPLES / "synthetic_2rank"])
    files = sorted(shared_path("ncu").glob("*.csv"))
    kinds = set()
    # a report without a usable launch gives the section's other shape: source and error
    empty = NcuReport(path="empty.csv", layout="long", launches=())
    doc = json.loads(json.dumps(build_summary(traces, extras={"ncu": empty})))
    assert set(doc["ranks"][0]["roofline"]["ncu"]) == {"source", "error"}
    round_trip(doc)
    for f in files:
        try:
            report = read_ncu_csv(f)
        except InputError:  # the folder also holds the samples' other CSVs
            continue
        extras: dict[str, Any] = {"ncu": report, "ncu_gpu": ncu_gpu}
        doc = json.loads(json.dumps(build_summary(traces, extras=extras)))
        ncu = doc["ranks"][0]["roofline"]["ncu"]
        kinds.add("error" if "error" in ncu else "kernels")
        round_trip(doc)
    assert "kernels" in kinds


def _counters(path: Path) -> None:
    from collectors.nvml import CSV_HEADER

    rows = []
    for i, mask in enumerate([0, 0x4, 0x4 | 0x40, 0, 0x1, 0x8]):
        rows.append((T0 + i * S, 0, "clock_event_reasons", float(mask)))
        rows.append((T0 + i * S, 0, "power_instant_mw", 300_000.0 + i))
        rows.append((T0 + i * S, 1, "gpu_util_pct", 97.0))
    for k, t in ((1, 0), (2, 2), (3, 4)):
        rows.append((T0 + t * S, -1, "step_begin", float(k)))
    for t, e0, e1 in ((0, 1000, 0), (2, 1500, 100), (4, 2300, 300)):
        rows.append((T0 + t * S + 10, 0, "energy_mj", float(e0)))
        rows.append((T0 + t * S + 10, 1, "energy_mj", float(e1)))
    body = "".join(f"{t - T0},{t},{g},{f},{v}\n" for t, g, f, v in sorted(rows))
    path.write_bytes(gzip.compress((CSV_HEADER + body).encode()))


def test_a_run_directory_summary_with_counters_and_meta_validates_unchanged(
    tmp_path: Path,
) -> None:
    from collectors.load import load_traces
    from collectors.nvml import counter_files, read_run_counters
    from profiler import rundir
    from reports.summary import build_summary

    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "synthetic_2rank", run / "traces")
    (run / "counters").mkdir()
    _counters(run / "counters" / "n0.csv.gz")
    (run / "ranks").mkdir()
    for r in (0, 1):
        meta = {"rank": r, "world_size": 2, "host": "n0", "step_times_ns": [5, 7, 6]}
        meta["versions"] = {"python": "3.11.7", "torch": None}
        (run / "ranks" / f"rank-{r}.json").write_text(json.dumps(meta))
    rundir.write_meta(run, command=["python", "t.py"], exit_code=0, git={"commit": "c0ffee"})
    extras = {"run_dir": str(run), "nvml": read_run_counters(counter_files(run))}
    doc = json.loads(json.dumps(build_summary(load_traces([run / "traces"]), extras=extras)))
    (host,) = doc["run"]["nvml"]
    assert host["throttle"] and host["energy_steps"] and host["step_marks"] and host["series"]
    assert doc["run"]["meta"]["git_commit"] == "c0ffee"
    round_trip(doc)


def test_every_test_builder_summary_validates_unchanged() -> None:
    rng = np.random.default_rng(3)
    built = [
        make_summary([[100, 200], [150, 90]]),
        make_summary(
            [[100, 100], [100, 200]],
            exposed=[[5, 7], [6, 1]],
            idle=[[10, 0], [0, 50]],
            idle_pct=[3.0, 12.5],
            overlap_pct=[80.0, None],
            kernels=[[kernel_row("gemm", [5.0, 6.0, 9.0])], []],
            device="NVIDIA H200",
        ),
        sim_summary(rng),
        sim_summary(rng, 1.05, n=5),
        summary(),
        summary(
            {"rank": 0, "steps": [{"step": 1, "duration_ns": 100}], "idle": {"host_bound": {}}},
            {"rank": 1, "occupancy": {"flags": [{"name": "k", "time_share": 0.5}]}},
            comm_skew={"per_rank": [{"rank": 1, "late_count": 2}]},
            run={"nvml": [{"host": "n0", "throttle": [{"device": 0, "reasons": ["hw"]}]}]},
        ),
    ]
    for doc in built:
        assert doc["schema_version"] == SCHEMA_VERSION
        round_trip(doc)


def test_complete_fills_only_what_is_missing() -> None:
    rank = complete({"rank": 3, "temporal": {"idle_pct": 12.5}}, RankEntry)
    assert rank["rank"] == 3 and rank["device"] is None and rank["steps"] == []
    assert rank["temporal"]["idle_pct"] == 12.5 and rank["temporal"]["span_ns"] == 0
    assert rank["overlap"]["overlap_pct"] is None
    assert "idle" not in rank  # optional sections are not invented


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("ranks", 0, "steps", 0, "duration_ns"), -215_793_000, "Expected `int` >= 0"),
        (("ranks", 0, "steps", 0, "duration_ns"), 1.2e21, "Expected `int`, got `float`"),
        (("ranks", 0, "steps", 0, "start_ns"), 2**63, "<= 9223372036854775807"),
        (("ranks", 0, "temporal", "idle_pct"), 100.5, "<= 100.0"),
        (("ranks", 0, "temporal", "idle_pct"), -0.1, ">= 0.0"),
        (("ranks", 0, "rank"), -1, ">= 0"),
        (("ranks", 0, "kernel_summary"), {"name": "k"}, "Expected `array`"),
        (("ranks", 0, "steps"), "fast", "Expected `array`"),
        (("ranks", 0, "temporal"), [], "Expected `object`"),
        (("ranks", 0, "window", "steps", 0), True, "Expected `int`, got `bool`"),
    ],
)
def test_impossible_values_and_wrong_types_are_rejected(
    path: tuple[Any, ...], value: Any, problem: str
) -> None:
    doc = make_summary([[100, 200]])
    doc["ranks"][0]["window"]["steps"] = [0, 1]
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(msgspec.ValidationError, match=re.escape(problem)):
        msgspec.json.decode(msgspec.json.encode(doc), type=Summary)
