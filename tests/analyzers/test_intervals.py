"""Interval arithmetic against a brute-force reference on a unit-time grid."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import intervals as iv


def _grid(ivs: list[tuple[int, int]], n: int = 64) -> np.ndarray:
    g = np.zeros(n, dtype=bool)
    for s, e in ivs:
        g[s:e] = True
    return g


interval_lists = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 4)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


def _arr(ivs: list[tuple[int, int]]) -> iv.Intervals:
    return np.array([s for s, _ in ivs], np.int64), np.array([e for _, e in ivs], np.int64)


def test_touching_intervals_merge_like_hta() -> None:
    s, e = iv.merge([0, 5, 20, 30], [10, 20, 25, 31])
    assert s.tolist() == [0, 30] and e.tolist() == [25, 31]


def test_contained_interval_does_not_split_group() -> None:
    s, e = iv.merge([0, 2, 12], [10, 3, 13])
    assert s.tolist() == [0, 12] and e.tolist() == [10, 13]


@settings(max_examples=300, deadline=None)
@given(interval_lists, interval_lists)
def test_set_operations_match_brute_force_grid(a: list, b: list) -> None:
    ga, gb = _grid(a), _grid(b)
    A, B = _arr(a), _arr(b)
    assert iv.total(iv.merge(*A)) == int(ga.sum())
    assert iv.total(iv.intersect(A, B)) == int((ga & gb).sum())
    assert iv.total(iv.subtract(A, B)) == int((ga & ~gb).sum())
    assert iv.total(iv.union(A, B)) == int((ga | gb).sum())
    assert iv.total(iv.clip(A, 10, 40)) == int(ga[10:40].sum())
    lo, hi = np.array([0, 5, 17, 33]), np.array([64, 30, 17, 50])
    got = iv.covered_in_windows(A, lo, hi)
    assert got.tolist() == [int(ga[x:y].sum()) for x, y in zip(lo, hi, strict=True)]
