"""The replay's pass over the hubs as max-plus scans along chains of hubs
(:func:`hub_times`), where few hubs are read across chains.

The pass (:func:`analyzers.critical_path.replay.replay_with`) gives each hub, in topological
order, ``t[k] = max(anchor[k], max over its in-edges of t[root] + a)``.  Most hubs hang from
one earlier hub — a GPU row's start from the start of the row before it on its stream — and
from a few others that many share (the step's start, from which its launches hang).  Each hub
keeps one in-edge as its *chain* edge (the one from its latest root; a root continues one
chain only), so the hubs form chains; the roots of the other edges are the *cross* roots.
Cut at the cross roots, the topological order falls into *segments*: a segment's first hub is
a cross root, and every other hub of it reads only hubs before the segment, its first hub and
its chain predecessor.  Per segment, the first hub is taken from its edges, the others' cross
edges are folded into their anchors (``X``), and each chain's stretch in the segment is one
scan: with ``C`` the cumulative chain delays, ``t = C + cummax(X - C)``.  A few numpy calls
per segment and per stretch instead of a Python step per in-edge: :func:`scan_plan` returns
None where segments and stretches are too many for that to pay.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_EDGES_PER_PIECE = 16
"""The scans are used where the pass's in-edges number at least this many per segment and
stretch (each costs a few numpy calls: the Python pass costs one step per in-edge)."""


@dataclass(frozen=True)
class ScanPlan:
    """The segments and chain stretches of a pass (module docstring), delays aside; edges are
    indices into the pass's in-edge arrays (``loop_*`` of :class:`~analyzers.critical_path.
    replay.ReplayPlan`), hubs positions in its hubs."""

    first: np.ndarray
    """Per segment, its first hub."""
    first_at: np.ndarray
    """Per segment, the range of its first hub's in-edges: ``first_at[i]:first_at[i + 1]``
    of :attr:`first_edge`."""
    first_edge: np.ndarray
    fold_at: np.ndarray
    """Per segment, the range of its folded edges in :attr:`fold_edge`."""
    fold_edge: np.ndarray
    """The other hubs' cross edges and the chain edges from before the segment."""
    run_at: np.ndarray
    """Per segment, the range of its stretches in :attr:`run_lo`."""
    run_lo: np.ndarray
    """Per stretch, its first entry in :attr:`hub` (its last: the next stretch's first − 1)."""
    hub: np.ndarray
    """The hubs by (segment, chain, position)."""
    link: np.ndarray
    """Per entry of :attr:`hub`, its chain edge when its chain predecessor is the entry
    before (same stretch), else -1."""


def scan_plan(
    n_hubs: int,
    loop_hub: np.ndarray,
    loop_root: np.ndarray,
    min_edges: int = MIN_EDGES_PER_PIECE,
) -> ScanPlan | None:
    """The :class:`ScanPlan` of a pass over *n_hubs* hubs with in-edges ``loop_hub`` /
    ``loop_root`` (hub positions, the root before the hub; grouped by hub, hubs ascending),
    None where it would not pay: fewer than *min_edges* in-edges per segment and stretch."""
    m = len(loop_hub)
    if not m:
        return None
    hub = np.asarray(loop_hub, np.int64)
    root = np.asarray(loop_root, np.int64)
    # per hub, its chain edge: the first of its edges from its latest root
    latest = np.full(n_hubs, -1, np.int64)
    np.maximum.at(latest, hub, root)
    cand = np.flatnonzero(root == latest[hub])
    cand = cand[np.r_[True, hub[cand][1:] != hub[cand][:-1]]]  # the first per hub
    # a root continues one chain only: the earliest hub hanging from it keeps the edge
    by_root = cand[np.lexsort((hub[cand], root[cand]))]
    keep = np.r_[True, root[by_root][1:] != root[by_root][:-1]]
    chain = np.sort(by_root[keep])
    is_chain = np.zeros(m, bool)
    is_chain[chain] = True
    pred = np.full(n_hubs, -1, np.int64)
    pred[hub[chain]] = root[chain]
    chain_edge = np.full(n_hubs, -1, np.int64)
    chain_edge[hub[chain]] = chain
    # segments start at the cross roots (and at hub 0)
    starts = np.unique(np.r_[0, root[~is_chain]])
    seg = np.searchsorted(starts, np.arange(n_hubs), side="right") - 1
    # chains: each hub's chain by pointer jumping to its head
    head = np.where(pred >= 0, pred, np.arange(n_hubs))
    while True:
        nxt = head[head]
        if np.array_equal(nxt, head):
            break
        head = nxt
    # the hubs with in-edges here or a chain hanging from them, by (segment, chain, position)
    member = np.zeros(n_hubs, bool)
    member[hub] = True
    member[root[chain]] = True
    at = np.flatnonzero(member)
    order = at[np.lexsort((at, head[at], seg[at]))]
    s, h = seg[order], head[order]
    new_run = np.r_[True, (s[1:] != s[:-1]) | (h[1:] != h[:-1])]
    run_lo = np.flatnonzero(new_run)
    n_runs = len(run_lo)
    if (len(starts) + n_runs) * min_edges > m:
        return None
    # an entry continues its stretch when its chain predecessor is in its segment
    linked = ~new_run
    link = np.where(linked, chain_edge[order], -1)
    # folded: every edge of the non-first hubs except the chain edges linked in a stretch
    first = starts
    is_first = np.zeros(n_hubs, bool)
    is_first[first] = True
    in_stretch = np.zeros(n_hubs, bool)
    in_stretch[order[linked]] = True
    to_first = is_first[hub]
    fold = np.flatnonzero(~to_first & ~(is_chain & in_stretch[hub]))
    fold = fold[np.argsort(seg[hub[fold]], kind="stable")]
    first_edge = np.flatnonzero(to_first)  # grouped by hub = by segment (hub order)
    return ScanPlan(
        first=first,
        first_at=np.searchsorted(seg[hub[first_edge]], np.arange(len(first) + 1)),
        first_edge=first_edge,
        fold_at=np.searchsorted(seg[hub[fold]], np.arange(len(first) + 1)),
        fold_edge=fold,
        run_at=np.searchsorted(s[run_lo], np.arange(len(first) + 1)),
        run_lo=np.r_[run_lo, len(order)],
        hub=order,
        link=link,
    )


def hub_times(
    plan: ScanPlan, anchor: np.ndarray, hub: np.ndarray, root: np.ndarray, a: np.ndarray
) -> np.ndarray:
    """The pass's hub times (module docstring): *anchor* per hub, and per in-edge its hub,
    its root and what it adds to the root's time (*a*)."""
    t = np.array(anchor, np.int64)
    w = np.where(plan.link >= 0, a[np.maximum(plan.link, 0)], 0)
    for i in range(len(plan.first)):
        lo, hi = plan.first_at[i], plan.first_at[i + 1]
        if hi > lo:
            f = plan.first[i]
            e = plan.first_edge[lo:hi]
            t[f] = max(int(t[f]), int((t[root[e]] + a[e]).max()))
        lo, hi = plan.fold_at[i], plan.fold_at[i + 1]
        if hi > lo:
            e = plan.fold_edge[lo:hi]
            np.maximum.at(t, hub[e], t[root[e]] + a[e])
        for r in range(plan.run_at[i], plan.run_at[i + 1]):
            lo, hi = plan.run_lo[r], plan.run_lo[r + 1]
            if hi - lo > 1:
                k = plan.hub[lo:hi]
                c = np.cumsum(w[lo:hi])
                t[k] = c + np.maximum.accumulate(t[k] - c)
    return t
