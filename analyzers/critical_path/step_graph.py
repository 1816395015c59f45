"""The multi-rank dependency graph the simulator replays (docs/critical-path.md §2).

:func:`build_step_graph` stitches the ranks' parts (:mod:`analyzers.critical_path.rank_graph`:
host ops, GPU rows, launches, syncs, waits and step completions of one rank) with one *join*
node per collective matched across ranks (process group + ``Seq``, falling back to the n-th
collective of the group): ``arrive`` edges from each rank's collective kernel start to the join,
``transfer`` edges from the join to each rank's kernel end — a collective ends when its last
rank has arrived.

Every node's *binding* in-edge is the one from the predecessor that happened last; it gets the
measured gap as delay, the others ``min(0, gap)``.  Replaying the delays therefore reproduces
every measured time exactly, and a change to the delays moves only what depended on it.  Times
are aligned across ranks by one offset per rank: the median of the differences of the matched
collectives' kernel ends (a collective ends together on every rank).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analyzers.critical_path.paths import first_latest_in_edges, forward_order, in_edges
from analyzers.critical_path.rank_graph import (
    KINDS,
    SYNC_CALL_NAMES,
    RankGraph,
    rank_graph,
)

if TYPE_CHECKING:
    from collectors.model import Trace

__all__ = ["KINDS", "Join", "StepGraph", "StepRef", "build_step_graph", "sync_call"]


@dataclass(frozen=True)
class StepRef:
    """One (rank, step): its number, its ``ProfilerStep`` start node and completion node, and
    its measured ``completion − start`` (ns)."""

    rank: int
    num: int
    start: int
    done: int
    measured_ns: int


@dataclass(frozen=True)
class Join:
    """A collective matched across ranks: its join node and who arrived last, by how much."""

    node: int
    key: str
    collective: str
    ranks: list[int]
    late_rank: int
    lateness_ns: int
    """Last arrival − the latest other arrival (aligned clock)."""
    arrivals: dict[int, int]
    """Per rank, the collective kernel's start on the aligned clock."""
    message_bytes: float
    group_size: float
    link_peak_gbps: float
    kernel_edges: tuple[int, ...] = ()
    """The ``gpu`` edges of the ranks' collective kernels."""
    transfer_edges: tuple[int, ...] = ()


@dataclass
class StepGraph:
    """All ranks' nodes and edges with the measured times (module docstring)."""

    ranks: list[int]
    node_time: np.ndarray
    """Measured time of each node on the aligned clock (ns)."""
    node_rank: np.ndarray
    """Rank of each node (-1 for join nodes)."""
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    """Index into :data:`KINDS`."""
    cause: np.ndarray
    detail: np.ndarray
    name: np.ndarray
    category: np.ndarray
    launching: np.ndarray
    unresolved: np.ndarray
    """Per edge, as in :class:`~analyzers.critical_path.rank_graph.RankGraph`."""
    delay: np.ndarray
    binding: np.ndarray
    """True for each node's binding in-edge."""
    steps: list[StepRef]
    joins: list[Join]
    offsets: dict[int, int]
    topo: np.ndarray
    """A topological order of the nodes (:func:`analyzers.critical_path.paths.forward_order`)."""
    pred: tuple[np.ndarray, np.ndarray, np.ndarray]
    """Each node's in-edges (:func:`analyzers.critical_path.paths.in_edges`)."""
    dropped_edges: int = 0
    """``launch`` / ``stream`` edges left out because they point back in time
    (:func:`_forward_only`)."""

    @functools.cached_property
    def chain_order(self) -> np.ndarray:
        """The nodes rank by rank, each rank's in :attr:`topo` order: the order in which the
        replay cuts chains into runs (:func:`analyzers.critical_path.paths.chain_roots`; any
        order is correct, one where a node follows its predecessor is fast, and ranks whose
        times coincide interleave in :attr:`topo`)."""
        if len(self.ranks) < 2:
            return self.topo
        return self.topo[np.argsort(self.node_rank[self.topo], kind="stable")]


def _matched(parts: Sequence[RankGraph]) -> dict[str, dict[int, int]]:
    """Per collective key seen on ≥ 2 ranks: ``{rank: position in the rank's collectives}``."""
    by_key: dict[str, dict[int, int]] = {}
    for p in parts:
        for i, key in enumerate(p.coll_key.tolist()):
            by_key.setdefault(str(key), {})[p.rank] = i
    return {k: v for k, v in by_key.items() if len(v) >= 2}


