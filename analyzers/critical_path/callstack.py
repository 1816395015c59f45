"""Per-thread call stacks and their depth-first walk, as HTA builds them (hta call_stack).

For each host thread (``(pid, tid)``, threads in sorted order) the events with a positive
duration are ordered by HTA's ``compare_events``, which for positive durations is the key
``(time, end before start, start: longest first then lowest order, end: shortest first then
highest order)``.  A start is pushed under the event on top of the stack (its parent); an end pops
the top of the stack, whichever event that is.  The walk visits a node, then its children in
start order, then leaves it: the sequence of ``(event, entering, parent)`` it yields is what the
graph builders consume.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from collectors.arrays import sorted_unique

Walk = list[tuple[int, bool, int]]
"""(event position, True on enter / False on exit, parent event position or -1)."""


def thread_walks(
    ts: np.ndarray,
    end: np.ndarray,
    order: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    members: np.ndarray,
) -> Iterator[Walk]:
    """The depth-first walk of each thread's call stack over the events *members* (positions;
    each must have ``end > ts``), threads in ``(pid, tid)`` order."""
    for e, entering, parent in thread_walk_arrays(ts, end, order, pid, tid, members):
        yield list(zip(e.tolist(), entering.tolist(), parent.tolist(), strict=True))


def thread_walk_arrays(
    ts: np.ndarray,
    end: np.ndarray,
    order: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    members: np.ndarray,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`thread_walks` as arrays per thread: (event, entering, parent)."""
    for grp in _threads(pid, tid, members):
        yield walk_arrays(ts, end, order, grp)


@dataclass(frozen=True)
class Lane:
    """One thread's walk (:func:`walk_lane`)."""

    event: np.ndarray
    entering: np.ndarray
    """The walk: each boundary's event and whether it enters it."""
    holding: np.ndarray
    """The events that are flagged or hold a flagged event on the walk's stack."""
    asked: np.ndarray
    op: np.ndarray
    """The asked events whose innermost op was found, and that op (-1: none)."""
    at: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    """Where the events nest: the thread's events and, per event, the walk positions of its
    start and of its end."""


def thread_lanes(
    ts: np.ndarray,
    end: np.ndarray,
    order: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    members: np.ndarray,
    flagged: np.ndarray,
    asked: np.ndarray | None = None,
    is_op: np.ndarray | None = None,
) -> Iterator[Lane]:
    """Per thread (as :func:`thread_walk_arrays`), its :class:`Lane` (:func:`walk_lane`):
    *flagged*, *asked* and *is_op* are bools per event position."""
    for grp in _threads(pid, tid, members):
        yield walk_lane(ts, end, order, grp, flagged, asked, is_op)


def _threads(pid: np.ndarray, tid: np.ndarray, members: np.ndarray) -> list[np.ndarray]:
    """*members* split by thread, threads in ``(pid, tid)`` order, each in *members* order:
    the threads numbered by one hash of ``(pid, tid)`` folded into an int64 where that fits
    (a few masks for a few threads, a stable sort of the small codes for more), else one
    lexicographic sort of the pairs."""
    if not len(members):
        return []
    p, t = pid[members], tid[members]
    p_lo, t_lo = int(p.min()), int(t.min())
    width = int(t.max()) - t_lo + 1
    if (int(p.max()) - p_lo + 1) * width >= 2**62:
        keys = np.lexsort((t, p))
        m = members[keys]
        p, t = p[keys], t[keys]
        cut = np.flatnonzero((p[1:] != p[:-1]) | (t[1:] != t[:-1])) + 1
        return np.split(m, cut)
    code, pairs = pd.factorize((p - p_lo) * width + (t - t_lo))
    rank = np.argsort(np.argsort(pairs))  # the pairs' order is their folded keys'
    if len(pairs) <= MASKED_THREADS:
        return [members[code == c] for c in np.argsort(rank).tolist()]
    ordered = rank[code]
    by = np.argsort(ordered.astype(np.int32), kind="stable")
    cut = np.flatnonzero(np.diff(ordered[by])) + 1
    return np.split(members[by], cut)


MASKED_THREADS = 8
"""Up to this many threads, each thread's events are taken by a mask of the events."""


