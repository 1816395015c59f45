"""Interval arithmetic on integer-nanosecond intervals, vectorized with numpy.

An interval set is a pair of int64 arrays ``(starts, ends)``.  :func:`merge` returns the
*normalized* form (sorted, disjoint, non-touching); every other function accepts any set and
returns a normalized one.  Merging follows HTA (metrics.md §4): sort by start; an interval
starts a new group when its start is **greater than** the maximum end seen so far, so touching
intervals (``start == previous end``) merge.

    ======================  ==========================================
    input (start, end)      merge(...)
    ======================  ==========================================
    (0,10) (5,20) (20,25)   (0,25)
    (0,10) (11,12)          (0,10) (11,12)
    ======================  ==========================================

Every function returns a :class:`Normalized` set (a tuple of the two arrays that remembers it
is normalized) unless an interval ends before it starts.  Given normalized sets, the set
operations skip re-sorting and cost O((n + m) log) through ``searchsorted`` instead of a sort
of every boundary, so a loop over steps that intersects a small set with a large one (the
host activity of a whole trace) does not sort the large one again each time.  Results are the
same arrays either way: a normalized set of positive-length intervals is unique.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from collectors.arrays import sort_runs

Intervals = tuple[NDArray[np.int64], NDArray[np.int64]]


class Normalized(tuple[NDArray[np.int64], NDArray[np.int64]]):
    """A normalized interval set ``(starts, ends)``: sorted, disjoint, non-touching, every
    end >= its start (what :func:`merge` returns).  It is a plain tuple of the two arrays; the
    type only lets the set operations skip normalizing it again.  Do not modify its arrays in
    place."""

    __slots__ = ()


def _normalized(s: NDArray[np.int64], e: NDArray[np.int64]) -> Intervals:
    return Normalized((s, e))


def _is_normalized(iv: Intervals) -> bool:
    return isinstance(iv, Normalized)


def empty() -> Intervals:
    """The empty interval set."""
    return _normalized(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def merge(starts: ArrayLike, ends: ArrayLike) -> Intervals:
    """Union of the intervals, as sorted disjoint groups ``[min start, max end]``."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return empty()
    if s.size > 1 and not bool((s[1:] >= s[:-1]).all()):  # sorted already: the sort is a no-op
        order = np.argsort(s, kind="stable")
        s = s[order]
        e = e[order]
    running_end = np.maximum.accumulate(e)
    # a new group starts where start > max end of all earlier intervals
    new_group = np.empty(s.size, dtype=bool)
    new_group[0] = True
    np.greater(s[1:], running_end[:-1], out=new_group[1:])
    group_start_idx = np.flatnonzero(new_group)
    group_end_idx = np.append(group_start_idx[1:] - 1, s.size - 1)
    gs, ge = s[group_start_idx], running_end[group_end_idx]
    if bool((ge >= gs).all()):
        return _normalized(gs, ge)
    return gs, ge  # an interval that ends before it starts: no fast paths for this set


def _norm(iv: Intervals) -> Intervals:
    return iv if _is_normalized(iv) else merge(*iv)


def total(iv: Intervals) -> int:
    """Σ (end − start) of a *normalized* set (use ``total(merge(...))`` otherwise)."""
    s, e = iv
    return int((e - s).sum())


def union(a: Intervals, b: Intervals) -> Intervals:
    """``a ∪ b``, normalized."""
    if _is_normalized(a) and _is_normalized(b):
        if not b[0].size:
            return a
        if not a[0].size:
            return b
        return _union_of_sorted(
            sort_runs(np.concatenate([a[0], b[0]])), sort_runs(np.concatenate([a[1], b[1]]))
        )
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def _union_of_sorted(starts: NDArray[np.int64], ends: NDArray[np.int64]) -> Intervals:
    """:func:`merge` of intervals (each ending at or after its start) given only their sorted
    starts and their sorted ends: the i-th start opens a new group exactly when it is greater
    than the i-th smallest end (then the i intervals before it are the ones that end first,
    and that end is the running maximum :func:`merge` compares with)."""
    n = starts.size
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    np.greater(starts[1:], ends[:-1], out=new_group[1:])
    first = np.flatnonzero(new_group)
    return _normalized(starts[first], ends[np.append(first[1:] - 1, n - 1)])


