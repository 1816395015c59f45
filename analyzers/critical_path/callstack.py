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
    if not len(members):
        return
    keys = np.lexsort((tid[members], pid[members]))
    m = members[keys]
    p, t = pid[m], tid[m]
    cut = np.flatnonzero((p[1:] != p[:-1]) | (t[1:] != t[:-1])) + 1
    for grp in np.split(m, cut):
        yield _walk(ts, end, order, grp)


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
