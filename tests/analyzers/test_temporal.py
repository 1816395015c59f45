"""Temporal breakdown, overlap and per-step breakdown: hand cases and a unit-grid reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.options import AnalysisOptions
from analyzers.steps import STEP_COLUMNS, step_breakdown
from analyzers.temporal import overlap, temporal_breakdown
from collectors.model import Trace, TraceMeta, make_trace

# one name per kernel type (metrics.md §3)
GEMM, NCCL, COPY, SYNC = (
    "gemm",
    "ncclKernel_AllReduce",
    "Memcpy DtoD (Device -> Device)",
    "Stream Sync",
)
KIND = {GEMM: "kernel", NCCL: "kernel", COPY: "memcpy", SYNC: "sync"}


def build(
    gpu: list[tuple[str, int, int]], steps: list[tuple[int, int, int]] | None = None
) -> Trace:
    """GPU rows (name, start, end), one stream per name; steps (number, start, end).

    Steps are host rows and step annotations, as the Kineto reader makes them.  Fewer than two
    steps keep the window open, so every GPU row is analysed.
    """
    steps = steps or []
    streams = {GEMM: 7, NCCL: 20, COPY: 21, SYNC: 7}
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [g[0] for g in gpu],
            "kind": [KIND[g[0]] for g in gpu],
            "start_ns": [g[1] for g in gpu],
            "end_ns": [g[2] for g in gpu],
            "stream": [streams[g[0]] for g in gpu],
            "correlation": list(range(len(gpu))),
        },
        host={
            "name": [f"ProfilerStep#{s[0]}" for s in steps],
            "cat": ["user_annotation"] * len(steps),
            "start_ns": [s[1] for s in steps],
            "end_ns": [s[2] for s in steps],
        },
        annotations={
            "name": [f"ProfilerStep#{s[0]}" for s in steps],
            "kind": ["step"] * len(steps),
            "step": [s[0] for s in steps],
            "start_ns": [s[1] for s in steps],
            "end_ns": [s[2] for s in steps],
        },
    )


def test_hidden_communication_counts_as_compute() -> None:
    t = temporal_breakdown(build([(GEMM, 0, 100), (NCCL, 50, 200)]))
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (200, 0, 100, 100)
    assert (t.idle_pct, t.compute_pct, t.non_compute_pct) == (0.0, 50.0, 50.0)


def test_gap_between_kernels_is_idle() -> None:
    t = temporal_breakdown(build([(GEMM, 0, 100), (GEMM, 150, 200)]))
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (200, 50, 150, 0)
    assert t.idle_pct == 25.0


def test_overlap_and_exposed_communication_by_hand() -> None:
    o = overlap(build([(GEMM, 0, 100), (NCCL, 50, 200), (NCCL, 180, 260), (COPY, 300, 310)]))
    # C = [50, 260) (210 ns), P = [0, 100): C ∩ P = [50, 100)
    assert (o.comm_ns, o.compute_ns, o.overlap_ns, o.exposed_comm_ns) == (210, 100, 50, 160)
    assert math.isclose(o.overlap_pct, 100 * 50 / 210)


def test_no_communication_gives_no_overlap_percentage_and_no_exposed_time() -> None:
    o = overlap(build([(GEMM, 0, 100), (COPY, 100, 120)]))
    assert (o.comm_ns, o.overlap_ns, o.exposed_comm_ns, o.overlap_pct) == (0, 0, 0, None)


def test_trace_without_gpu_events_has_zero_span_and_no_percentages() -> None:
    t = temporal_breakdown(build([]))
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (0, 0, 0, 0)
    assert (t.idle_pct, t.compute_pct, t.non_compute_pct) == (None, None, None)


def test_sync_rows_with_a_stream_are_gpu_events_of_type_other() -> None:
    t = temporal_breakdown(build([(GEMM, 0, 10), (SYNC, 20, 30)]))
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (30, 10, 10, 10)


def test_hta_05_counts_stream_wait_event_as_compute() -> None:
    g = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": ["Stream Wait Event", "gemm"],
            "kind": ["sync", "kernel"],
            "start_ns": [0, 10],
            "end_ns": [5, 20],
            "stream": [7, 7],
            "correlation": [1, 2],
        },
    )
    assert temporal_breakdown(g).compute_ns == 10
    assert temporal_breakdown(g, AnalysisOptions(hta_version="0.5")).compute_ns == 15


def test_step_breakdown_of_the_documented_example() -> None:
    # analyzers/steps.py's table: host steps #1 [0,100) #2 [100,200) (#3 closes the window);
    # #1 launches gemm [150,180) at 10 and nccl [170,230) at 20, #2 launches gemm [240,300) at 110
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [GEMM, NCCL, GEMM],
            "kind": ["kernel"] * 3,
            "start_ns": [150, 170, 240],
            "end_ns": [180, 230, 300],
            "stream": [7, 20, 7],
            "correlation": [1, 2, 3],
        },
        host={
            "name": ["cudaLaunchKernel"] * 3 + [f"ProfilerStep#{n}" for n in (1, 2, 3)],
            "cat": ["cuda_runtime"] * 3 + ["user_annotation"] * 3,
            "start_ns": [10, 20, 110, 0, 100, 200],
            "end_ns": [12, 22, 112, 100, 200, 400],
            "correlation": [1, 2, 3, -1, -1, -1],
        },
        annotations={
            "name": [f"ProfilerStep#{n}" for n in (1, 2, 3)],
            "kind": ["step"] * 3,
            "step": [1, 2, 3],
            "start_ns": [0, 100, 200],
            "end_ns": [100, 200, 400],
        },
    )
    s = step_breakdown(t)
    assert list(s.columns) == list(STEP_COLUMNS)
    cols = ["step", "gpu_start_ns", "gpu_end_ns", "compute_ns", "exposed_comm_ns", "idle_ns"]
    assert s[cols].values.tolist() == [[1, 0, 230, 30, 50, 150], [2, 230, 300, 60, 0, 10]]
    assert s["work_events"].tolist() == [2, 1]
    assert s["launch_lag_ns"].tolist() == [145, 130]  # median of 140, 150; and 130
    assert s["steps_behind"].tolist() == [1.45, 1.3]


def test_step_breakdown_lists_only_the_windows_complete_steps() -> None:
    steps = [(1, 0, 100), (2, 100, 200), (3, 200, 300)]
    t = build([(GEMM, 10, 40)], steps=steps)
    # no host launches: the step filter keeps nothing, and lists steps 1 and 2
    assert step_breakdown(t)["step"].tolist() == [1, 2]
    assert step_breakdown(t, AnalysisOptions(all_events=True))["step"].tolist() == [1, 2, 3]


names = st.sampled_from([GEMM, NCCL, COPY, SYNC])
events = st.lists(
    st.tuples(names, st.integers(0, 56), st.integers(0, 8)).map(
        lambda r: (r[0], r[1], r[1] + r[2])
    ),
    max_size=14,
)
windows = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda w: (w[0], min(64, w[0] + w[1]))),
    max_size=4,
)


def _grid(ev: list[tuple[str, int, int]], which: set[str]) -> np.ndarray:
    g = np.zeros(64, dtype=bool)
    for name, s, e in ev:
        if name in which:
            g[s:e] = True
    return g


@settings(max_examples=300, deadline=None)
@given(events)
def test_breakdown_and_overlap_equal_a_unit_grid_reference(ev: list[tuple[str, int, int]]) -> None:
    trace = build(ev)
    t = temporal_breakdown(trace)
    o = overlap(trace)
    busy = _grid(ev, {GEMM, NCCL, COPY, SYNC})
    comp = _grid(ev, {GEMM})
    comm = _grid(ev, {NCCL})
    span = (max(e for _, _, e in ev) - min(s for _, s, _ in ev)) if ev else 0
    assert t.span_ns == span
    assert t.idle_ns == span - busy.sum()
    assert t.compute_ns == comp.sum()
    assert t.non_compute_ns == span - comp.sum() - (span - busy.sum())
    assert o.comm_ns == comm.sum() and o.compute_ns == comp.sum()
    assert o.overlap_ns == (comm & comp).sum()
    assert o.exposed_comm_ns == (comm & ~comp).sum()
    if comm.sum():
        assert o.overlap_pct == pytest.approx(100 * (comm & comp).sum() / comm.sum())
    else:
        assert o.overlap_pct is None


def _gpu_clock_reference(
    ev: list[tuple[str, int, int]], steps: list[tuple[int, int, int]]
) -> list[dict[str, int]]:
    """docs/metrics.md §7 by hand, one step at a time, on a 1-ns grid: events without a launch
    are placed at their own start, in the last step starting at or before it that still runs;
    a step runs on the GPU from the previous step's end (the first: from its host start, or
    the end of earlier work when later, but no later than its first event) to the latest end
    of its work and of every earlier step's."""
    ordered = sorted(steps, key=lambda x: x[1])
    busy = _grid(ev, {GEMM, NCCL, COPY, SYNC})
    comp = _grid(ev, {GEMM})
    comm = _grid(ev, {NCCL})

    def home(t: int) -> int:
        best = -1
        for i, (_, lo, _hi) in enumerate(ordered):
            if lo <= t:
                best = i
        return best if best >= 0 and t < ordered[best][2] else -1

    mine: list[list[tuple[str, int, int]]] = [[] for _ in ordered]
    for e in ev:
        if (i := home(e[1])) >= 0:
            mine[i].append(e)
    rows = []
    end: int | None = None
    for (num, lo, hi), work in zip(ordered, mine, strict=True):
        row = {"step": num, "duration_ns": hi - lo, "gpu_duration_ns": 0, "compute_ns": 0}
        row |= {"exposed_comm_ns": 0, "idle_ns": 0, "work_events": 0}
        if work:
            first = min(s for _, s, _ in work)
            if end is None:
                earlier = [e for _, s, e in ev if s < first]
                g0 = min(first, max([lo, *earlier]))
            else:
                g0 = end
            end = g1 = max([*(e for _, _, e in work), g0])
            row["gpu_duration_ns"] = g1 - g0
            row["compute_ns"] = int(comp[g0:g1].sum())
            row["exposed_comm_ns"] = int((comm & ~comp)[g0:g1].sum())
            row["idle_ns"] = (g1 - g0) - int(busy[g0:g1].sum())
            row["work_events"] = sum(1 for n, _, _ in work if n != SYNC)
        rows.append(row)
    return rows


@settings(max_examples=200, deadline=None)
@given(events, windows)
def test_step_breakdown_equals_a_unit_grid_reference(
    ev: list[tuple[str, int, int]], wins: list[tuple[int, int]]
) -> None:
    steps = [(i, lo, hi) for i, (lo, hi) in enumerate(wins)]
    # two or more steps would close the window: these rows have no host launches
    opts = AnalysisOptions(all_events=len(steps) >= 2)
    s = step_breakdown(build(ev, steps), opts)
    want = _gpu_clock_reference(ev, steps)
    assert s[list(want[0]) if want else ["step"]].to_dict("records") == want
