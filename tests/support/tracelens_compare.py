"""gpuscope's op categories against TraceLens's ``ops_summary.csv`` /
``ops_summary_by_category.csv`` beside the shared traces (docs/inference.md "Comparison with
TraceLens").

TraceLens sums, per op, the *direct* kernel time of the ``cpu_op`` that launched each kernel and
gives the op one category.  gpuscope gives each GPU row a category.  To compare like with like,
gpuscope's rows are grouped the way TraceLens groups them (:func:`op_times`) and TraceLens's
categories are renamed to gpuscope's (:data:`CROSSWALK`); where the two still differ for an op
the difference is a definition, listed in :data:`DIFFERENCES` and in the docs.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analyzers.serving.categories import CATEGORIES, MEMORY, categorize
from analyzers.serving.graphs import Capture, attribute_graphs
from analyzers.serving.ops import kernel_ops
from collectors.kineto import read_kineto

CROSSWALK = {
    "GEMM": "GEMM",
    "CONV_fwd": "GEMM",
    "CONV_bwd": "GEMM",
    "SDPA_fwd": "attention",
    "SDPA_bwd": "attention",
    "InferenceAttention": "attention",
    "RMSNorm": "normalization",
    "NORM_fwd": "normalization",
    "NORM_bwd": "normalization",
    "elementwise": "elementwise",
    "reduce": "elementwise",
    "RoPE_fwd": "elementwise",
    "multi_tensor_apply": "elementwise",
    "triton": "Triton-fused",
    "other": "other",
}
"""TraceLens category → the gpuscope category of the same ops (naming, not a difference)."""

DIFFERENCES = {
    "aten::_flash_attention_forward": ("other", "attention"),
    "sage_fwd_1": ("other", "attention"),
    "sage_quant_kernel_0": ("other", "attention"),
    "vllm::moe_forward": ("other", "MoE"),
    "TopK": ("other", "MoE"),
    "SortTokens": ("other", "MoE"),
    "_C::rotary_embedding": ("other", "elementwise"),
    "aten::_softmax": ("other", "elementwise"),
    "aten::gather": ("other", "elementwise"),
    "aten::index": ("other", "elementwise"),
    "aten::index_select": ("other", "elementwise"),
    "aten::arange": ("other", "elementwise"),
    "aten::cat": ("other", "elementwise"),
    "aten::_local_scalar_dense": ("other", "memory"),
}
"""Ops that TraceLens and gpuscope put in different categories: op → (TraceLens, gpuscope)."""

TRACES = {
    "inference/sglang_decode": (
        "sglang_Qwen3-8B_decode.json.gz",
        "capture_traces/bs_32_rank0.json.gz",
    ),
    "inference/sglang_prefilldecode": ("sglang_Qwen3-8B_prefilldecode.json.gz", None),
    "inference/vllm_prefilldecode_piecewise": (
        "graph_execution.json.gz",
        "capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
    ),
    "inference/xdit_flux.1_aiter_sage": (
        "profile_trace_rank_0.json.gz",
        "capture_traces/capture_trace_rank_0.json.gz",
    ),
}
"""The inference traces (folder → execution trace, capture trace); their CSVs are in
``perf_csvs/``.  The other traces with a ``*_perf_report_csvs/ops_summary.csv`` have no graphs."""


def traces_with_reference(root: Path) -> list[tuple[str, Path, Path | None, Path]]:
    """(label, trace, capture or None, folder of TraceLens's CSVs) for every shared trace
    that has an ``ops_summary_by_category.csv``."""
    out = []
    for rel, (name, cap) in TRACES.items():
        d = root / rel
        out.append((rel, d / name, d / cap if cap else None, d / "perf_csvs"))
    for csvs in sorted(root.rglob("*_perf_report_csvs")):
        if (csvs / "ops_summary_by_category.csv").exists():
            trace = csvs.with_name(csvs.name.removesuffix("_perf_report_csvs") + ".json.gz")
            out.append((str(trace.relative_to(root)).removesuffix(".json.gz"), trace, None, csvs))
    return out


@lru_cache(maxsize=16)
def rows(trace: Path, capture: Path | None) -> pd.DataFrame:
    """gpuscope's kernel_ops table (graph replays attributed through *capture*, with the
    capture's kernel names) and ``category`` and ``launch_name`` columns (do not modify)."""
    t = read_kineto(trace)
    caps = [Capture(read_kineto(capture))] if capture else []
    k = kernel_ops(t, attribute_graphs(t, caps))
    k["category"] = categorize(k)
    k["launch_name"] = None
    has = k["launch_row"].to_numpy() >= 0
    k.loc[has, "launch_name"] = t.host["name"].astype(object).to_numpy()[k["launch_row"][has]]
    return k


def tracelens_key(k: pd.DataFrame) -> np.ndarray:
    """The name TraceLens files each row under: the op; for a launch call outside every op, the
    call's name; None for rows TraceLens leaves out (memsets, rows without a launching call).
    TraceLens drops the ``_N`` suffix of ``sglang_profiler::`` range names."""
    key = np.where(k["op"].notna(), k["op"], k["launch_name"]).astype(object)
    key[(k["via"] == "no-launch").to_numpy() | (k["kind"] == "memset").to_numpy()] = None
    sgl = [isinstance(n, str) and n.startswith("sglang_profiler::") for n in key]
    return np.array(
        [re.sub(r"_\d+$", "", n) if s else n for n, s in zip(key, sgl, strict=True)], dtype=object
    )


def op_times(k: pd.DataFrame) -> pd.DataFrame:
    """Per TraceLens key: ``ms`` (sum of durations), ``n`` (rows) and ``categories`` (the set of
    gpuscope categories of its rows, memcpy rows' ``memory`` left out unless all are memcpy)."""
    key = tracelens_key(k)
    out: dict[str, dict[str, object]] = {}
    for name in sorted({x for x in key if x is not None}):
        r = k[key == name]
        cats = set(r["category"][r["kind"] != "memcpy"]) or {MEMORY}
        out[name] = {"ms": r["dur_ns"].sum() / 1e6, "n": len(r), "categories": cats}
    return pd.DataFrame.from_dict(out, orient="index")


def tracelens_ops(csvs: Path) -> pd.DataFrame:
    """TraceLens's ``ops_summary.csv``: per op name, ``ms`` and ``category``."""
    ms: dict[str, float] = defaultdict(float)
    cat: dict[str, str] = {}
    with open(csvs / "ops_summary.csv", newline="") as f:
        for r in csv.DictReader(f):
            ms[r["name"]] += float(r["total_direct_kernel_time_ms"])
            cat[r["name"]] = r["Categories"].strip("[]'")
    return pd.DataFrame({"ms": pd.Series(ms), "category": pd.Series(cat)})


def tracelens_categories(csvs: Path) -> dict[str, float]:
    """TraceLens's ``ops_summary_by_category.csv``: ms per category, renamed by the crosswalk."""
    out: dict[str, float] = defaultdict(float)
    with open(csvs / "ops_summary_by_category.csv", newline="") as f:
        for r in csv.DictReader(f):
            out[CROSSWALK[r["op category"]]] += float(r["total_direct_kernel_time_ms"])
    return dict(out)


def bare_launch(k: pd.DataFrame) -> np.ndarray:
    """Rows launched by a call outside every op (TraceLens files them under the call's name,
    category ``other``)."""
    return (k["via"] == "no-op").to_numpy()


def totals_table(root: Path) -> str:
    """Markdown: per trace, GPU work time (ms) as gpuscope and TraceLens count it, and the rows
    only gpuscope counts."""
    lines = [
        "| trace | gpuscope ms | TraceLens ms | memsets ms | no launching call ms | "
        "launch outside any op ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, trace, cap, csvs in traces_with_reference(root):
        k = rows(trace, cap)
        tl = sum(tracelens_categories(csvs).values())
        memset = k["dur_ns"][k["kind"] == "memset"].sum() / 1e6
        nolaunch = k["dur_ns"][k["via"] == "no-launch"].sum() / 1e6
        bare = k["dur_ns"][bare_launch(k)].sum() / 1e6
        lines.append(
            f"| {label} | {k['dur_ns'].sum() / 1e6:.3f} | {tl:.3f} | {memset:.3f} | "
            f"{nolaunch:.3f} | {bare:.3f} |"
        )
    return "\n".join(lines)


def share_table(root: Path) -> str:
    """Markdown: per trace and category, TraceLens's share and gpuscope's share of GPU work
    time (%), and the ops of that trace whose category differs (:data:`DIFFERENCES`)."""
    lines = [
        "| trace | category | TraceLens % | gpuscope % | ops categorised differently |",
        "|---|---|---:|---:|---|",
    ]
    for label, trace, cap, csvs in traces_with_reference(root):
        k = rows(trace, cap)
        tl = tracelens_categories(csvs)
        tl_total = sum(tl.values())
        mine = k.groupby("category")["dur_ns"].sum()
        total = int(k["dur_ns"].sum())
        theirs = tracelens_ops(csvs)["category"]
        differ = [n for n in op_times(k).index if theirs.get(n) == DIFFERENCES.get(n, (None,))[0]]
        for c in CATEGORIES:
            a, b = tl.get(c, 0.0), int(mine.get(c, 0))
            if not a and not b:
                continue
            diff = sorted(n for n in differ if c in DIFFERENCES[n])
            lines.append(
                f"| {label} | {c} | {100 * a / tl_total:.2f} | {100 * b / total:.2f} | "
                f"{', '.join(f'`{d}`' for d in diff)} |"
            )
    return "\n".join(lines)
