"""The normalized-set fast paths of analyzers.intervals give exactly the pieces of a unit grid.

A normalized set of positive-length intervals is unique, so the arrays (not only the totals)
of intersect / subtract / clip must equal the runs of the brute-force grid, whether the inputs
come normalized (the ``searchsorted`` paths) or raw.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import intervals as iv

N = 80

raw_sets = st.lists(
    st.tuples(st.integers(0, N - 10), st.integers(0, 6)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=15,
)


def _grid(ivs: list[tuple[int, int]]) -> np.ndarray:
    g = np.zeros(N, dtype=bool)
    for s, e in ivs:
        g[s:e] = True
    return g


def _runs(g: np.ndarray) -> tuple[list[int], list[int]]:
    """Maximal runs of True: the unique normalized form of the set."""
    d = np.diff(np.concatenate([[0], g.astype(np.int8), [0]]))
    return np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()


def _arr(ivs: list[tuple[int, int]]) -> iv.Intervals:
    return np.array([s for s, _ in ivs], np.int64), np.array([e for _, e in ivs], np.int64)


def _lists(x: iv.Intervals) -> tuple[list[int], list[int]]:
    return x[0].tolist(), x[1].tolist()


@settings(max_examples=400, deadline=None)
@given(raw_sets, raw_sets, st.booleans(), st.integers(0, N), st.integers(0, N))
def test_set_operations_return_the_grid_runs_exactly(
    a: list[tuple[int, int]], b: list[tuple[int, int]], normalize: bool, lo: int, hi: int
) -> None:
    ga, gb = _grid(a), _grid(b)
    A, B = _arr(a), _arr(b)
    if normalize:
        A, B = iv.merge(*A), iv.merge(*B)
    assert _lists(iv.intersect(A, B)) == _runs(ga & gb)
    assert _lists(iv.intersect(B, A)) == _runs(ga & gb)
    sub = iv.subtract(A, B)
    if (ga & gb).any():  # with nothing removed, subtract returns merge(a), zero-length kept
        assert _lists(sub) == _runs(ga & ~gb)
    assert iv.total(sub) == int((ga & ~gb).sum())
    window = np.zeros(N, dtype=bool)
    window[lo:hi] = True
    assert _lists(iv.clip(A, lo, hi)) == _runs(ga & window)


def test_step_loop_reuses_a_normalized_activity_set() -> None:
    """The per-step pattern (clip a small set, intersect with a large normalized one, subtract
    the piece taken) gives the brute-force answer for every window."""
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 10_000, 3_000)
    big = iv.merge(starts, starts + rng.integers(1, 5, starts.size))
    small_s = rng.integers(0, 10_000, 200)
    small = iv.merge(small_s, small_s + rng.integers(1, 40, small_s.size))
    grid_big = np.zeros(10_100, dtype=bool)
    for s, e in zip(*big, strict=True):
        grid_big[s:e] = True
    grid_small = np.zeros(10_100, dtype=bool)
    for s, e in zip(*small, strict=True):
        grid_small[s:e] = True
    for lo in range(0, 10_000, 1_000):
        w = iv.clip(small, lo, lo + 1_000)
        took = iv.intersect(w, big)
        left = iv.subtract(w, took)
        inside = np.zeros(10_100, dtype=bool)
        inside[lo : lo + 1_000] = True
        assert iv.total(took) == int((grid_small & grid_big & inside).sum())
        assert iv.total(left) == int((grid_small & ~grid_big & inside).sum())


def test_interval_ending_before_it_starts_takes_the_general_path() -> None:
    """A set with an interval that ends before it starts is not marked normalized; the
    boundary sweep handles it as before."""
    s, e = iv.merge([0, 20], [10, 15])
    assert not isinstance(iv.merge([0, 20], [10, 15]), iv.Normalized)
    assert (s.tolist(), e.tolist()) == ([0, 20], [10, 15])
    assert isinstance(iv.merge([0, 20], [10, 25]), iv.Normalized)
    got = iv.intersect((np.array([0, 20]), np.array([10, 15])), (np.array([5]), np.array([30])))
    assert _lists(got) == ([5], [10])
