"""The simulator's max-plus replay of a graph: ``t[v] = max(anchor[v], max over in-edges e=(u, v)
of t[u] + delay[e])`` (``anchor`` = :data:`~analyzers.critical_path.paths.NO_ANCHOR` for nodes
that only follow their predecessors).

Chains are compressed: a node with one in-edge and no anchor (most nodes: a host op's
boundaries, a kernel's end) is ``t[u] + delay`` of its one predecessor, so it is its chain
root's time plus the sum of the delays from that root (:func:`chain_roots`), and the pass in
topological order visits only the other nodes (*hubs*), their in-edges taken from the roots of
their sources.  What does not depend on the delays — the chains, their runs and roots, the hubs
and their in-edges — is a :class:`ReplayPlan`, made once per graph and anchors and used by
every what-if's replay (:func:`replay_plan`, :func:`replay_with`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analyzers.critical_path.paths import NO_ANCHOR
from analyzers.critical_path.scan import ScanPlan, hub_times, scan_plan


@dataclass(frozen=True)
class _Runs:
    """The chains of the simple nodes cut into runs (:func:`chain_roots`), delays aside."""

    node: np.ndarray
    """The simple nodes, in the order the runs are cut along."""
    run: np.ndarray
    """Per entry of :attr:`node`, its run (runs numbered in the order of their heads)."""
    head: np.ndarray
    """Per run, the index in :attr:`node` of its head."""
    hang: np.ndarray
    hang_at: np.ndarray
    """The runs whose head hangs from a simple node, and that node's index in :attr:`node`."""
    jumps: tuple[tuple[np.ndarray, np.ndarray], ...]
    """The pointer-jumping passes over the runs: ``(live, above)`` per pass."""
    root: np.ndarray
    """Per run, its chain's root (a node that is not simple)."""


def _runs(n: int, order: np.ndarray | None, simple: np.ndarray, parent: np.ndarray) -> _Runs:
    """The runs of :func:`chain_roots` (its docstring), by node id when *order* is None."""
    ix = np.int32 if n < 2**31 else np.int64
    if order is None:  # by id: positions are ids
        at = np.flatnonzero(simple).astype(ix)
        node = at
        pos: np.ndarray | None = None
    else:
        order = np.asarray(order, np.int64)
        at = np.flatnonzero(simple[order])  # positions of the simple nodes
        node = order[at]
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)
    par = np.asarray(parent)[node]
    ppos = par if pos is None else pos[par]
    cont = (ppos == at - 1) & simple[par]  # continues the run of its parent
    head = np.flatnonzero(~cont).astype(ix)
    run = (np.cumsum(~cont, dtype=ix) - 1).astype(ix)  # per simple node, runs by their heads
    # each run hangs from its head's parent: a root (not simple), or a node of an earlier run
    hp = par[head]
    hang = np.flatnonzero(simple[hp])
    hang_at = np.searchsorted(at, hp[hang] if pos is None else pos[hp[hang]])
    run_up = np.full(len(head), -1, np.int64)
    run_up[hang] = run[hang_at]
    run_root = hp.copy()
    jumps = []
    live = hang
    while live.size:  # each pass: Σ step to the parent's run's parent; the root when reached
        above = run_up[live]
        jumps.append((live, above))
        run_root[live] = run_root[above]
        run_up[live] = run_up[above]
        live = live[run_up[live] >= 0]
    return _Runs(node, run, head, hang, hang_at, tuple(jumps), run_root)


BLOCK = 1 << 16
"""Entries per block of :func:`_gather`: a block's temporary arrays instead of arrays as long as
the graph's simple nodes (2.1 M on the 300 MB generated trace, 21 M on the 2 GB one)."""


def _gather(out: np.ndarray, values: np.ndarray, at: np.ndarray, how: str) -> None:
    """``out = values[at]`` (*how* ``"set"``), ``out += values[at]`` (``"add"``) or ``out -=
    values[at]`` (``"sub"``), *out* as long as *at*, block by block (:data:`BLOCK`): the
    same int64 operations on each entry, without a temporary as long as *out*."""
    for lo in range(0, len(at), BLOCK):
        part = values[at[lo : lo + BLOCK]]
        if how == "set":
            out[lo : lo + BLOCK] = part
        elif how == "add":
            out[lo : lo + BLOCK] += part
        else:
            out[lo : lo + BLOCK] -= part


