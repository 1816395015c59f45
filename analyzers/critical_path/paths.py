"""Longest paths over the graphs of this package.

:func:`hta_longest_path` is ``networkx.dag_longest_path`` step for step (its topological order
from ``topological_generations``, first maximal predecessor in insertion order, first maximal
node in topological order), so that ties resolve as in HTA.  :func:`replay` is the simulator's
max-plus pass: every node's time is the latest of its predecessors' times plus the edge delay
(one-in-edge chains compressed: :func:`chain_roots`); :func:`settled` gives its result without a
pass when the given times already solve it (the measured graph); :func:`forward_order` and
:func:`in_edges` are the order and the in-edge lists it runs on.
"""

from __future__ import annotations

import numpy as np

from collectors.arrays import sorted_unique


def topological_order(n: int, src: np.ndarray, dst: np.ndarray) -> list[int]:
    """Nodes ``0..n-1`` in networkx ``topological_generations`` order (edges in insertion
    order); raises ValueError on a cycle."""
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    by_src = np.argsort(src, kind="stable")  # each node's successors in insertion order
    succ = dst[by_src].tolist()
    first = np.searchsorted(src[by_src], np.arange(n + 1)).tolist()
    indeg = np.bincount(dst, minlength=n).tolist()
    gen = [v for v in range(n) if indeg[v] == 0]
    out: list[int] = []
    while gen:
        out.extend(gen)
        nxt: list[int] = []
        for u in gen:
            for v in succ[first[u] : first[u + 1]]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    nxt.append(v)
        gen = nxt
    if len(out) != n:
        raise ValueError("the graph has a cycle")
    return out


def _preds(n: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> list[list[tuple[int, int]]]:
    pred: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist(), strict=True):
        pred[v].append((u, x))
    return pred