def walk_lane(
    ts: np.ndarray,
    end: np.ndarray,
    order: np.ndarray,
    grp: np.ndarray,
    flagged: np.ndarray,
    asked: np.ndarray | None = None,
    is_op: np.ndarray | None = None,
) -> Lane:
    """The :class:`Lane` of one thread's events *grp*: the walk (as :func:`walk_arrays`,
    without the parents), the events of *grp* that are *flagged* or hold a flagged event on
    the walk's stack (positions, in *grp* order), and for the *asked* events of *grp* (not
    *is_op* themselves) the innermost *is_op* event holding their start, where the events
    nest (:func:`_innermost_ops`).

    When the events nest (:attr:`_Bounds.nested`), the walk is the boundaries' order and an
    event holds exactly the events whose start lies between its own start and end there: a
    running count of the flagged starts gives them, with no parent looked up.  Otherwise the
    parents of :func:`walk_arrays` are climbed from the flagged events."""
    b = _boundaries(ts, end, order, grp)
    none = np.zeros(0, np.int64)
    if b.nested:
        count = np.cumsum(flagged[b.ids] & b.st, dtype=np.int64)
        held = (count[b.end_at] > count[b.start_at]) | flagged[grp]
        found = (none, none)
        if asked is not None and is_op is not None:
            found = _innermost_ops(b, ts, end, grp, asked & ~is_op, is_op)
        return Lane(b.ids, b.st, grp[held], *found, (grp, b.start_at, b.end_at))
    e, entering, parent = _walk_of(b)
    srt = np.sort(grp)
    up = np.full(len(grp), -1, np.int64)  # per event (srt order), its parent's index in srt
    par = parent[entering]
    up[np.searchsorted(srt, e[entering])] = np.where(
        par >= 0, np.searchsorted(srt, np.maximum(par, 0)), -1
    )
    held = np.zeros(len(grp), bool)
    cur = np.flatnonzero(flagged[srt])
    while cur.size:
        held[cur] = True
        cur = sorted_unique(up[cur])
        cur = cur[(cur >= 0) & ~held[np.maximum(cur, 0)]]
    return Lane(e, entering, grp[np.isin(grp, srt[held])], none, none)