def _sums(r: _Runs, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Per entry of ``r.node``, the sum of the steps *w* (int64, one per entry of ``r.node``)
    from its chain's root down to it; written into *out* (at least as long; it may be *w*
    itself) when given."""
    csum = np.cumsum(w, out=out[: len(w)] if out is not None else None)
    # wraps like the sums it is differenced into: exact
    before = np.where(r.head > 0, csum[np.maximum(r.head - 1, 0)], 0)
    _gather(csum, before, r.run, "sub")  # Σ step from the run's head to the node, inclusive
    run_add = np.zeros(len(r.head), np.int64)
    run_add[r.hang] = csum[r.hang_at]
    for live, above in r.jumps:  # run_add: Σ step from the root to the head's parent
        run_add[live] += run_add[above]
    _gather(csum, run_add, r.run, "add")
    return csum


def chain_roots(
    n: int, order: np.ndarray | None, simple: np.ndarray, parent: np.ndarray, step: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(up, acc)``: per node, the root of its chain (the first ancestor, following
    *parent*, that is not *simple*; the node itself when not simple) and the sum of *step*
    from that root down to it (0 for a root).  *simple* nodes have exactly one predecessor,
    ``parent[v]``, and ``step[v]`` is the delay of that edge; *order* is any permutation of
    the nodes (None: by id).

    The chains are cut into *runs*: a simple node right after its parent in *order* continues
    its parent's run, any other starts one.  Within a run the sums are one cumulative sum
    along *order*; each run then hangs from its head's parent, and the runs' roots and offsets
    are found by pointer jumping over the runs only (log₂ of the longest chain of runs numpy
    passes).  The result does not depend on *order*, the cost does: in the step graph's ids
    (:mod:`analyzers.critical_path.rank_graph` numbers nodes lane by lane) a chain is mostly
    one run."""
    up = np.arange(n, dtype=np.int64)
    acc = np.zeros(n, np.int64)
    if not simple.any():
        return up, acc
    r = _runs(n, order, simple, parent)
    up[r.node] = r.root[r.run]
    acc[r.node] = _sums(r, np.asarray(step, np.int64)[r.node])
    return up, acc


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay of one graph and anchors needs besides the delays (module docstring)."""

    n: int
    runs: _Runs
    chain_edge: np.ndarray
    """Per simple node (``runs.node``), its one in-edge."""
    chain_root: np.ndarray
    """Per simple node, its chain's root."""
    hubs: np.ndarray
    """The other nodes, in topological order."""
    hub_anchor: np.ndarray
    loop_hub: np.ndarray
    loop_root: np.ndarray
    loop_edge: np.ndarray
    loop_from: np.ndarray
    """The in-edges of the hubs another hub's time depends on, hub by hub, each hub's in edge
    order: the hub (position in :attr:`hubs`), its source's root (position in :attr:`hubs`),
    the edge, and the source's index in ``runs.node`` (-1: the source is a hub)."""
    sink: np.ndarray
    sink_edge: np.ndarray
    sink_root: np.ndarray
    sink_from: np.ndarray
    sink_at: np.ndarray
    """The hubs no hub depends on that have in-edges (positions in :attr:`hubs`) and their
    in-edges as the loop's, grouped by hub (``sink_at``: each group's start): taken at once
    after the pass."""
    scan: ScanPlan | None = None
    """The pass as scans along chains of hubs (:mod:`analyzers.critical_path.scan`), where
    that pays: used by the replays without binding edges."""