def _pairs_intersection(a: Intervals, b: Intervals) -> Intervals:
    """``a ∩ b`` of two normalized sets: the overlap of every overlapping pair (i, j), found
    with ``searchsorted``; the pieces come out sorted, disjoint and non-touching."""
    (a_s, a_e), (b_s, b_e) = a, b
    first = np.searchsorted(b_e, a_s, side="right")  # first b group ending after a starts
    stop = np.searchsorted(b_s, a_e, side="left")  # b groups starting before a ends
    n = np.maximum(stop - first, 0)
    count = int(n.sum())
    if count == 0:
        return empty()
    ai = np.repeat(np.arange(a_s.size), n)
    bj = first[ai] + (np.arange(count) - np.repeat(np.cumsum(n) - n, n))
    s = np.maximum(a_s[ai], b_s[bj])
    e = np.minimum(a_e[ai], b_e[bj])
    keep = e > s
    return _normalized(s[keep], e[keep])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """``a ∩ b``, normalized (a sweep over both sets' boundaries, as HTA's overlap)."""
    a = _norm(a)
    b = _norm(b)
    if a[0].size == 0 or b[0].size == 0:
        return empty()
    if _is_normalized(a) and _is_normalized(b):
        return _pairs_intersection(a, b)
    # boundaries: +1 at a start, -1 at a end, same for b; both active where depth == 2
    times = np.concatenate([a[0], a[1], b[0], b[1]])
    delta = np.concatenate(
        [
            np.ones(a[0].size, np.int64),
            -np.ones(a[1].size, np.int64),
            np.ones(b[0].size, np.int64),
            -np.ones(b[1].size, np.int64),
        ]
    )
    # at equal times apply ends before starts so touching intervals do not count as overlap
    order = np.lexsort((delta, times))
    times = times[order]
    depth = np.cumsum(delta[order])
    both = depth == 2
    seg_start = times[:-1][both[:-1]]
    seg_end = times[1:][both[:-1]]
    keep = seg_end > seg_start
    return merge(seg_start[keep], seg_end[keep])


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """``a \\ b`` (time in *a* not covered by *b*), normalized."""
    a = _norm(a)
    inter = intersect(a, b)
    if inter[0].size == 0:
        return a
    if _is_normalized(a) and _is_normalized(inter):
        # inter ⊆ a: each a group minus the pieces inside it; the starts (a starts, piece
        # ends) and the ends (piece starts, a ends) pair up in sorted order
        s = sort_runs(np.concatenate([a[0], inter[1]]))
        e = sort_runs(np.concatenate([inter[0], a[1]]))
        keep = e > s
        return _normalized(s[keep], e[keep])
    # complement of the intersection within each a-group
    times = np.concatenate([a[0], a[1], inter[0], inter[1]])
    delta = np.concatenate(
        [
            np.ones(a[0].size, np.int64),
            -np.ones(a[1].size, np.int64),
            -np.ones(inter[0].size, np.int64),
            np.ones(inter[1].size, np.int64),
        ]
    )
    order = np.lexsort((delta, times))
    times = times[order]
    depth = np.cumsum(delta[order])
    on = depth == 1
    seg_start = times[:-1][on[:-1]]
    seg_end = times[1:][on[:-1]]
    keep = seg_end > seg_start
    return merge(seg_start[keep], seg_end[keep])


def clip(iv: Intervals, lo: int, hi: int) -> Intervals:
    """The part of the set inside ``[lo, hi)``, normalized."""
    n = _norm(iv)
    s, e = n
    if _is_normalized(n) and s.size:  # only the groups that reach into [lo, hi)
        i = int(np.searchsorted(e, lo, side="right"))
        j = int(np.searchsorted(s, hi, side="left"))
        s, e = s[i:j], e[i:j]
    s = np.maximum(s, lo)
    e = np.minimum(e, hi)
    keep = e > s
    return _normalized(s[keep], e[keep])


