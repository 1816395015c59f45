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
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Intervals = tuple[NDArray[np.int64], NDArray[np.int64]]

_EMPTY = np.empty(0, dtype=np.int64)


def empty() -> Intervals:
    """The empty interval set."""
    return _EMPTY.copy(), _EMPTY.copy()


def merge(starts: ArrayLike, ends: ArrayLike) -> Intervals:
    """Union of the intervals, as sorted disjoint groups ``[min start, max end]``."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return empty()
    order = np.argsort(s, kind="stable")
    s = s[order]
    e = e[order]
    running_end = np.maximum.accumulate(e)
    # a new group starts where start > max end of all earlier intervals
    new_group = np.empty(s.size, dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > running_end[:-1]
    group_start_idx = np.flatnonzero(new_group)
    group_end_idx = np.append(group_start_idx[1:] - 1, s.size - 1)
    return s[group_start_idx], running_end[group_end_idx]


def total(iv: Intervals) -> int:
    """Σ (end − start) of a *normalized* set (use ``total(merge(...))`` otherwise)."""
    s, e = iv
    return int((e - s).sum())


def union(a: Intervals, b: Intervals) -> Intervals:
    """``a ∪ b``, normalized."""
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """``a ∩ b``, normalized (a sweep over both sets' boundaries, as HTA's overlap)."""
    a = merge(*a)
    b = merge(*b)
    if a[0].size == 0 or b[0].size == 0:
        return empty()
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
    a = merge(*a)
    inter = intersect(a, b)
    if inter[0].size == 0:
        return a
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
    s, e = merge(*iv)
    s = np.maximum(s, lo)
    e = np.minimum(e, hi)
    keep = e > s
    return s[keep], e[keep]


def covered_in_windows(iv: Intervals, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.int64]:
    """Length of *iv* inside each window ``[lo[i], hi[i])`` (windows may overlap)."""
    s, e = merge(*iv)
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
