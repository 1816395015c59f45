"""Longest paths over the graphs of this package.

:func:`hta_longest_path` is ``networkx.dag_longest_path`` step for step (its topological order
from ``topological_generations``, first maximal predecessor in insertion order, first maximal
node in topological order), so that ties resolve as in HTA.  The simulator's max-plus pass is
:func:`analyzers.critical_path.replay.replay`: every node's time is the latest of its
predecessors' times plus the edge delay; :func:`settled` gives its result without a pass when
the given times already solve it (the measured graph); :func:`forward_order`, :func:`in_edges`
and :func:`in_groups` are the order and the in-edge lists it runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ForwardOrder:
    """A topological order of a graph none of whose edges goes back in time: nodes by time,
    nodes of equal time joined by edges in the order of those edges (*tie_nodes*, sorted, and
    their rank *tie_rank* ≥ 1 in :func:`topological_order` of that small subgraph; other
    nodes rank 0, then by id).  :meth:`of` orders any subset without sorting every node."""

    time: np.ndarray
    tie_nodes: np.ndarray
    tie_rank: np.ndarray

    def of(self, nodes: np.ndarray) -> np.ndarray:
        """*nodes* (ascending ids) in this order."""
        nodes = np.asarray(nodes)
        t = self.time[nodes]
        if not len(self.tie_nodes):
            return nodes[np.argsort(t, kind="stable")]
        at = np.searchsorted(self.tie_nodes, nodes)
        hit = at < len(self.tie_nodes)
        hit[hit] = self.tie_nodes[at[hit]] == nodes[hit]
        rank = np.zeros(len(nodes), np.int64)
        rank[hit] = self.tie_rank[at[hit]]
        return nodes[np.lexsort((rank, t))]


def forward_order_of(
    n: int, src: np.ndarray, dst: np.ndarray, time: np.ndarray, gap: np.ndarray | None = None
) -> ForwardOrder | None:
    """The :class:`ForwardOrder` of nodes ``0..n-1``, None when an edge goes back in *time*
    (:func:`topological_order` of the ties raises ValueError on a cycle).  *gap*:
    ``time[dst] - time[src]`` when at hand."""
    time = np.asarray(time, np.int64)
    if gap is None:
        gap = time[dst] - time[src]
    if bool((gap < 0).any()):
        return None
    tie = np.flatnonzero(gap == 0)
    s_tie = np.asarray(src[tie], np.int64)
    d_tie = np.asarray(dst[tie], np.int64)
    nodes = sorted_unique(np.concatenate([s_tie, d_tie]))
    local = topological_order(
        len(nodes), np.searchsorted(nodes, s_tie), np.searchsorted(nodes, d_tie)
    )
    rank = np.zeros(len(nodes), np.int64)
    rank[np.asarray(local, np.int64)] = np.arange(1, len(nodes) + 1)
    return ForwardOrder(time, nodes, rank)


def forward_order(
    n: int, src: np.ndarray, dst: np.ndarray, time: np.ndarray, gap: np.ndarray | None = None
) -> np.ndarray:
    """A topological order of nodes ``0..n-1``: :class:`ForwardOrder` of every node when no
    edge goes back in *time*, else :func:`topological_order` of the whole graph."""
    ix = np.int32 if n < 2**31 else np.int64
    fo = forward_order_of(n, src, dst, time, gap)
    if fo is None:
        return np.asarray(topological_order(n, src, dst), ix)
    return fo.of(np.arange(n, dtype=ix))


def in_edges(n: int, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, edges, first)``: node *v*'s in-edges are ``edges[ptr[v]:ptr[v + 1]]``, in edge
    order; ``first[v]`` is the first of them (-1 when none).

    ``edges`` is the stable sort of the edges by end node: a merge sort that takes runs of
    ascending ends whole, and the graphs' edges come in such runs (a lane's edges, a stream's
    rows), so it costs little more than a pass over them."""
    dst = np.asarray(dst)
    m = len(dst)
    ids = np.int32 if max(n, m) < 2**31 else np.int64
    counts = np.bincount(dst, minlength=n)
    ptr = np.zeros(n + 1, ids)
    np.cumsum(counts, out=ptr[1:])
    edges = np.argsort(dst, kind="stable").astype(ids, copy=False)
    first = np.full(n, -1, ids)
    has = counts > 0
    first[has] = edges[ptr[:-1][has]]
    return ptr, edges, first


