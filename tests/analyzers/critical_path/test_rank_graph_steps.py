"""A rank's graph part built the short way equals it built the long way: the GPU rows a step
completes found by one sorted search where steps do not overlap (:func:`rank_graph.step_of`)
and the per-step scan over every row, which the part keeps for overlapping steps; lanes
numbered from the walk's positions of each event and boundary by boundary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path import rank_graph as rg
from collectors.load import load_traces
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES


@settings(max_examples=800, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(1, 8)), max_size=8),
    st.lists(st.integers(-2, 80), max_size=30),
)
def test_step_of_equals_the_scan_of_every_step(steps, times) -> None:
    starts, ends, t0 = [], [], 0
    for gap, length in steps:  # back to back (gap 0) or apart
        starts.append(t0 + gap)
        ends.append(t0 + gap + length)
        t0 = t0 + gap + length - (1 if gap == 6 else 0)  # after gap 6, one ns of overlap
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    t = np.array(times, np.int64)
    holders = [[i for i in range(len(s)) if s[i] <= x < e[i]] for x in times]
    got = rg.step_of(s, e, t)
    if any(e[i] > s[i + 1] for i in range(len(s) - 1)):
        assert got is None
        return
    assert got is not None
    assert got.tolist() == [h[0] if h else -1 for h in holders]


RUNS = [
    ("launch gaps", lambda: training_run(n_small=40, small_host=20_000)),
    ("late rank", lambda: training_run(late_rank=1, delay=150_000)),
    ("synthetic_2rank", lambda: load_traces([SAMPLES / "synthetic_2rank"])),
    ("torch_cpu", lambda: load_traces([SAMPLES / "torch_cpu"])),
]


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_completions_by_search_equal_the_scan_over_rows(label, traces, monkeypatch) -> None:
    ts = traces()
    got = [rg.rank_graph(t, False) for t in ts]
    monkeypatch.setattr(rg, "step_of", lambda *a: None)  # the per-step scan
    want = [rg.rank_graph(t, False) for t in ts]
    for a, b in zip(got, want, strict=True):
        assert len(a.step_done)
        for f in ("node_time", "src", "dst", "kind", "step_done", "step_start"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_lanes_numbered_from_walk_positions_equal_those_from_the_walk(
    label, traces, monkeypatch
) -> None:
    """Nodes numbered from each event's start and end positions in a nested walk equal
    those numbered by reading the walk boundary by boundary."""
    ts = traces()
    got = [rg.rank_graph(t, False) for t in ts]
    plain = rg._Builder.lane
    monkeypatch.setattr(
        rg._Builder, "lane", lambda self, e, entering, at=None: plain(self, e, entering)
    )
    want = [rg.rank_graph(t, False) for t in ts]
    for a, b in zip(got, want, strict=True):
        for f in ("node_time", "src", "dst", "kind", "step_done", "step_start", "cause_code"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
