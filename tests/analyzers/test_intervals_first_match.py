"""The union of normalized sets and the first-match split of analyzers.intervals against their
definitions: ``merge`` of the concatenated intervals, and the part of a set taken by each set
in turn (``intersect`` then ``subtract``, the way the idle attribution first computed it) or a
unit grid.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import intervals as iv

N = 60

raw_sets = st.lists(
    st.tuples(st.integers(0, N - 8), st.integers(0, 7)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


def _arr(ivs: list[tuple[int, int]]) -> iv.Intervals:
    return np.array([s for s, _ in ivs], np.int64), np.array([e for _, e in ivs], np.int64)


def _grid(ivs: list[tuple[int, int]]) -> np.ndarray:
    g = np.zeros(N, dtype=bool)
    for s, e in ivs:
        g[s:e] = True
    return g


@settings(max_examples=500, deadline=None)
@given(raw_sets, raw_sets)
def test_union_of_normalized_sets_is_the_merge_of_both(
    a: list[tuple[int, int]], b: list[tuple[int, int]]
) -> None:
    A, B = iv.merge(*_arr(a)), iv.merge(*_arr(b))
    want = iv.merge(np.concatenate([A[0], B[0]]), np.concatenate([A[1], B[1]]))
    got = iv.union(A, B)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def _taken_in_turn(base: iv.Intervals, sets: list[iv.Intervals], lo: int, hi: int) -> list[int]:
    """The reference: each set takes its part of what is left, in order."""
    rest = iv.merge(*base)
    out = []
    for x in sets:
        took = iv.intersect(rest, x)
        out.append(int(iv.covered_in_windows(took, [lo], [hi])[0]))
        rest = iv.subtract(rest, took)
    return [*out, int(iv.covered_in_windows(rest, [lo], [hi])[0])]


@settings(max_examples=500, deadline=None)
@given(
    raw_sets,
    st.lists(raw_sets, min_size=1, max_size=4),
    st.booleans(),
    st.integers(0, N),
    st.integers(0, N),
)
def test_first_match_gives_each_set_what_is_left_of_the_base(
    base: list[tuple[int, int]],
    sets: list[list[tuple[int, int]]],
    normalize: bool,
    lo: int,
    hi: int,
) -> None:
    arrs = [iv.merge(*_arr(x)) if normalize else _arr(x) for x in sets]
    got = iv.first_match(_arr(base), arrs, [lo], [hi])
    assert [int(x[0]) for x in got] == _taken_in_turn(_arr(base), arrs, lo, hi)
    # and on the unit grid, over the whole line
    left = _grid(base)
    want = []
    for x in sets:
        g = _grid(x)
        want.append(int((left & g).sum()))
        left &= ~g
    whole = iv.first_match(_arr(base), arrs)
    assert [int(x[0]) for x in whole] == [*want, int(left.sum())]


def test_first_match_of_a_set_ending_before_it_starts_takes_parts_in_turn() -> None:
    base = (np.array([0, 50]), np.array([40, 45]))  # [50, 45): not a normalized set
    sets = [(np.array([10]), np.array([20])), (np.array([0]), np.array([100]))]
    got = [int(x[0]) for x in iv.first_match(base, sets, [0], [100])]
    assert got == _taken_in_turn(base, sets, 0, 100)
