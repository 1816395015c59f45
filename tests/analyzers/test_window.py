"""The ProfilerStep window (metrics.md §2; HTA 0.6.1 ``_filter_irrelevant_gpu_kernels``).

Each case is a small hand-built trace whose kept events follow from HTA's rule by hand.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.options import AnalysisOptions
from analyzers.window import gpu_events, host_threads, window
from collectors.model import Trace, TraceMeta, make_trace


def build(
    host: list[tuple[str, int, int, int]],
    gpu: list[tuple[str, int, int, int, int]],
) -> Trace:
    """host rows (name, start, end, correlation); gpu rows (name, start, end, stream, corr).

    Host rows named ``ProfilerStep#N`` also become step annotations, as the Kineto reader does.
    """
    steps = [h for h in host if re.match(r"ProfilerStep#(\d+)", h[0])]
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [g[0] for g in gpu],
            "kind": ["sync" if "Sync" in g[0] else "kernel" for g in gpu],
            "start_ns": [g[1] for g in gpu],
            "end_ns": [g[2] for g in gpu],
            "stream": [g[3] for g in gpu],
            "correlation": [g[4] for g in gpu],
        },
        host={
            "name": [h[0] for h in host],
            "cat": [
                "user_annotation" if h[0].startswith("ProfilerStep") else "cuda_runtime"
                for h in host
            ],
            "start_ns": [h[1] for h in host],
            "end_ns": [h[2] for h in host],
            "correlation": [h[3] for h in host],
        },
        annotations={
            "name": [s[0] for s in steps],
            "kind": ["step"] * len(steps),
            "start_ns": [s[1] for s in steps],
            "end_ns": [s[2] for s in steps],
            "step": [int(s[0].split("#")[1]) for s in steps],
        },
    )


TWO_STEPS_HOST = [
    ("ProfilerStep#1", 0, 100, -1),
    ("ProfilerStep#2", 100, 200, -1),
    ("cudaLaunchKernel", -5, -1, 2),  # before the first step
    ("cudaLaunchKernel", 10, 12, 1),  # in step 1
    ("cudaLaunchKernel", 150, 152, 3),  # in step 2 (the last)
]
TWO_STEPS_GPU = [
    ("k_in_step1", 20, 30, 7, 1),
    ("k_before_steps", 5, 8, 7, 2),
    ("k_in_last_step", 160, 170, 7, 3),
    ("k_without_launch", 40, 50, 7, 4),
    ("Event Sync", 60, 61, -1, 1),  # stream-less: never a GPU event
]


def kept(trace: Trace, **opts: object) -> list[str]:
    return sorted(gpu_events(trace, AnalysisOptions(**opts))["name"].astype(str))  # type: ignore[arg-type]


def test_two_steps_keep_work_launched_before_the_last_step() -> None:
    t = build(TWO_STEPS_HOST, TWO_STEPS_GPU)
    assert kept(t) == ["k_before_steps", "k_in_step1"]
    w = window(t)
    assert w.filtered
    assert (w.start_ns, w.end_ns, w.steps) == (-5, 100, (1,))


def test_all_events_keeps_every_event_with_a_stream() -> None:
    t = build(TWO_STEPS_HOST, TWO_STEPS_GPU)
    assert kept(t, all_events=True) == [
        "k_before_steps",
        "k_in_last_step",
        "k_in_step1",
        "k_without_launch",
    ]
    w = window(t, AnalysisOptions(all_events=True))
    assert not w.filtered
    assert (w.start_ns, w.end_ns, w.steps) == (-5, 200, (1, 2))


def test_one_step_name_disables_the_filter() -> None:
    host = [h for h in TWO_STEPS_HOST if h[0] != "ProfilerStep#2"]
    t = build(host, TWO_STEPS_GPU)
    assert len(kept(t)) == 4
    assert not window(t).filtered


def test_no_step_at_all_disables_the_filter() -> None:
    host = [h for h in TWO_STEPS_HOST if not h[0].startswith("ProfilerStep")]
    t = build(host, TWO_STEPS_GPU)
    assert len(kept(t)) == 4
    assert window(t).steps == ()


def test_cutoff_is_the_latest_step_start_even_with_repeated_step_names() -> None:
    # three steps: the first two are complete, so work of steps 1 and 2 stays
    host = [*TWO_STEPS_HOST, ("ProfilerStep#3", 200, 300, -1), ("cudaLaunchKernel", 250, 251, 5)]
    gpu = [*TWO_STEPS_GPU, ("k_in_step3", 260, 270, 7, 5)]
    t = build(host, gpu)
    assert kept(t) == ["k_before_steps", "k_in_last_step", "k_in_step1"]
    assert window(t).steps == (1, 2)


def test_gpu_row_without_correlation_is_kept_by_its_own_start_like_hta() -> None:
    # HTA counts a row with a stream but no correlation among the "CPU events": it stays when it
    # starts before the cutoff
    gpu = [*TWO_STEPS_GPU, ("early_no_corr", 50, 55, 9, -1), ("late_no_corr", 120, 130, 9, -1)]
    t = build(TWO_STEPS_HOST, gpu)
    assert kept(t) == ["early_no_corr", "k_before_steps", "k_in_step1"]


def test_rank_whose_step_names_are_only_on_gpu_rows_keeps_no_kernel() -> None:
    # two step names exist, but no host step row: HTA 0.6 falls back to the first CPU start as
    # cutoff, so no host call is kept and every correlated GPU kernel goes
    host = [("cudaLaunchKernel", 10, 12, 1), ("cudaLaunchKernel", 150, 152, 3)]
    gpu = [
        ("ProfilerStep#1", 0, 100, 7, 11),
        ("ProfilerStep#2", 100, 200, 7, 12),
        ("k_in_step1", 20, 30, 7, 1),
        ("k_in_last_step", 160, 170, 7, 3),
    ]
    t = build(host, gpu)
    assert kept(t) == []
    assert window(t).end_ns == 10


def test_rule_set_05_counts_names_containing_profilerstep() -> None:
    host = [
        ("ProfilerStep#1", 0, 100, -1),
        ("my ProfilerStep marker", 100, 200, -1),
        ("cudaLaunchKernel", 10, 12, 1),
        ("cudaLaunchKernel", 150, 152, 3),
    ]
    gpu = [("k_in_step1", 20, 30, 7, 1), ("k_late", 160, 170, 7, 3)]
    t = build(host, gpu)
    assert kept(t, hta_version="0.6") == ["k_in_step1", "k_late"]  # one 0.6 step name
    assert kept(t, hta_version="0.5") == ["k_in_step1"]  # two 0.5 step names


def test_trace_without_host_events_is_not_filtered() -> None:
    gpu = [("ProfilerStep#1", 0, 100, 7, 11), ("ProfilerStep#2", 100, 200, 7, 12)]
    t = build([], [*gpu, ("k", 20, 30, 7, 1)])
    assert len(kept(t)) == 3


def test_empty_trace_has_an_empty_window() -> None:
    t = build([], [])
    assert kept(t) == []
    w = window(t)
    assert (w.start_ns, w.end_ns, w.steps) == (None, None, ())


def test_gpu_events_keep_the_gpu_table_index_and_columns() -> None:
    t = build(TWO_STEPS_HOST, TWO_STEPS_GPU)
    g = gpu_events(t)
    assert list(g.columns) == list(t.gpu.columns)
    assert sorted(g.index.tolist()) == [0, 1]


def test_memoized_results_leave_with_their_trace() -> None:
    import gc

    from analyzers import window as window_module

    t = build(TWO_STEPS_HOST, TWO_STEPS_GPU)
    gpu_events(t)
    key = (id(t.gpu), id(t.host), False, "0.6", False)
    assert key in window_module._CACHE
    del t
    gc.collect()
    assert key not in window_module._CACHE


def test_window_events_are_selected_once_and_each_caller_gets_its_own_copy() -> None:
    t = build(TWO_STEPS_HOST, TWO_STEPS_GPU)
    first = gpu_events(t)
    starts = first["start_ns"].tolist()
    first["added_by_a_caller"] = 1
    first.loc[first.index[0], "start_ns"] = -999  # changed in place by a caller
    again = gpu_events(t)
    assert "added_by_a_caller" not in again.columns
    assert sorted(again["name"]) == ["k_before_steps", "k_in_step1"]
    assert again["start_ns"].tolist() == starts and -999 not in t.gpu["start_ns"].tolist()
    assert again.index.tolist() == t.gpu.index[t.gpu["name"].isin(again["name"])].tolist()
    every = gpu_events(t, AnalysisOptions(all_events=True))  # other options: another selection
    assert len(every) == 4


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(-2, 6)), max_size=25),
    st.lists(
        st.tuples(
            st.sampled_from(["k", "ProfilerStep#9", "Event Sync"]),
            st.integers(0, 60),
            st.integers(-1, 8),
            st.integers(-2, 6),
        ),
        max_size=25,
    ),
)
def test_kept_rows_are_those_of_the_isin_rule(
    host: list[tuple[int, int]], gpu: list[tuple[str, int, int, int]]
) -> None:
    """The window's rows (ids looked up in the memoised correlation index) are the rule's
    ``np.isin`` of the kernels' ids against those of the CPU events before the cutoff, on
    random ids (negative ones too), GPU rows that count as CPU events and ties."""
    rows = [("ProfilerStep#1", 0, 30, -1), ("ProfilerStep#2", 30, 60, -1)]
    rows += [(f"call{i}", t, t + 1, c) for i, (t, c) in enumerate(host)]
    trace = build(rows, [(n, t, t + 2, s, c) for n, t, s, c in gpu])
    g, h = trace.gpu, trace.host
    g_kernel = ((g["stream"] >= 0) & (g["correlation"] >= 0)) | g["name"].isin(
        ["Event Sync", "Context Sync"]
    )
    g_cpu = ~g_kernel
    step_starts = [s for n, s, _, _ in rows if n.startswith("ProfilerStep")]
    step_starts += g.loc[g_cpu & g["name"].str.startswith("ProfilerStep"), "start_ns"].tolist()
    cutoff = max(step_starts)
    kept = np.concatenate(
        [
            h.loc[h["start_ns"] < cutoff, "correlation"].to_numpy(),
            g.loc[g_cpu & (g["start_ns"] < cutoff), "correlation"].to_numpy(),
        ]
    )
    want = (g_kernel & np.isin(g["correlation"], kept)) | (g_cpu & (g["start_ns"] < cutoff))
    want &= g["stream"] != -1
    assert gpu_events(trace).index.tolist() == np.flatnonzero(want.to_numpy()).tolist()


@pytest.mark.parametrize(
    "threads",
    [
        [(7, 1), (7, 2), (7, 1), (9, 1), (9, 2), (7, 2)],
        [(-5, 2**62), (2**62, -(2**62)), (-5, 2**62), (3, 3)],  # keys beyond int64: other path
        [],
    ],
)
def test_host_threads_are_dense_codes_of_pid_and_tid_in_order_of_appearance(threads) -> None:
    trace = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        host={
            "name": ["op"] * len(threads),
            "cat": ["cpu_op"] * len(threads),
            "start_ns": list(range(len(threads))),
            "end_ns": list(range(1, len(threads) + 1)),
            "pid": [p for p, _ in threads],
            "tid": [t for _, t in threads],
        },
    )
    first_seen: dict[tuple[int, int], int] = {}
    want = [first_seen.setdefault(t, len(first_seen)) for t in threads]
    codes = host_threads(trace)
    assert codes.tolist() == want and codes.dtype == np.int64
    assert not codes.flags.writeable and host_threads(trace) is codes  # one per Trace
