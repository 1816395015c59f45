"""How GPU work is linked to the host: the call that launched it (:func:`launching_calls`, by
correlation id) and the range of a host thread that encloses an instant (:func:`innermost_range`:
the call-stack lookup behind "which CPU op launched this GPU kernel" in collectives, compare's op
view and op cost attribution).

**Launching call.**  The call that launched a GPU row is the host row of a device-API category
(:data:`collectors.model.LAUNCH_CATS`) with the row's correlation id; when several host rows share
an id (never seen in real traces) the one that starts first wins, then the first in table order.
A correlation id < 0 (unknown) has none.

**Enclosing range.**

Ranges are grouped by thread (any key: ``(pid, tid)`` as a pair of arrays, or one array) and
ordered within a group by start, then end *descending* (an outer range before the inner range
that starts with it), then input position.  The *innermost range containing t* is the last range
in that order with ``start ≤ t`` that still runs at ``t``: ``t < end`` (``include_end=False``,
half-open ``[start, end)``) or ``t ≤ end`` (``include_end=True``).  For ranges that nest or are
disjoint, as a thread's call stack does, that is the deepest enclosing range; for overlapping
ranges it is the latest-starting one that contains ``t``.

Vectorised: one sort and an O(log n) walk of a max-segment tree over the ends per query, no
Python loop over rows.  Times are integers (ns).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from collectors.arrays import dense_codes
from collectors.model import LAUNCH_CATS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["enclosing_parents", "innermost_range", "launch_mask", "launching_calls"]


def launch_mask(host: pd.DataFrame) -> np.ndarray:
    """Host rows that may launch GPU work: a :data:`~collectors.model.LAUNCH_CATS` call with a
    correlation id."""
    is_launch = np.asarray(host["cat"].isin(LAUNCH_CATS), dtype=bool)
    return is_launch & (host["correlation"].to_numpy() >= 0)


def launching_calls(host: pd.DataFrame, correlation: np.ndarray) -> np.ndarray:
    """Position (row of *host*) of the call that launched the GPU work with each id of
    *correlation* (module docstring), or -1."""
    corr = np.asarray(correlation, dtype=np.int64)
    out = np.full(len(corr), -1, dtype=np.int64)
    rows = np.flatnonzero(launch_mask(host))
    if not len(rows) or not len(corr):
        return out
    ids = host["correlation"].to_numpy()[rows].astype(np.int64)
    start = host["start_ns"].to_numpy()[rows]
    order = np.lexsort((rows, start, ids))  # by id, then start, then table order
    ids, rows = ids[order], rows[order]
    first = np.r_[True, ids[1:] != ids[:-1]]
    ids, rows = ids[first], rows[first]
    at = np.minimum(np.searchsorted(ids, corr), len(ids) - 1)
    hit = (ids[at] == corr) & (corr >= 0)
    out[hit] = rows[at[hit]]
    return out


_Keys = np.ndarray | Sequence[np.ndarray]


def _columns(keys: _Keys) -> list[np.ndarray]:
    if isinstance(keys, np.ndarray) and keys.ndim == 1:
        return [keys]
    return [np.asarray(k) for k in keys]


def group_codes(groups: _Keys, t_groups: _Keys | None) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes for the group keys of ranges and queries (one code space)."""
    a = _columns(groups)
    n = len(a[0])
    if t_groups is None:
        cols = a
    else:
        b = _columns(t_groups)
        if len(a) != len(b):
            raise ValueError("groups and t_groups must have the same number of key columns")
        cols = [np.concatenate([x, y]) for x, y in zip(a, b, strict=True)]
    if not len(cols[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # the rank of each key tuple in lexicographic order: column by column, each column's
    # dense codes folded into one integer (the same codes as a row-wise np.unique, faster)
    inv = dense_codes(cols[0])
    for col in cols[1:]:
        c = dense_codes(col)
        inv = dense_codes(inv * (int(c.max()) + 1) + c)
    return inv[:n], inv[n:]


class _Composite:
    """(group code, time) as one int64, ``code · span + (t − lo)``, ordered as the pairs."""

    def __init__(self, lo: int, span: int) -> None:
        self.lo, self.span = lo, span

    def key(self, codes: np.ndarray, t: np.ndarray) -> np.ndarray:
        return codes.astype(np.int64) * self.span + (t - self.lo)


def _composite(codes: np.ndarray, starts: np.ndarray, *more: np.ndarray) -> _Composite | None:
    """The composite keys of the ranges' (code, start) and of the instants *more*, or None
    when ``code · span`` could overflow int64 (then pairs are sorted as pairs)."""
    if not len(starts):
        return None
    lo = min([int(starts.min()), *(int(m.min()) for m in more if len(m))])
    hi = max([int(starts.max()), *(int(m.max()) for m in more if len(m))])
    span = hi - lo + 1
    if (int(codes.max(initial=0)) + 1) * span >= 2**62:
        return None
    return _Composite(lo, span)


def _order(
    keys: _Composite | None, starts: np.ndarray, ends: np.ndarray, codes: np.ndarray
) -> np.ndarray:
    """``np.lexsort((arange(n), -ends, starts, codes))``: a stable sort by the small group
    codes (radix for int16), then a stable sort of the composite keys (nearly sorted after it:
    each group's starts are mostly in table order), then the runs of equal (code, start)
    ordered by end descending and position."""
    n = len(starts)
    if keys is None:
        return np.lexsort((np.arange(n), -ends, starts, codes))
    small = codes.astype(np.int16) if int(codes.max(initial=0)) < 2**15 else codes
    o = np.argsort(small, kind="stable")
    k = keys.key(codes, starts)
    o = o[np.argsort(k[o], kind="stable")]
    ks = k[o]
    tie = np.flatnonzero(ks[1:] == ks[:-1])
    if tie.size:
        in_run = np.zeros(n, dtype=bool)
        in_run[tie] = True
        in_run[tie + 1] = True
        at = np.flatnonzero(in_run)
        new_run = np.ones(at.size, dtype=bool)
        new_run[1:] = (at[1:] != at[:-1] + 1) | (ks[at[1:]] != ks[at[:-1]])
        run = np.cumsum(new_run)
        sub = o[at]
        o[at] = sub[np.lexsort((sub, -ends[sub], run))]
    return o


class _Sorted:
    """Ranges in (group, start, −end, position) order with a max-segment tree over the ends."""

    def __init__(
        self, starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, t: np.ndarray | None = None
    ) -> None:
        n = len(starts)
        self._k = _composite(codes, starts, *(() if t is None else (t,)))
        self.order = _order(self._k, starts, ends, codes)
        self.codes = codes[self.order]
        self.starts = starts[self.order]
        self.keys = None if self._k is None else self._k.key(self.codes, self.starts)
        size = 1
        while size < n:
            size *= 2
        self.size = size
        tree = np.full(2 * size, np.iinfo(np.int64).min, dtype=np.int64)
        tree[size : size + n] = ends[self.order]
        half = size // 2
        while half >= 1:
            tree[half : 2 * half] = np.maximum(
                tree[2 * half : 4 * half : 2], tree[2 * half + 1 : 4 * half : 2]
            )
            half //= 2
        self.tree = tree

    def key_of(self, codes: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The composite keys of instants (only when :attr:`keys` is not None)."""
        assert self._k is not None
        return self._k.key(codes, t)

    def group_lo(self, codes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.codes, codes, side="left")

    def last_above(self, hi: np.ndarray, lo: np.ndarray, thr: np.ndarray) -> np.ndarray:
        """Per query, the largest sorted position k in [lo, hi] with end[k] > thr, else -1."""
        out = np.full(len(hi), -1, dtype=np.int64)
        live = np.flatnonzero(hi >= lo)
        if not live.size:
            return out
        tree, size = self.tree, self.size
        v = hi[live] + size
        th = thr[live]
        # up: from the leaf, find the nearest left sibling subtree holding an end above thr
        done = tree[v] > th
        up = ~done
        while up.any():
            j = np.flatnonzero(up)
            vj = v[j]
            left_hit = (vj & 1).astype(bool) & (tree[vj - 1] > th[j])
            v[j[left_hit]] = vj[left_hit] - 1
            done[j[left_hit]] = True
            move = j[~left_hit]
            v[move] = v[move] >> 1
            up[j[left_hit]] = False
            up[move[v[move] <= 1]] = False
        # down: the rightmost leaf above thr in the found subtree
        down = done & (v < size)
        while down.any():
            j = np.flatnonzero(down)
            right = 2 * v[j] + 1
            go_right = tree[right] > th[j]
            v[j] = np.where(go_right, right, right - 1)
            down[j] = v[j] < size
        k = v - size
        ok = done & (k >= lo[live])
        out[live[ok]] = k[ok]
        return out


def innermost_range(
    starts: np.ndarray,
    ends: np.ndarray,
    groups: _Keys,
    t: np.ndarray,
    t_groups: _Keys,
    *,
    include_end: bool = False,
) -> np.ndarray:
    """Position (in *starts*/*ends*) of the innermost range of the same group containing each
    instant of *t* (module docstring), or -1; an instant ``t < 0`` (unknown) gets -1.

    *groups* / *t_groups*: the group key of each range / instant, one array or a sequence of
    arrays (e.g. ``(pid, tid)``) compared column by column.
    """
    t = np.asarray(t, dtype=np.int64)
    out = np.full(len(t), -1, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    if not len(starts) or not len(t):
        return out
    ends = np.asarray(ends, dtype=np.int64)
    codes, t_codes = group_codes(groups, t_groups)
    q = np.flatnonzero(t >= 0)
    s = _Sorted(starts, ends, codes, t[q])
    if not q.size:
        return out
    # how many ranges sort at or before (group, t): ranges first on ties
    n = len(starts)
    if s.keys is not None:
        hi = np.searchsorted(s.keys, s.key_of(t_codes[q], t[q]), side="right") - 1
    else:
        all_codes = np.concatenate([s.codes, t_codes[q]])
        all_t = np.concatenate([s.starts, t[q]])
        is_q = np.concatenate([np.zeros(n, np.int8), np.ones(q.size, np.int8)])
        merged = np.lexsort((is_q, all_t, all_codes))
        before = np.cumsum(is_q[merged] == 0)
        hi = np.empty(q.size, dtype=np.int64)
        hi[merged[is_q[merged] == 1] - n] = before[is_q[merged] == 1] - 1
    thr = t[q] - 1 if include_end else t[q]
    k = s.last_above(hi, s.group_lo(t_codes[q]), thr)
    out[q[k >= 0]] = s.order[k[k >= 0]]
    return out


def enclosing_parents(
    starts: np.ndarray, ends: np.ndarray, groups: _Keys, *, include_end: bool = False
) -> np.ndarray:
    """Position of each range's parent, or -1: the last range *before it* in the group order
    (module docstring) that runs at its start (``start < end``, or ``≤`` with *include_end*)."""
    starts = np.asarray(starts, dtype=np.int64)
    n = len(starts)
    out = np.full(n, -1, dtype=np.int64)
    if not n:
        return out
    ends = np.asarray(ends, dtype=np.int64)
    codes, _ = group_codes(groups, None)
    s = _Sorted(starts, ends, codes)
    rank = np.arange(n, dtype=np.int64)
    thr = s.starts - 1 if include_end else s.starts
    lo = s.group_lo(s.codes)
    # the previous range in the order, when it runs at the start, is the last one that does
    # (a first child's parent): only the others walk the tree
    ends_sorted = s.tree[s.size : s.size + n]
    k = np.full(n, -1, dtype=np.int64)
    prev = np.zeros(n, dtype=bool)
    prev[1:] = (rank[1:] - 1 >= lo[1:]) & (ends_sorted[:-1] > thr[1:])
    k[prev] = rank[prev] - 1
    rest = np.flatnonzero(~prev)
    k[rest] = s.last_above(rest - 1, lo[rest], thr[rest])
    out[s.order[k >= 0]] = s.order[k[k >= 0]]
    return out
