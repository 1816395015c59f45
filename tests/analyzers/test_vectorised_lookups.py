"""The vectorised lookups behind the critical path and the call-stack links equal their
brute-force definitions: rows launched inside each step window, dense group codes of key
tuples, and the measured replay reused across callers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.step_graph import _launched_in
from collectors.linking import _group_codes
from tests.support.critical_path_traces import training_run

windows = st.lists(st.tuples(st.integers(-5, 200), st.integers(0, 40)), max_size=8).map(
    lambda ws: sorted((a, a + d) for a, d in ws)
)


@settings(max_examples=300, deadline=None)
@given(windows, st.lists(st.integers(-3, 260), max_size=60))
def test_rows_launched_in_each_window_match_the_scan(
    ws: list[tuple[int, int]], times: list[int]
) -> None:
    lo = np.array([a for a, _ in ws], np.int64)
    hi = np.array([b for _, b in ws], np.int64)
    t = np.array(times, np.int64)
    got = _launched_in(t, lo, hi)
    want = [np.flatnonzero((t >= a) & (t < b)) for a, b in ws]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-2, 5), st.integers(0, 3), st.integers(0, 9)), min_size=1),
    st.integers(1, 3),
)
def test_group_codes_are_the_rank_of_each_key_tuple(
    rows: list[tuple[int, int, int]], n_cols: int
) -> None:
    cols = [np.array([r[i] for r in rows], np.int64) for i in range(n_cols)]
    half = len(rows) // 2
    a = [c[:half] for c in cols]
    b = [c[half:] for c in cols]
    got_a, got_b = _group_codes(a if len(a) > 1 else a[0], b if len(b) > 1 else b[0])
    keys = np.stack(cols, axis=1)
    _, want = np.unique(keys, axis=0, return_inverse=True)
    want = np.asarray(want).reshape(-1)
    assert np.concatenate([got_a, got_b]).tolist() == want.tolist()


def test_measured_replay_is_computed_once_and_read_only() -> None:
    from analyzers.critical_path.simulate import replay, run
    from analyzers.critical_path.step_graph import build_step_graph

    g = build_step_graph(training_run(world=2, steps=3, late_rank=1, delay=50_000))
    first = run(g)
    again = run(g)
    assert first[0] is again[0] and first[1] is again[1]
    assert not first[0].flags.writeable
    from analyzers.critical_path.simulate import anchors

    fresh = replay(len(g.node_time), g.topo, g.pred, g.delay.copy(), anchors(g))
    assert fresh[0].tolist() == first[0].tolist() and fresh[1].tolist() == first[1].tolist()
    assert fresh[0].tolist() == g.node_time.tolist()  # the measured graph replays exactly
