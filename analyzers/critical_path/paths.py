"""Longest paths over the graphs of this package.

:func:`hta_longest_path` is ``networkx.dag_longest_path`` step for step (its topological order
from ``topological_generations``, first maximal predecessor in insertion order, first maximal
node in topological order), so that ties resolve as in HTA.  :func:`replay` is the simulator's
max-plus pass: every node's time is the latest of its predecessors' times plus the edge delay.
"""

from __future__ import annotations

import numpy as np


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


def replay(
    n: int,
    topo: list[int],
    pred: list[list[tuple[int, int]]],
    delay: np.ndarray,
    anchor: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Max-plus replay: ``t[v] = max(anchor[v], max over in-edges e=(u, v) of t[u] + delay[e])``
    (``anchor`` = -2**62 for nodes that only follow their predecessors).  *pred* lists
    ``(u, edge index)`` per node.  Returns the times and, per node, the edge that set it (-1 when
    the anchor did)."""
    d = delay.tolist()
    t = anchor.tolist()
    why = [-1] * n
    for v in topo:
        best, arg = t[v], -1
        for u, e in pred[v]:
            c = t[u] + d[e]
            if c > best:
                best, arg = c, e
        t[v] = best
        why[v] = arg
    return np.asarray(t, dtype=np.int64), np.asarray(why, dtype=np.int64)
