"""Kernel summary: hand-computed cases, a pandas/statistics reference, HTA's kernel table."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.kernel_summary import SUMMARY_COLUMNS, kernel_summary
from analyzers.options import AnalysisOptions
from collectors.model import Trace, TraceMeta, make_trace


def build(rows: list[tuple[str, int, int]], kind: str = "kernel") -> Trace:
    """GPU rows (name, start, duration) on stream 7, all with their own correlation."""
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [r[0] for r in rows],
            "kind": [kind] * len(rows),
            "start_ns": [r[1] for r in rows],
            "end_ns": [r[1] + r[2] for r in rows],
            "stream": [7] * len(rows),
            "correlation": list(range(len(rows))),
        },
    )


def test_statistics_of_the_documented_example() -> None:
    t = build([("gemm", 0, 10), ("gemm", 100, 20), ("gemm", 200, 60), ("relu", 300, 10)])
    s = kernel_summary(t)
    assert list(s.columns) == list(SUMMARY_COLUMNS)
    g = s.iloc[0]
    assert (g["name"], g["type"], g["count"], g["total_ns"]) == ("gemm", "COMPUTATION", 3, 90)
    assert (g["avg_ns"], g["median_ns"], g["min_ns"], g["max_ns"]) == (30.0, 20.0, 10, 60)
    assert math.isclose(g["stddev_ns"], math.sqrt(1400 / 2))  # (20² + 10² + 30²) / (n − 1)
    assert math.isclose(g["time_pct"], 90.0)
    r = s.iloc[1]
    assert (r["name"], r["count"], r["stddev_ns"], r["median_ns"]) == ("relu", 1, 0.0, 10.0)


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    s = kernel_summary(build([("k", 0, 1), ("k", 10, 4), ("k", 20, 2), ("k", 30, 9)]))
    assert s.iloc[0]["median_ns"] == 3.0


def test_ties_order_by_count_ascending_then_name_like_nsys() -> None:
    rows = [("b", 0, 10), ("a", 20, 10), ("c", 40, 5), ("c", 50, 5), ("z", 60, 30)]
    s = kernel_summary(build(rows))
    assert s["name"].tolist() == ["z", "a", "b", "c"]


def test_only_kernels_are_summarized_by_default() -> None:
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": ["gemm", "Memcpy HtoD (Pinned -> Device)", "ncclKernel_AllReduce"],
            "kind": ["kernel", "memcpy", "kernel"],
            "start_ns": [0, 10, 20],
            "end_ns": [5, 15, 40],
            "stream": [7, 7, 8],
            "correlation": [1, 2, 3],
        },
    )
    s = kernel_summary(t)
    assert s["name"].tolist() == ["ncclKernel_AllReduce", "gemm"]
    assert s["type"].tolist() == ["COMMUNICATION", "COMPUTATION"]
    m = kernel_summary(t, kinds=("memcpy",))
    assert m["name"].tolist() == ["Memcpy HtoD (Pinned -> Device)"]
    assert m["type"].tolist() == ["MEMORY"]


def test_empty_trace_gives_an_empty_table_with_the_columns() -> None:
    s = kernel_summary(build([]))
    assert s.empty and list(s.columns) == list(SUMMARY_COLUMNS)


names = st.sampled_from(["a", "b", "c", "d"])
rows_strategy = st.lists(
    st.tuples(names, st.integers(0, 10**12), st.integers(0, 10**9)), max_size=40
)


@settings(max_examples=150, deadline=None)
@given(rows_strategy)
def test_statistics_equal_an_independent_per_name_computation(
    rows: list[tuple[str, int, int]],
) -> None:
    s = kernel_summary(build(rows)).set_index("name")
    by_name: dict[str, list[int]] = {}
    for name, _, dur in rows:
        by_name.setdefault(name, []).append(dur)
    grand = sum(sum(v) for v in by_name.values())
    assert sorted(s.index) == sorted(by_name)
    for name, durs in by_name.items():
        r = s.loc[name]
        assert r["count"] == len(durs) and r["total_ns"] == sum(durs)
        assert (r["min_ns"], r["max_ns"]) == (min(durs), max(durs))
        assert math.isclose(r["avg_ns"], statistics.fmean(durs), rel_tol=1e-12)
        assert r["median_ns"] == statistics.median(durs)
        sd = statistics.stdev(durs) if len(durs) > 1 else 0.0
        assert math.isclose(r["stddev_ns"], sd, rel_tol=1e-9, abs_tol=1e-6)
        if grand:
            assert math.isclose(r["time_pct"], 100 * sum(durs) / grand)
    totals = s["total_ns"].to_numpy()
    assert np.all(totals[:-1] >= totals[1:])


def test_all_zero_durations_have_no_time_share() -> None:
    s = kernel_summary(build([("k", 0, 0), ("k", 5, 0)]))
    assert s.iloc[0]["count"] == 2 and pd.isna(s.iloc[0]["time_pct"])


def test_window_applies_before_summarizing() -> None:
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": ["k", "k"],
            "kind": ["kernel", "kernel"],
            "start_ns": [10, 160],
            "end_ns": [20, 180],
            "stream": [7, 7],
            "correlation": [1, 2],
        },
        host={
            "name": ["ProfilerStep#1", "ProfilerStep#2", "cudaLaunchKernel", "cudaLaunchKernel"],
            "cat": ["user_annotation", "user_annotation", "cuda_runtime", "cuda_runtime"],
            "start_ns": [0, 100, 5, 150],
            "end_ns": [100, 200, 6, 151],
            "correlation": [-1, -1, 1, 2],
        },
    )
    assert kernel_summary(t)["total_ns"].tolist() == [10]
    assert kernel_summary(t, AnalysisOptions(all_events=True))["total_ns"].tolist() == [30]