def hta_longest_path(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> list[int]:
    """``networkx.dag_longest_path(G, weight="weight")`` of the graph with nodes ``0..n-1`` and
    the edges given in insertion order (no duplicate ``(u, v)``)."""
    if n == 0:
        return []
    topo = topological_order(n, src, dst)
    pred = _preds(n, src, dst, weight)
    dist_len = [0] * n
    dist_from = list(range(n))
    for v in topo:
        best_len, best_u = None, v
        for u, x in pred[v]:
            cand = dist_len[u] + x
            if best_len is None or cand > best_len:
                best_len, best_u = cand, u
        if best_len is None or best_len < 0:
            dist_len[v], dist_from[v] = 0, v
        else:
            dist_len[v], dist_from[v] = best_len, best_u
    best = topo[0]
    for v in topo:
        if dist_len[v] > dist_len[best]:
            best = v
    path = [best]
    while dist_from[path[-1]] != path[-1]:
        path.append(dist_from[path[-1]])
    path.reverse()
    return path


def forward_order(
    n: int, src: np.ndarray, dst: np.ndarray, time: np.ndarray, gap: np.ndarray | None = None
) -> np.ndarray:
    """A topological order of nodes ``0..n-1`` when no edge goes back in *time*: by time, nodes
    of equal time joined by edges in the order of those edges (:func:`topological_order` of
    that small subgraph, which raises ValueError on a cycle); with an edge back in time,
    :func:`topological_order` of the whole graph.  *gap*: ``time[dst] - time[src]`` when at
    hand."""
    time = np.asarray(time, np.int64)
    if gap is None:
        gap = time[dst] - time[src]
    if bool((gap < 0).any()):
        return np.asarray(topological_order(n, src, dst), np.int64)
    tie = np.flatnonzero(gap == 0)
    if not len(tie):
        return np.argsort(time, kind="stable")
    s_tie = np.asarray(src[tie], np.int64)
    d_tie = np.asarray(dst[tie], np.int64)
    nodes = sorted_unique(np.concatenate([s_tie, d_tie]))
    local = topological_order(
        len(nodes), np.searchsorted(nodes, s_tie), np.searchsorted(nodes, d_tie)
    )
    among = np.zeros(n, np.int64)
    among[nodes[np.asarray(local, np.int64)]] = np.arange(1, len(nodes) + 1)
    return np.lexsort((among, time))


def in_edges(n: int, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, edges, first)``: node *v*'s in-edges are ``edges[ptr[v]:ptr[v + 1]]``, in edge
    order; ``first[v]`` is the first of them (-1 when none).

    A counting sort: an edge into a node with one in-edge (most nodes) goes straight to its
    node's slot; only the edges into nodes with several are sorted (stably, by node)."""
    dst = np.asarray(dst)
    m = len(dst)
    ids = np.int32 if max(n, m) < 2**31 else np.int64
    counts = np.bincount(dst, minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    edges = np.empty(m, ids)
    many = counts[dst] > 1
    one = np.flatnonzero(~many)
    edges[ptr[dst[one]]] = one
    multi = np.flatnonzero(many)
    if len(multi):
        multi = multi[np.argsort(dst[multi], kind="stable")]
        d = dst[multi]
        # the k-th edge into a node goes to ptr[node] + k: k = its position among the sorted
        # edges minus that of its node's first one
        head = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        k = np.arange(len(multi)) - np.repeat(head, np.diff(np.r_[head, len(multi)]))
        edges[ptr[d] + k] = multi
    first = np.full(n, -1, ids)
    has = counts > 0
    first[has] = edges[ptr[:-1][has]]
    return ptr, edges, first


def first_latest_in_edges(
    pred: tuple[np.ndarray, np.ndarray, np.ndarray], value: np.ndarray
) -> np.ndarray:
    """Per node with in-edges, the first of them (edge order) whose *value* (one per edge) is
    the largest of the node's: what ``np.lexsort((-value, dst))`` puts first in each node's
    group.  *pred* is :func:`in_edges`."""
    ptr, edges, first = pred
    if not len(edges):
        return edges
    counts = np.diff(ptr)
    single = first[counts == 1]  # a node's one in-edge
    heads = ptr[:-1][counts > 1]
    if not len(heads):
        return single
    sizes = counts[counts > 1]
    at = (
        np.repeat(heads, sizes)
        + np.arange(int(sizes.sum()))
        - np.repeat(np.cumsum(sizes) - sizes, sizes)
    )  # positions in edges of the nodes with several in-edges, node by node
    e = edges[at]
    v = np.asarray(value)[e]
    local = np.cumsum(sizes) - sizes  # each group's start within e
    top = np.repeat(np.maximum.reduceat(v, local), sizes)
    pos = np.where(v == top, np.arange(len(v)), len(v))  # positions reaching the top
    return np.concatenate([single, e[np.minimum.reduceat(pos, local)]])


NO_ANCHOR = -(2**62)
"""The anchor of a node that only follows its predecessors (below any time)."""


def settled(
    times: np.ndarray, src: np.ndarray, dst: np.ndarray, delay: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`replay`'s result without the pass, when *times* already solve the replay's
    equation at every node (``times[v] = max(anchor[v], max over e of times[u] + delay[e])``,
    whose solution on a DAG is unique) — the measured graph does by construction; else None.
    The binding edge of a node is its first in-edge (edge order) reaching ``times[v]`` above the
    anchor, as in the pass."""
    times = np.asarray(times, np.int64)
    cand = times[src] + delay
    best = np.asarray(anchor, np.int64).copy()
    np.maximum.at(best, dst, cand)
    if not np.array_equal(best, times):
        return None
    hit = np.flatnonzero((cand == times[dst]) & (cand > anchor[dst]))
    why = np.full(len(times), -1, np.int64)
    d = dst[hit]
    order = np.argsort(d, kind="stable")
    ds = d[order]
    first = np.r_[True, ds[1:] != ds[:-1]] if len(ds) else np.zeros(0, bool)
    why[ds[first]] = hit[order[first]]
    return times.copy(), why


def replay(
    n: int,
    topo: np.ndarray,
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    src: np.ndarray,
    delay: np.ndarray,
    anchor: np.ndarray,
    chains: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Max-plus replay: ``t[v] = max(anchor[v], max over in-edges e=(u, v) of t[u] + delay[e])``
    (``anchor`` = :data:`NO_ANCHOR` for nodes that only follow their predecessors).  *pred* is
    :func:`in_edges`.  Returns the times and, per node, the edge that set it (the first in edge
    order reaching the maximum above the anchor; -1 when the anchor did).

    Chains are compressed: a node with one in-edge and no anchor (most nodes: a host op's
    boundaries, a kernel's end) is ``t[u] + delay`` of its one predecessor, so it is its chain
    root's time plus the sum of the delays from that root (:func:`chain_roots`, which cuts the
    chains into runs along *chains*, a permutation of the nodes, default their ids), and the pass
    in topological order visits only the other nodes, their in-edges taken from the roots of
    their sources."""
    ptr, edges, first = pred
    src = np.asarray(src, np.int64)
    delay = np.asarray(delay, np.int64)
    anchor = np.asarray(anchor, np.int64)
    simple = (np.diff(ptr) == 1) & (anchor == NO_ANCHOR)
    chain = np.flatnonzero(simple)
    parent, step = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    parent[chain], step[chain] = src[first[chain]], delay[first[chain]]
    up, acc = chain_roots(n, chains, simple, parent, step)
    hubs = topo[~simple[topo]]  # the other nodes, in topological order
    pos = np.full(n, -1, np.int64)
    pos[hubs] = np.arange(len(hubs))
    counts = np.diff(ptr)[hubs]
    at = np.repeat(ptr[hubs] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    into = edges[at]  # the hubs' in-edges, hub by hub, each hub's in edge order
    u = src[into]
    hub_of = np.repeat(np.arange(len(hubs)), counts).tolist()
    root, add = pos[up[u]].tolist(), (acc[u] + delay[into]).tolist()
    t = anchor[hubs].tolist()
    why = [-1] * len(hubs)
    # One flat pass over the in-edges, hub by hub in topological order: an edge's root is an
    # earlier hub, so it is final when read; strict ">" keeps the first edge reaching the top.
    for k, r, a, e in zip(hub_of, root, add, into.tolist(), strict=True):
        c = t[r] + a
        if c > t[k]:
            t[k] = c
            why[k] = e
    times = np.empty(n, np.int64)
    times[hubs] = t
    times[chain] = times[up[chain]] + acc[chain]
    binding = np.full(n, -1, np.int64)
    binding[hubs] = why
    binding[chain] = first[chain]
    return times, binding


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
    if order is None:  # by id: positions are ids
        at = np.flatnonzero(simple)
        if not len(at):
            return up, acc
        pos = up
        node = at
    else:
        order = np.asarray(order, np.int64)
        on = simple[order]  # per position in order
        if not on.any():
            return up, acc
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)
        at = np.flatnonzero(on)  # positions of the simple nodes
        node = order[at]
    par = np.asarray(parent, np.int64)[node]
    ppos = pos[par]
    cont = (ppos == at - 1) & simple[par]  # continues the run of its parent
    head = ~cont
    run = np.cumsum(head) - 1  # run of each simple node, runs in the order of their heads
    w = np.asarray(step, np.int64)[node]
    csum = np.cumsum(w)  # wraps like the sums it is differenced into: exact
    first_of_run = np.flatnonzero(head)
    before = np.where(first_of_run > 0, csum[np.maximum(first_of_run - 1, 0)], 0)
    local = csum - before[run]  # Σ step from the run's head to the node, inclusive
    # each run hangs from its head's parent: a root (not simple), or a node of an earlier run
    hp = par[first_of_run]
    hang = simple[hp]
    k = np.searchsorted(at, pos[hp[hang]])  # the parent's index among the simple nodes
    run_up = np.full(len(first_of_run), -1, np.int64)
    run_add = np.zeros(len(first_of_run), np.int64)
    run_root = hp.copy()
    run_up[hang] = run[k]
    run_add[hang] = local[k]
    live = np.flatnonzero(run_up >= 0)
    while live.size:  # run_add: Σ step from the root to the head's parent; run_root: the root
        above = run_up[live]
        run_add[live] += run_add[above]
        run_root[live] = run_root[above]
        run_up[live] = run_up[above]
        live = live[run_up[live] >= 0]
    up[node] = run_root[run]
    acc[node] = local + run_add[run]
    return up, acc