def covered_in_windows(iv: Intervals, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.int64]:
    """Length of *iv* inside each window ``[lo[i], hi[i])`` (windows may overlap)."""
    s, e = _norm(iv)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if s.size == 0:
        return np.zeros(lo.size, dtype=np.int64)
    # prefix sums of covered length let each window be answered in O(log n)
    cum = np.concatenate([[0], np.cumsum(e - s)])

    def covered_before(t: NDArray[np.int64]) -> NDArray[np.int64]:
        # number of groups starting before t, and the part of the last one before t
        k = np.searchsorted(s, t, side="right")
        full = cum[np.maximum(k - 1, 0)]
        last_s = s[np.maximum(k - 1, 0)]
        last_e = e[np.maximum(k - 1, 0)]
        partial = np.clip(np.minimum(t, last_e) - last_s, 0, None)
        return np.where(k > 0, full + partial, 0)

    return covered_before(hi) - covered_before(lo)


def prefix_unions(sets: Sequence[Intervals]) -> list[Intervals] | None:
    """``U_k = S_1 ∪ … ∪ S_k`` for every k (normalized), None when a set is not normalized
    (an interval ending before it starts): what :func:`first_match` needs of the sets alone."""
    normal = [_norm(x) for x in sets]
    if not all(_is_normalized(x) for x in normal):
        return None
    out, acc = [], empty()
    for x in normal:
        acc = union(acc, x) if x[0].size else acc
        out.append(acc)
    return out


def first_match(
    base: Intervals,
    sets: Sequence[Intervals],
    lo: ArrayLike | None = None,
    hi: ArrayLike | None = None,
    unions: list[Intervals] | None = None,
) -> list[NDArray[np.int64]]:
    """Split *base* over *sets* in priority order: entry k is ``|base ∩ S_k \\ (S_1 ∪ … ∪
    S_(k−1))|`` and one last entry the rest of *base*, each as the length inside every window
    ``[lo[i], hi[i])`` (windows may overlap), or as one value (the whole line) without windows.

    With ``U_k = S_1 ∪ … ∪ S_k``, entry k is ``|base ∩ U_k| − |base ∩ U_(k−1)|`` and
    ``|base ∩ U ∩ W| = |base ∩ W| + |U ∩ W| − |(base ∪ U) ∩ W|``: two running unions, no
    intersection or difference of sets (the same lengths as taking each set's part out of
    the rest in turn, which sets that are not normalized still get).  *unions*: the sets'
    :func:`prefix_unions`, when the caller keeps them."""
    base = merge(*base)
    normal = [_norm(x) for x in sets]

    def cov(x: Intervals) -> NDArray[np.int64]:
        if lo is None or hi is None:
            return np.array([total(x)], dtype=np.int64)
        return covered_in_windows(x, lo, hi)

    out: list[NDArray[np.int64]] = []
    unions = unions if unions is not None else prefix_unions(normal)
    if unions is None or not _is_normalized(base):
        for x in sets:
            took = intersect(base, x)
            out.append(cov(took))
            base = subtract(base, took)
        return [*out, cov(base)]
    base_cov = cov(base)
    with_base = base
    taken = np.zeros_like(base_cov)
    for x, union_k in zip(normal, unions, strict=True):
        if x[0].size:
            with_base = union(with_base, x)
        now = base_cov + cov(union_k) - cov(with_base)
        out.append(now - taken)
        taken = now
    return [*out, base_cov - taken]


def union_length_by_group(
    codes: NDArray[np.int64],
    n_groups: int,
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    keep: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """``total(merge(...))`` of the kept intervals of each group (codes 0 … n_groups − 1),
    every interval ending at or after its start: from the starts and the ends sorted per group
    (the rule of :func:`_union_of_sorted`), one pass for all groups."""
    out = np.zeros(n_groups, dtype=np.int64)
    c, s, e = codes[keep], starts[keep], ends[keep]
    if not c.size:
        return out
    by_s, by_e = np.lexsort((s, c)), np.lexsort((e, c))
    c, s, e = c[by_s], s[by_s], e[by_e]
    first = np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (s[1:] > e[:-1])])
    np.add.at(out, c[first], e[np.r_[first[1:] - 1, c.size - 1]] - s[first])
    return out