def replay_plan(
    n: int,
    topo: np.ndarray | Callable[[np.ndarray], np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    src: np.ndarray,
    anchor: np.ndarray,
    chains: np.ndarray | None = None,
) -> ReplayPlan:
    """The :class:`ReplayPlan` of the graph with in-edges *pred* (:func:`~analyzers.
    critical_path.paths.in_edges`), topological order *topo* (the nodes, or a function
    putting some nodes, ascending, in that order) and *anchor*; chains cut into runs along
    *chains* (a permutation of the nodes; default: by id)."""
    ptr, edges, first = pred
    ix = np.int32 if max(n, len(edges)) < 2**31 else np.int64
    simple = (np.diff(ptr) == 1) & (np.asarray(anchor) == NO_ANCHOR)
    parent = np.full(n, -1, ix)
    chain = np.flatnonzero(simple)
    parent[chain] = src[first[chain]]
    del chain
    r = _runs(n, chains, simple, parent)
    del parent
    chain_root = r.root[r.run]
    up = np.arange(n, dtype=ix)
    up[r.node] = chain_root
    index = np.full(n, -1, ix)
    index[r.node] = np.arange(len(r.node), dtype=ix)
    if callable(topo):
        hubs = np.asarray(topo(np.flatnonzero(~simple).astype(ix)), ix)
    else:
        hubs = np.asarray(topo)[~simple[topo]].astype(ix)
    del simple
    pos = np.full(n, -1, ix)
    pos[hubs] = np.arange(len(hubs), dtype=ix)
    counts = np.diff(ptr)[hubs]
    at = np.repeat(ptr[hubs] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    into = np.asarray(edges[at], ix)  # the hubs' in-edges, hub by hub, in edge order
    del at
    hub_of = np.repeat(np.arange(len(hubs), dtype=ix), counts)
    u = np.asarray(src)[into]
    root = pos[up[u]]
    frm = index[u]
    del up, index, pos, u
    read = np.zeros(len(hubs), bool)
    read[root] = True
    loop = read[hub_of]
    sink = np.flatnonzero(~read & (counts > 0)).astype(ix)
    sizes = counts[sink]
    return ReplayPlan(
        n,
        r,
        np.asarray(first[r.node], ix),
        chain_root,
        hubs,
        np.asarray(anchor)[hubs],
        hub_of[loop],
        root[loop],
        into[loop],
        frm[loop],
        sink,
        into[~loop],
        root[~loop],
        frm[~loop],
        (np.cumsum(sizes) - sizes).astype(ix),
        scan_plan(len(hubs), hub_of[loop], root[loop]),
    )


def replay_with(
    plan: ReplayPlan, delay: np.ndarray, binding: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """The replay (module docstring) of *plan*'s graph with edge delays *delay*: the times and,
    per node, the edge that set it (the first in edge order reaching the maximum above the
    anchor; -1 when the anchor did; None unless *binding*)."""
    delay = np.asarray(delay, np.int64)
    r = plan.runs
    acc_x = np.zeros(len(r.node) + 1, np.int64)  # the last entry, index -1: a hub, 0
    steps = acc_x[: len(r.node)]
    _gather(steps, delay, plan.chain_edge, "set")
    acc = _sums(r, steps, steps)  # per simple node: Σ delay from its root (in place)
    del steps

    def added(edge: np.ndarray, source: np.ndarray) -> np.ndarray:
        return acc_x[source] + delay[edge]

    if not binding and plan.scan is not None:
        hub_t = hub_times(
            plan.scan,
            plan.hub_anchor,
            plan.loop_hub,
            plan.loop_root,
            added(plan.loop_edge, plan.loop_from),
        )
        return _finish(plan, hub_t, None, acc, added(plan.sink_edge, plan.sink_from)), None
    t = plan.hub_anchor.tolist()
    why = [-1] * len(t)
    # One flat pass over the in-edges, hub by hub in topological order: an edge's root is an
    # earlier hub, so it is final when read; strict ">" keeps the first edge reaching the top.
    rows = zip(  # memoryviews: Python ints one at a time, no lists of them
        plan.loop_hub.data,
        plan.loop_root.data,
        added(plan.loop_edge, plan.loop_from).data,
        plan.loop_edge.data,
        strict=True,
    )
    for k, rt, a, e in rows:
        c = t[rt] + a
        if c > t[k]:
            t[k] = c
            why[k] = e
    hub_t = np.asarray(t, np.int64)
    hub_why = np.asarray(why, np.int64)
    del t, why, rows
    times = _finish(plan, hub_t, hub_why, acc, added(plan.sink_edge, plan.sink_from))
    if not binding:
        return times, None
    why_all = np.full(plan.n, -1, np.int64)
    why_all[plan.hubs] = hub_why
    why_all[r.node] = plan.chain_edge
    return times, why_all


def _finish(
    plan: ReplayPlan,
    hub_t: np.ndarray,
    hub_why: np.ndarray | None,
    acc: np.ndarray,
    sink_added: np.ndarray,
) -> np.ndarray:
    """Every node's time from the pass's hub times *hub_t*: the hubs no hub depends on at
    once (what each in-edge adds to its root: *sink_added*; their binding edges into
    *hub_why* when given), each simple node its chain root's time plus *acc* (which is
    overwritten: it becomes those times)."""
    if len(plan.sink):  # hubs nothing depends on: all at once
        c = hub_t[plan.sink_root] + sink_added
        sizes = np.diff(np.r_[plan.sink_at, len(c)])
        best = np.maximum(np.maximum.reduceat(c, plan.sink_at), hub_t[plan.sink])
        if hub_why is not None:
            hit = (c == np.repeat(best, sizes)) & (c > np.repeat(hub_t[plan.sink], sizes))
            first = np.minimum.reduceat(np.where(hit, np.arange(len(c)), len(c)), plan.sink_at)
            found = first < len(c)
            hub_why[plan.sink[found]] = plan.sink_edge[first[found]]
        hub_t[plan.sink] = best
    times = np.empty(plan.n, np.int64)
    times[plan.hubs] = hub_t
    _gather(acc, times, plan.chain_root, "add")
    times[plan.runs.node] = acc
    return times


def replay(
    n: int,
    topo: np.ndarray,
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    src: np.ndarray,
    delay: np.ndarray,
    anchor: np.ndarray,
    chains: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The replay (module docstring) of the graph with in-edges *pred* (:func:`~analyzers.
    critical_path.paths.in_edges`), sources *src*, topological order *topo*, edge delays
    *delay* and *anchor*: the times and, per node, the edge that set it (the first in edge
    order reaching the maximum above the anchor; -1 when the anchor did).  Chains are cut into
    runs along *chains* (default: by id)."""
    times, why = replay_with(replay_plan(n, topo, pred, src, anchor, chains), delay)
    assert why is not None
    return times, why