def _offsets(parts: Sequence[RankGraph], matched: dict[str, dict[int, int]]) -> dict[int, int]:
    """Per rank, the clock offset onto the first rank's clock: the median over matched
    collectives of (first rank's kernel end − this rank's kernel end); 0 when unmatched."""
    if not parts:
        return {}
    ref = parts[0]
    out = {ref.rank: 0}
    for p in parts[1:]:
        diffs = [
            int(ref.node_time[ref.coll_end[per[ref.rank]]])
            - int(p.node_time[p.coll_end[per[p.rank]]])
            for per in matched.values()
            if ref.rank in per and p.rank in per
        ]
        out[p.rank] = int(np.median(diffs)) if diffs else 0
    return out


def _forward_only(parts: list[RankGraph]) -> tuple[list[RankGraph], int]:
    """The parts without the ``launch`` / ``stream`` edges whose end is measured before their
    start (a row starting before its launch call, or before its stream predecessor ended:
    clock skew or overlapping rows).  Such edges could close a cycle; leaving them out keeps
    the replay exact (each node's binding edge is chosen among the edges kept)."""
    out, dropped = [], 0
    back = (KINDS.index("launch"), KINDS.index("stream"))
    for p in parts:
        bad = np.isin(p.kind, back) & (p.node_time[p.dst] < p.node_time[p.src])
        n = int(bad.sum())
        if n:
            keep = ~bad
            fields = ("src", "dst", "kind", "cause", "detail", "name", "category")
            p = dataclasses.replace(
                p,
                **{f: getattr(p, f)[keep] for f in (*fields, "launching", "unresolved")},
            )
            dropped += n
        out.append(p)
    return out, dropped


def _pair_edges(p: RankGraph) -> dict[int, int]:
    """Per collective position of *p*, its kernel's ``gpu`` edge (the last one from its start
    node to its end node), for the collectives that have one."""
    gpu = np.flatnonzero(p.kind == KINDS.index("gpu"))
    if not len(gpu) or not len(p.coll_start):
        return {}
    width = np.int64(p.n_nodes + 1)
    keys = p.src[gpu].astype(np.int64) * width + p.dst[gpu]
    order = np.argsort(keys, kind="stable")  # equal pairs keep edge order: the last is last
    sorted_keys = keys[order]
    want = np.asarray(p.coll_start, np.int64) * width + np.asarray(p.coll_end, np.int64)
    at = np.searchsorted(sorted_keys, want, side="right") - 1
    found = (at >= 0) & (sorted_keys[np.maximum(at, 0)] == want)
    edges = gpu[order[np.maximum(at, 0)]]
    return dict(zip(np.flatnonzero(found).tolist(), edges[found].tolist(), strict=True))