@dataclass(frozen=True)
class InGroups:
    """A graph's nodes by their number of in-edges (from :func:`in_edges`): those with one
    and that edge, and those with several and their edges, node by node, each node's in edge
    order (``many_edges[many_at[i]:many_at[i] + many_size[i]]`` are node ``many[i]``'s)."""

    one: np.ndarray
    one_edge: np.ndarray
    many: np.ndarray
    many_edges: np.ndarray
    many_at: np.ndarray
    many_size: np.ndarray

    def reduce_many(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """*ufunc* over each of :attr:`many`'s groups of *values* (one per entry of
        :attr:`many_edges`)."""
        return ufunc.reduceat(values, self.many_at) if len(self.many) else values[:0]

    def repeat_many(self, per_node: np.ndarray) -> np.ndarray:
        """One value per entry of :attr:`many_edges`: its node's of *per_node* (one per node
        of :attr:`many`)."""
        return np.repeat(per_node, self.many_size)

    def first_many(self, hit: np.ndarray) -> np.ndarray:
        """Per node of :attr:`many`, its first edge (edge order) where *hit* (one per entry
        of :attr:`many_edges`), -1 where none."""
        if not len(self.many):
            return np.zeros(0, np.int64)
        at = np.where(hit, np.arange(len(hit)), len(hit))
        first = self.reduce_many(np.minimum, at)
        found = first < len(hit)
        return np.where(found, self.many_edges[np.where(found, first, 0)], -1)


def in_groups(pred: tuple[np.ndarray, np.ndarray, np.ndarray]) -> InGroups:
    """The :class:`InGroups` of the in-edges *pred* (:func:`in_edges`)."""
    ptr, edges, first = pred
    counts = np.diff(ptr)
    ix = ptr.dtype
    one = np.flatnonzero(counts == 1).astype(ix)
    many = np.flatnonzero(counts > 1).astype(ix)
    sizes = counts[many]
    local = np.cumsum(sizes) - sizes  # each node's start within many_edges
    at = np.repeat(ptr[many] - local, sizes) + np.arange(int(sizes.sum()), dtype=ix)
    return InGroups(one, first[one], many, edges[at], local, sizes)


def first_latest_in_edges(
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    value: np.ndarray | Callable[[np.ndarray], np.ndarray],
    groups: InGroups | None = None,
) -> np.ndarray:
    """Per node with in-edges, the first of them (edge order) whose *value* (one per edge, or a
    function giving the values of some edges) is the largest of the node's: what
    ``np.lexsort((-value, dst))`` puts first in each node's group.  *pred* is
    :func:`in_edges` (*groups* its :func:`in_groups` when at hand); the values are read only
    for the nodes with several in-edges."""
    gr = groups if groups is not None else in_groups(pred)
    if not len(gr.many):
        return gr.one_edge
    v = value(gr.many_edges) if callable(value) else np.asarray(value)[gr.many_edges]
    top = gr.repeat_many(gr.reduce_many(np.maximum, v))
    return np.concatenate([gr.one_edge, gr.first_many(v == top)])


def measured_why(
    n: int, groups: InGroups, binding: np.ndarray, gap: np.ndarray, anchored: np.ndarray
) -> np.ndarray:
    """Per node, the edge that sets its time in the replay of the measured delays (-1: none)
    — what :func:`settled` gives, without its checks, for a graph of nodes ``0..n-1`` whose
    edges have the measured *gap* (``time[dst] - time[src]``) and whose delays are the gap on
    each node's *binding* edge and ``min(0, gap)`` on the others, with anchors at the measured
    times of the nodes without in-edges and of the *anchored* nodes (and no anchor elsewhere):
    the step graph's (:func:`analyzers.critical_path.step_graph.build_step_graph`).

    Those times solve the replay's equation by construction: an edge reaches its node's time
    exactly where its delay is its gap (the binding edge, or a gap ≤ 0), the others fall short,
    and an anchor never exceeds its node's time.  So a node's edge is its first in-edge (edge
    order) that is binding or has a gap ≤ 0, except where the anchor is the time itself (no
    edge reaches above it).  *groups*: :func:`in_groups` of the edges."""
    why = np.full(n, -1, groups.one_edge.dtype)
    why[groups.one] = groups.one_edge
    if len(groups.many):
        e = groups.many_edges
        why[groups.many] = groups.first_many(binding[e] | (gap[e] <= 0))
    why[anchored] = -1
    return why


NO_ANCHOR = -(2**62)
"""The anchor of a node that only follows its predecessors (below any time)."""


def settled(
    times: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    delay: np.ndarray,
    anchor: np.ndarray,
    groups: InGroups | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`~analyzers.critical_path.replay.replay`'s result without the pass, when *times*
    already solve the replay's equation at every node (``times[v] = max(anchor[v], max over e
    of times[u] + delay[e])``, whose solution on a DAG is unique) — the measured graph does by
    construction; else None.
    The binding edge of a node is its first in-edge (edge order) reaching ``times[v]`` above the
    anchor, as in the pass.  *groups*: :func:`in_groups` of the edges into *dst*, when at
    hand.  The times returned are *times* (a read-only view)."""
    times = np.asarray(times, np.int64)
    anchor = np.asarray(anchor, np.int64)
    gr = groups if groups is not None else in_groups(in_edges(len(times), dst))
    # nodes with one in-edge
    c1 = times[src[gr.one_edge]] + delay[gr.one_edge]
    t1, a1 = times[gr.one], anchor[gr.one]
    if not np.array_equal(np.maximum(a1, c1), t1):
        return None
    why = np.full(len(times), -1, gr.one_edge.dtype)
    why[gr.one] = np.where((c1 == t1) & (c1 > a1), gr.one_edge, -1)
    # nodes with several
    cm = times[src[gr.many_edges]] + delay[gr.many_edges]
    tm, am = times[gr.many], anchor[gr.many]
    if not np.array_equal(np.maximum(am, gr.reduce_many(np.maximum, cm)), tm):
        return None
    hit = (cm == gr.repeat_many(tm)) & (cm > gr.repeat_many(am))
    why[gr.many] = gr.first_many(hit)
    # nodes without in-edges keep their anchor
    none = np.ones(len(times), bool)
    none[gr.one] = False
    none[gr.many] = False
    if not np.array_equal(anchor[none], times[none]):
        return None
    out = times.view()
    out.flags.writeable = False
    return out, why