def _innermost_ops(
    b: _Bounds,
    ts: np.ndarray,
    end: np.ndarray,
    grp: np.ndarray,
    asked: np.ndarray,
    is_op: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(events, op)``: per *asked* event of *grp* (nested boundaries *b*), the innermost
    *is_op* event holding its start — of the *is_op* events with ``ts <= t < end`` the last
    by (start, end descending, position): :func:`collectors.linking.innermost_range`'s rule
    — or -1, for the asked events where the walk gives it.

    In nested boundaries the ops holding an event's start are its ancestors and those of its
    descendants that start with it; the ancestors nest (a later start, an end no later), so
    the innermost is the last op pushed at the op depth of the event's start (one stable sort
    of the op starts and the queries by op depth).  Left out, for the exact look-up: an event
    whose next boundary starts at its own time (a descendant may start with it), an op whose
    previous boundary starts with it and ends with it (ops of equal ranges, ordered by
    position there, by the walk's order here), an event starting before 0 (unknown)."""
    ids = b.ids
    qi = np.flatnonzero(asked[grp])
    if not len(qi):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ix = np.int32 if len(ids) < 2**31 else np.int64
    p: np.ndarray = b.start_at[qi].astype(ix)
    op = is_op[ids]
    push = op & b.st
    # ops open after each boundary (at most the stack's depth: int16 keys sort by radix)
    lv = np.int16 if int(b.depth.max()) < 2**15 else ix
    level: np.ndarray = np.cumsum(push, dtype=lv)
    level -= np.cumsum(op & ~b.st, dtype=lv)
    entry = np.zeros(len(ids), bool)
    entry[p] = True
    sel = np.flatnonzero(push | entry).astype(ix)
    del entry
    key = level[sel]
    o = np.argsort(key, kind="stable")
    key, sel = key[o], sel[o]
    last = np.where(push[sel], np.arange(len(sel), dtype=ix), ix(-1))
    np.maximum.accumulate(last, out=last)  # per entry, the last push at or before it
    ok = last >= 0
    np.maximum(last, 0, out=last)
    ok &= key[last] == key
    at = np.empty(len(ids), ix)  # each query's answer, by its boundary position
    at[sel] = np.where(ok, sel[last], -1)
    where = at[p]  # the op's start boundary, -1: none
    t = ts[ids[p]]
    nxt = np.minimum(p + 1, len(ids) - 1)
    keep = (t >= 0) & ~((p + 1 < len(ids)) & b.st[nxt] & (ts[ids[nxt]] == t))
    found = where >= 0
    o_ev = ids[np.maximum(where, 0)]
    prev = np.maximum(where - 1, 0)
    same = (where >= 1) & b.st[prev] & (ts[ids[prev]] == ts[o_ev]) & (end[ids[prev]] == end[o_ev])
    keep &= ~(found & same)
    return grp[qi[keep]], np.where(found, o_ev, -1)[keep].astype(np.int64)


def walk_arrays(
    ts: np.ndarray, end: np.ndarray, order: np.ndarray, grp: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The walk of one thread's events *grp* (distinct positions) as arrays, without a Python
    loop: the stack's depth after each boundary is the running sum of +1 (start) / -1 (end)
    reflected at 0 (an end on an empty stack pops nothing); a start pushed at depth *d* sits on
    the last start pushed at depth *d* − 1 (the stack's slot *d* − 1 holds the last push to it,
    whatever ended since); the walk visits the starts in push order (a node's descendants are
    pushed while it is on the stack, before its next sibling) and leaves each node after its
    subtree, deepest first.  When every end pops its own event (the events nest), that walk is
    the boundaries' order itself.  Equal to :func:`_walk` (a property test checks it)."""
    return _walk_of(_boundaries(ts, end, order, grp))


@dataclass(frozen=True)
class _Bounds:
    """One thread's event boundaries in HTA's order (module docstring)."""

    ids: np.ndarray
    """The event of each boundary."""
    st: np.ndarray
    """Whether each boundary is a start."""
    depth: np.ndarray
    """The stack's depth after each boundary."""
    clipped: bool
    """Some end popped an empty stack."""
    start_at: np.ndarray
    end_at: np.ndarray
    """Per event of the group (its order), the positions of its start and its end."""

    @property
    def nested(self) -> bool:
        """Every end pops its own event: no end pops an empty stack, and each event's end
        leaves the stack one below its start's depth (the first return to that depth after
        a start is its own end: were it another event's, the earliest start whose end is
        not its first return would have an earlier one — a contradiction)."""
        return not self.clipped and bool(
            np.array_equal(self.depth[self.end_at], self.depth[self.start_at] - 1)
        )


def _boundaries(ts: np.ndarray, end: np.ndarray, order: np.ndarray, grp: np.ndarray) -> _Bounds:
    """The :class:`_Bounds` of the events *grp* (distinct positions, ``end > ts``)."""
    n = len(grp)
    ix = np.int32 if 2 * n + 1 < 2**31 else np.int64
    if not n:
        empty = np.zeros(0, ix)
        return _Bounds(empty, np.zeros(0, bool), empty, False, empty, empty)
    dur = end[grp] - ts[grp]
    is_start = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
    seq = _lexsort_by_time(
        np.concatenate([ts[grp], end[grp]]),
        (np.concatenate([order[grp], -order[grp]]), np.concatenate([-dur, dur]), is_start),
    )
    del dur
    ids = np.concatenate([grp, grp])[seq]
    st = is_start[seq].astype(bool)
    del is_start
    at = np.empty(2 * n, ix)
    at[seq] = np.arange(2 * n, dtype=ix)
    del seq
    total = np.cumsum(np.where(st, 1, -1).astype(ix), dtype=ix)
    floor = np.minimum.accumulate(total)
    clipped = bool(floor[-1] < 0)  # an end popped an empty stack
    depth = total - np.minimum(floor, 0) if clipped else total
    return _Bounds(ids, st, depth, clipped, at[:n], at[n:])


def _walk_of(b: _Bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`walk_arrays` of the boundaries *b*."""
    ids, st, depth = b.ids, b.st, b.depth
    n = len(ids) // 2
    if not n:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, bool), empty
    ix = np.int32 if 2 * n + 1 < 2**31 else np.int64
    pos = np.flatnonzero(st).astype(ix)  # starts in push order = the walk's preorder
    ends = np.flatnonzero(~st).astype(ix)
    node = ids[pos]
    level = depth[pos]  # ≥ 1
    parent_i, popped = _last_pushes(depth, pos, ends)
    par_ev = np.where(parent_i >= 0, node[np.maximum(parent_i, 0)], -1).astype(np.int64)
    if b.nested:  # the events nest: the walk is the boundaries
        parent = np.empty(2 * n, np.int64)
        parent[pos] = par_ev
        parent[ends] = par_ev[popped]
        return ids.astype(np.int64), st, parent
    del ends, popped
    # subtree sizes, deepest level first
    size = np.ones(n, np.int64)
    for lv in range(int(level.max()), 1, -1):
        kids = np.flatnonzero((level == lv) & (parent_i >= 0))
        np.add.at(size, parent_i[kids], size[kids])
    idx = np.arange(n, dtype=np.int64)
    slot = idx + size  # a node is left just before the preorder node at idx + size
    del size
    tree_depth = np.ones(n, np.int64)
    for lv in range(2, int(level.max()) + 1):
        at_lv = np.flatnonzero(level == lv)
        has = parent_i[at_lv] >= 0
        tree_depth[at_lv[has]] = tree_depth[parent_i[at_lv[has]]] + 1
    # enters at (idx, 1, 0); exits at (slot, 0, -depth): before the next enter, deepest first
    k_pos = np.concatenate([idx, slot])
    k_flag = np.concatenate([np.ones(n, np.int64), np.zeros(n, np.int64)])
    k_depth = np.concatenate([np.zeros(n, np.int64), -tree_depth])
    # one key for (k_pos, k_flag, k_depth) lexicographic: k_depth in [-D, 0], k_flag in {0, 1}
    top = int(tree_depth.max())
    walk = np.argsort((k_pos * 2 + k_flag) * (top + 1) + (k_depth + top), kind="stable")
    which = np.concatenate([idx, idx])[walk]
    entering = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])[walk]
    return node[which].astype(np.int64), entering, par_ev[which]


def _last_pushes(
    depth: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(parent, popped)``: per start (*starts*, boundary positions in push order), the
    index among the starts of the last start pushed one level below it before it (its
    parent on the stack); per end (*ends*), that of the last start pushed at the level it
    pops (the event on top); -1 where none.  *depth*: the stack's depth after each boundary.

    One stable sort by level: each start is a *push* at its level and a query one level
    below, each end a query at its level before the pop; in boundary order, sorted stably by
    level (a radix sort of small ints), a query's answer is the last push before it in its
    level's group."""
    n_s, n_e = len(starts), len(ends)
    ix = np.dtype(np.int32 if n_s + len(depth) < 2**31 else np.int64)
    count = np.ones(len(depth), ix)
    count[starts] = 2  # a start: its query, then its push
    at = np.cumsum(count, dtype=ix) - count  # each boundary's first entry
    del count
    top = int(depth.max(initial=0)) + 2
    key = np.empty(n_s + len(depth), np.int16 if top < 2**15 else np.int64)
    key[at[starts]] = depth[starts] - 1
    key[at[starts] + 1] = depth[starts]
    key[at[ends]] = depth[ends] + 1
    push = np.full(len(key), -1, ix)
    push[at[starts] + 1] = np.arange(n_s, dtype=ix)
    order = np.argsort(key, kind="stable").astype(ix)
    key = key[order]
    push = push[order]
    last = np.where(push >= 0, np.arange(len(key), dtype=ix), ix.type(-1))
    np.maximum.accumulate(last, out=last)  # per entry, the last push at or before it
    ok = last >= 0
    np.maximum(last, 0, out=last)
    ok &= key[last] == key  # in its level's group
    del key
    found = push[last]
    del push, last
    found[~ok] = -1
    answer = np.empty(len(order), ix)
    answer[order] = found
    del order, found
    return answer[at[starts]], answer[at[ends]] if n_e else np.zeros(0, ix)


def _lexsort_by_time(times: np.ndarray, keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort((*keys, times))``: a stable sort by time, then the secondary *keys* (last
    most significant) sorted among the equal times only."""
    seq = np.argsort(times, kind="stable")
    t = times[seq]
    eq = t[1:] == t[:-1]
    if not eq.any():
        return seq
    tie = np.zeros(len(t), bool)
    tie[1:] |= eq
    tie[:-1] |= eq
    at = np.flatnonzero(tie)
    run = np.cumsum(np.r_[True, ~eq][at])  # one id per run of equal times, increasing
    sub = seq[at]
    seq[at] = sub[np.lexsort((*(k[sub] for k in keys), run))]
    return seq


def _walk(ts: np.ndarray, end: np.ndarray, order: np.ndarray, grp: np.ndarray) -> Walk:
    n = len(grp)
    dur = end[grp] - ts[grp]
    times = np.concatenate([ts[grp], end[grp]])
    is_start = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
    d = np.concatenate([-dur, dur])
    o = np.concatenate([order[grp], -order[grp]])
    seq = np.lexsort((o, d, is_start, times))
    idx = np.concatenate([grp, grp])[seq].tolist()
    starts = is_start[seq].tolist()
    children: dict[int, list[int]] = {-1: []}
    parent: dict[int, int] = {}
    stack: list[int] = []
    for e, s in zip(idx, starts, strict=True):
        if s:
            par = stack[-1] if stack else -1
            if e in parent:
                continue
            parent[e] = par
            children.setdefault(par, []).append(e)
            children.setdefault(e, [])
            stack.append(e)
        elif stack:
            stack.pop()
    out: Walk = []
    todo: list[tuple[int, bool]] = [(c, True) for c in reversed(children[-1])]
    while todo:
        e, entering = todo.pop()
        if entering:
            out.append((e, True, parent[e]))
            todo.append((e, False))
            todo.extend((c, True) for c in reversed(children[e]))
        else:
            out.append((e, False, parent[e]))
    return out
