"""collectors.linking: innermost enclosing range per thread, and range parents."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.linking import enclosing_parents, innermost_range


def _brute(starts, ends, groups, t, t_groups, include_end):
    out = []
    for tj, gj in zip(t, t_groups, strict=True):
        cands = [
            (s, -e, i)
            for i, (s, e, g) in enumerate(zip(starts, ends, groups, strict=True))
            if tj >= 0 and g == gj and s <= tj and (e >= tj if include_end else e > tj)
        ]
        out.append(max(cands)[2] if cands else -1)
    return out


def _brute_parents(starts, ends, groups, include_end):
    key = [(g, s, -e, i) for i, (s, e, g) in enumerate(zip(starts, ends, groups, strict=True))]
    out = []
    for i in range(len(starts)):
        cands = [
            key[j]
            for j in range(len(starts))
            if key[j][0] == key[i][0]
            and key[j] < key[i]
            and (ends[j] >= starts[i] if include_end else ends[j] > starts[i])
        ]
        out.append(max(cands)[3] if cands else -1)
    return out


def test_hand_computed_call_stack():
    # thread 1: A [0,100) ⊃ B [10,40) ⊃ C [20,30); D [50,60) inside A; thread 2: E [0,100)
    starts = np.array([0, 10, 20, 50, 0])
    ends = np.array([100, 40, 30, 60, 100])
    pid = np.array([7, 7, 7, 7, 7])
    tid = np.array([1, 1, 1, 1, 2])
    t = np.array([25, 35, 45, 55, 100, 5, -1, 30])
    tp = np.full(8, 7)
    tt = np.array([1, 1, 1, 1, 1, 2, 1, 1])
    got = innermost_range(starts, ends, (pid, tid), t, (tp, tt))
    assert got.tolist() == [2, 1, 0, 3, -1, 4, -1, 1]
    # inclusive end: t = 30 is still inside C, t = 100 inside A
    got = innermost_range(starts, ends, (pid, tid), t, (tp, tt), include_end=True)
    assert got.tolist() == [2, 1, 0, 3, 0, 4, -1, 2]
    assert enclosing_parents(starts, ends, (pid, tid)).tolist() == [-1, 0, 1, 0, -1]


def test_equal_ranges_last_position_is_innermost():
    starts, ends = np.array([0, 0, 0]), np.array([10, 10, 5])
    g = np.zeros(3, np.int64)
    assert innermost_range(starts, ends, g, np.array([0, 7]), np.zeros(2, np.int64)).tolist() == [
        2,
        1,
    ]
    assert enclosing_parents(starts, ends, g).tolist() == [-1, 0, 1]


def test_empty_inputs():
    e = np.zeros(0, np.int64)
    assert innermost_range(e, e, e, np.array([1]), np.array([0])).tolist() == [-1]
    assert innermost_range(np.array([0]), np.array([5]), np.array([0]), e, e).tolist() == []
    assert enclosing_parents(e, e, e).tolist() == []


_ranges = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 25), st.integers(0, 2)), max_size=30
)


@settings(max_examples=300, deadline=None)
@given(
    _ranges, st.lists(st.tuples(st.integers(-2, 70), st.integers(0, 3)), max_size=20), st.booleans()
)
def test_innermost_matches_brute_force(ranges, queries, include_end):
    starts = np.array([s for s, _, _ in ranges], np.int64)
    ends = np.array([s + d for s, d, _ in ranges], np.int64)
    groups = np.array([g for _, _, g in ranges], np.int64)
    t = np.array([q for q, _ in queries], np.int64)
    tg = np.array([g for _, g in queries], np.int64)
    got = innermost_range(starts, ends, groups, t, tg, include_end=include_end)
    assert got.tolist() == _brute(starts, ends, groups, t, tg, include_end)


@settings(max_examples=300, deadline=None)
@given(_ranges, st.booleans())
def test_parents_match_brute_force(ranges, include_end):
    starts = np.array([s for s, _, _ in ranges], np.int64)
    ends = np.array([s + d for s, d, _ in ranges], np.int64)
    groups = np.array([g for _, _, g in ranges], np.int64)
    got = enclosing_parents(starts, ends, groups, include_end=include_end)
    assert got.tolist() == _brute_parents(starts, ends, groups, include_end)


@settings(max_examples=100, deadline=None)
@given(_ranges, st.lists(st.tuples(st.integers(-2, 70), st.integers(0, 3)), max_size=20))
def test_times_too_wide_for_one_int64_key_match_brute_force(ranges, queries):
    """Times spread over 2**62 ns: (group, time) no longer fits one int64 key, the pairs are
    sorted as pairs (the fallback of the composite keys)."""
    scale = 2**56
    starts = np.array([s * scale for s, _, _ in ranges], np.int64)
    ends = np.array([(s + d) * scale for s, d, _ in ranges], np.int64)
    groups = np.array([g for _, _, g in ranges], np.int64)
    t = np.array([q * scale if q >= 0 else q for q, _ in queries], np.int64)
    tg = np.array([g for _, g in queries], np.int64)
    got = innermost_range(starts, ends, groups, t, tg)
    assert got.tolist() == _brute(starts, ends, groups, t, tg, False)
    got = enclosing_parents(starts, ends, groups)
    assert got.tolist() == _brute_parents(starts, ends, groups, False)