def build_step_graph(parts: Sequence[RankGraph | Trace]) -> StepGraph:
    """The graph of the ranks' *parts* (a :class:`RankGraph` per rank, or the rank's Trace)
    with measured delays (module docstring)."""
    ps = [p if isinstance(p, RankGraph) else rank_graph(p) for p in parts]
    ps, dropped = _forward_only(ps)
    matched = _matched(ps)
    offsets = _offsets(ps, matched)
    base = np.cumsum([0] + [p.n_nodes for p in ps])
    ebase = np.cumsum([0] + [len(p.src) for p in ps])
    n_local = int(base[-1])
    pmap = {p.rank: (p, int(b)) for p, b in zip(ps, base.tolist(), strict=False)}
    times = [p.node_time + offsets[p.rank] for p in ps]
    src = [p.src + b for p, b in zip(ps, base.tolist(), strict=False)]
    dst = [p.dst + b for p, b in zip(ps, base.tolist(), strict=False)]
    kind = [p.kind for p in ps]
    labels: dict[str, list[np.ndarray]] = {
        f: [getattr(p, f) for p in ps] for f in ("cause", "detail", "name", "category")
    }
    flags: dict[str, list[np.ndarray]] = {f: [getattr(p, f) for p in ps] for f in ("launching",)}
    flags["unresolved"] = [p.unresolved for p in ps]
    node_rank = [np.full(p.n_nodes, p.rank, np.int64) for p in ps]
    # per rank, its collective kernel's gpu edge (start → end) by collective position
    kernel_edge: dict[tuple[int, int], int] = {}
    for p, eb in zip(ps, ebase.tolist(), strict=False):
        for i, e in _pair_edges(p).items():
            kernel_edge[(p.rank, i)] = e + eb
    joins: list[Join] = []
    j_time: list[int] = []
    x_src: list[int] = []
    x_dst: list[int] = []
    x_kind: list[int] = []
    x_label: list[tuple[str, str, str]] = []
    n_edges = int(ebase[-1])
    for key, per in matched.items():
        node = n_local + len(j_time)
        arrivals = {}
        for r, i in per.items():
            p, b = pmap[r]
            arrivals[r] = int(p.node_time[p.coll_start[i]]) + offsets[r]
        late = max(arrivals, key=lambda r: (arrivals[r], -r))
        others = [a for r, a in arrivals.items() if r != late]
        j_time.append(arrivals[late])
        transfers = []
        for r, i in per.items():
            p, b = pmap[r]
            x_src.append(int(p.coll_start[i]) + b)
            x_dst.append(node)
            x_kind.append(KINDS.index("arrive"))
            x_label.append(("cpu", "arrive", str(p.coll_kernel[i])))
        for r, i in per.items():
            p, b = pmap[r]
            transfers.append(n_edges + len(x_src))
            x_src.append(node)
            x_dst.append(int(p.coll_end[i]) + b)
            x_kind.append(KINDS.index("transfer"))
            k = str(p.coll_kernel[i])
            x_label.append(("exposed_communication", k.split("(")[0][:60], k))
        first_rank, first_i = next(iter(per.items()))
        p0 = pmap[first_rank][0]
        f = p0.coll_facts[first_i]
        joins.append(
            Join(
                node,
                key,
                str(p0.coll_name[first_i]),
                sorted(per),
                late,
                arrivals[late] - max(others),
                arrivals,
                float(f[0]),
                float(f[1]),
                float(f[2]),
                tuple(kernel_edge[(r, i)] for r, i in per.items() if (r, i) in kernel_edge),
                tuple(transfers),
            )
        )
    aligned = np.concatenate([*times, np.asarray(j_time, np.int64)]).astype(np.int64, copy=False)
    rank_arr = np.concatenate([*node_rank, np.full(len(j_time), -1, np.int64)]).astype(
        np.int64, copy=False
    )
    s_all = np.concatenate([*src, np.asarray(x_src, np.int64)]).astype(np.int64, copy=False)
    d_all = np.concatenate([*dst, np.asarray(x_dst, np.int64)]).astype(np.int64, copy=False)
    k_all = np.concatenate([*kind, np.asarray(x_kind, np.int64)]).astype(np.int64, copy=False)

    def obj(parts_: list[np.ndarray], extra: list[str]) -> np.ndarray:
        return np.concatenate([*parts_, np.asarray(extra, dtype=object)]).astype(object, copy=False)

    cause = obj(labels["cause"], [c for c, _, _ in x_label])
    detail = obj(labels["detail"], [d for _, d, _ in x_label])
    name = obj(labels["name"], [n for _, _, n in x_label])
    category = obj(labels["category"], [""] * len(x_label))
    launching = np.concatenate([*flags["launching"], np.zeros(len(x_src), bool)]).astype(
        bool, copy=False
    )
    unresolved = np.concatenate([*flags["unresolved"], np.zeros(len(x_src), bool)]).astype(
        bool, copy=False
    )
    gap = aligned[d_all] - aligned[s_all]
    n = len(aligned)
    pred = in_edges(n, d_all)
    binding = np.zeros(len(s_all), bool)
    binding[first_latest_in_edges(pred, aligned[s_all])] = True
    delay = np.where(binding, gap, np.minimum(gap, 0))
    topo = forward_order(n, s_all, d_all, aligned)
    steps = [
        StepRef(
            p.rank,
            int(num),
            int(s) + b,
            int(d) + b,
            int(p.node_time[d] - p.node_time[s]),
        )
        for p, b in zip(ps, base.tolist(), strict=False)
        for num, s, d in zip(p.step_num, p.step_start, p.step_done, strict=True)
    ]
    return StepGraph(
        [p.rank for p in ps],
        aligned,
        rank_arr,
        s_all,
        d_all,
        k_all,
        cause,
        detail,
        name,
        category,
        launching,
        unresolved,
        delay,
        binding,
        steps,
        joins,
        offsets,
        topo,
        pred,
        dropped,
    )


def sync_call(name: str) -> bool:
    return name in SYNC_CALL_NAMES
