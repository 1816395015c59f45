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

import numpy as np

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
    if not len(members):
        return
    keys = np.lexsort((tid[members], pid[members]))
    m = members[keys]
    p, t = pid[m], tid[m]
    cut = np.flatnonzero((p[1:] != p[:-1]) | (t[1:] != t[:-1])) + 1
    for grp in np.split(m, cut):
        yield walk_arrays(ts, end, order, grp)


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
    n = len(grp)
    if not n:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, bool), empty
    ix = np.int32 if 2 * n + 1 < 2**31 else np.int64
    dur = end[grp] - ts[grp]
    is_start = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
    seq = _lexsort_by_time(
        np.concatenate([ts[grp], end[grp]]),
        (np.concatenate([order[grp], -order[grp]]), np.concatenate([-dur, dur]), is_start),
    )
    del dur
    ids = np.concatenate([grp, grp])[seq]
    st = is_start[seq].astype(bool)
    del is_start, seq
    total = np.cumsum(np.where(st, 1, -1).astype(ix), dtype=ix)
    floor = np.minimum.accumulate(total)
    clipped = bool(floor[-1] < 0)  # an end popped an empty stack
    depth = total - np.minimum(floor, 0) if clipped else total
    del total, floor
    pos = np.flatnonzero(st).astype(ix)  # starts in push order = the walk's preorder
    ends = np.flatnonzero(~st).astype(ix)
    node = ids[pos]
    level = depth[pos]  # ≥ 1
    parent_i, popped = _last_pushes(depth, pos, ends)
    par_ev = np.where(parent_i >= 0, node[np.maximum(parent_i, 0)], -1).astype(np.int64)
    if not clipped and (popped >= 0).all() and np.array_equal(node[popped], ids[ends]):
        parent = np.empty(2 * n, np.int64)  # the events nest: the walk is the boundaries
        parent[pos] = par_ev
        parent[ends] = par_ev[popped]
        return ids.astype(np.int64), st, parent
    del ends, popped, depth
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
