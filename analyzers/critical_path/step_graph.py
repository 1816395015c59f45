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
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.critical_path.labels import Categorised, distinct
from analyzers.critical_path.paths import (
    NO_ANCHOR,
    ForwardOrder,
    first_latest_in_edges,
    forward_order_of,
    in_edges,
    in_groups,
    measured_why,
    topological_order,
)
from analyzers.critical_path.rank_graph import (
    KINDS,
    SYNC_CALL_NAMES,
    RankGraph,
    rank_graph,
)
from analyzers.critical_path.replay import ReplayPlan, replay_plan

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
class StepGraph(Categorised):
    """All ranks' nodes and edges with the measured times (module docstring)."""

    ranks: list[int]
    node_time: np.ndarray
    """Measured time of each node on the aligned clock (ns)."""
    node_rank: np.ndarray
    """Rank of each node (-1 for join nodes)."""
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    """Index into :data:`KINDS` (int8)."""
    labels: np.ndarray
    cause_code: np.ndarray
    detail_code: np.ndarray
    name_code: np.ndarray
    category_code: np.ndarray
    launching: np.ndarray
    unresolved: np.ndarray
    """Per edge, as in :class:`~analyzers.critical_path.rank_graph.RankGraph` (labels as codes
    into the one table of distinct strings :attr:`labels`)."""
    delay: np.ndarray
    binding: np.ndarray
    """True for each node's binding in-edge."""
    steps: list[StepRef]
    joins: list[Join]
    offsets: dict[int, int]
    forward: ForwardOrder | None
    """The nodes' topological order by time (None: an edge goes back in time; :attr:`topo`
    is then :func:`~analyzers.critical_path.paths.topological_order` of the graph)."""
    pred: tuple[np.ndarray, np.ndarray, np.ndarray]
    """Each node's in-edges (:func:`analyzers.critical_path.paths.in_edges`)."""
    why: np.ndarray
    """Per node, the edge that sets its time in the replay with no change (-1: none;
    :func:`analyzers.critical_path.paths.measured_why`)."""
    dropped_edges: int = 0
    """``launch`` / ``stream`` edges left out because they point back in time
    (:func:`_forward_only`)."""

    @functools.cached_property
    def topo(self) -> np.ndarray:
        """A topological order of every node (:func:`analyzers.critical_path.paths.
        forward_order`)."""
        if self.forward is None:
            return np.asarray(topological_order(len(self.node_time), self.src, self.dst))
        return self.forward.of(np.arange(len(self.node_time)))

    def in_topo_order(self, nodes: np.ndarray) -> np.ndarray:
        """*nodes* (ascending ids) in :attr:`topo` order, without ordering every node."""
        if self.forward is None:
            return self.topo[np.isin(self.topo, nodes)]
        return self.forward.of(nodes)

    @property
    def anchor(self) -> np.ndarray:
        """Per node, the time the replay holds it at or after: the measured time of nodes
        without predecessors and of step starts (a what-if applies to each step as it
        started), else :data:`~analyzers.critical_path.paths.NO_ANCHOR` (made on each call:
        the measured replay and the replay's plan read it once)."""
        out = np.where(np.diff(self.pred[0]) > 0, NO_ANCHOR, self.node_time)
        starts = np.asarray([st.start for st in self.steps], np.int64)
        out[starts] = self.node_time[starts]
        return out

    @functools.cached_property
    def measured(self) -> tuple[np.ndarray, np.ndarray]:
        """The replay with no change (node times, binding edge per node; read-only): the
        measured times, which solve it by construction, and :attr:`why`."""
        times = self.node_time.view()
        times.flags.writeable = False
        why = self.why.view()
        why.flags.writeable = False
        return times, why

    @functools.cached_property
    def replay_plan(self) -> ReplayPlan:
        """The replay's plan of this graph and :attr:`anchor` (by node id: chains are mostly
        runs in the ids of :mod:`analyzers.critical_path.rank_graph`)."""
        return replay_plan(
            len(self.node_time), self.in_topo_order, self.pred, self.src, self.anchor
        )

    def label_is(self, codes: np.ndarray, value: str) -> np.ndarray:
        """Per code of *codes*, whether its label is *value*."""
        return (self.labels == value)[codes]


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
        gaps = np.flatnonzero(np.isin(p.kind, back))
        bad = gaps[p.node_time[p.dst[gaps]] < p.node_time[p.src[gaps]]]
        n = len(bad)
        if n:
            keep = np.ones(len(p.src), bool)
            keep[bad] = False
            fields = (
                "src",
                "dst",
                "kind",
                "cause_code",
                "detail_code",
                "name_code",
                "category_code",
            )
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


def _joined(blocks: list[np.ndarray], extra: list[int] | np.ndarray, dtype: Any) -> np.ndarray:
    """The *blocks* and then *extra*, as one array of *dtype*: the one block itself when there
    is nothing to join (a sole rank's part is used as it is, not copied)."""
    if len(blocks) == 1 and not len(extra) and blocks[0].dtype == dtype:
        return blocks[0]
    return np.concatenate([*blocks, np.asarray(extra, dtype)]).astype(dtype, copy=False)


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
    ids = np.dtype(np.int32 if n_local + len(j_time) < 2**31 else np.int64)
    aligned = _joined(
        [p.node_time + offsets[p.rank] if offsets[p.rank] else p.node_time for p in ps],
        j_time,
        np.dtype(np.int64),
    )
    ranks = [p.rank for p in ps]
    rank_dtype = np.dtype(np.int16 if all(-1 <= r < 2**15 for r in ranks) else np.int64)
    rank_arr = _joined(
        [np.full(p.n_nodes, p.rank, rank_dtype) for p in ps], [-1] * len(j_time), rank_dtype
    )
    s_all = _joined(
        [p.src if b == 0 else p.src + b for p, b in zip(ps, base.tolist(), strict=False)],
        x_src,
        ids,
    )
    d_all = _joined(
        [p.dst if b == 0 else p.dst + b for p, b in zip(ps, base.tolist(), strict=False)],
        x_dst,
        ids,
    )
    k_all = _joined([p.kind for p in ps], x_kind, np.dtype(np.int8))
    labels, codes = _labels(ps, x_label)
    launching = _joined([p.launching for p in ps], np.zeros(len(x_src), bool), np.dtype(bool))
    unresolved = _joined([p.unresolved for p in ps], np.zeros(len(x_src), bool), np.dtype(bool))
    n = len(aligned)
    pred = in_edges(n, d_all)
    groups = in_groups(pred)
    binding = np.zeros(len(s_all), bool)
    binding[first_latest_in_edges(pred, lambda e: aligned[s_all[e]], groups)] = True
    gap = aligned[d_all]
    delay = aligned[s_all]  # the sources' times, then the delays in place
    gap -= delay
    np.minimum(gap, 0, out=delay)
    delay[binding] = gap[binding]
    forward = forward_order_of(n, s_all, d_all, aligned, gap)
    starts = [p.step_start + b for p, b in zip(ps, base.tolist(), strict=False)]
    why = measured_why(n, groups, binding, gap, np.concatenate(starts))
    del gap, groups
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
        ranks,
        aligned,
        rank_arr,
        s_all,
        d_all,
        k_all,
        labels,
        codes[0],
        codes[1],
        codes[2],
        codes[3],
        launching,
        unresolved,
        delay,
        binding,
        steps,
        joins,
        offsets,
        forward,
        pred,
        why,
        dropped,
    )


LABEL_FIELDS = ("cause_code", "detail_code", "name_code", "category_code")


def _labels(
    ps: list[RankGraph], extra: list[tuple[str, str, str]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The one label table of the parts and the cross-rank edges' labels *extra* (cause,
    detail, name; category ""), and each label field's codes into it, edge by edge."""
    if len(ps) == 1 and not extra:
        return ps[0].labels, [getattr(ps[0], f) for f in LABEL_FIELDS]
    tables = [p.labels for p in ps]
    strings = [str(x) for t in tables for x in t.tolist()]
    canon, table = distinct(["", *strings, *(x for row in extra for x in row)])
    base = np.cumsum([1, *(len(t) for t in tables)]).tolist()
    codes = []
    for j, f in enumerate(LABEL_FIELDS):
        tail = canon[base[-1] + 3 * np.arange(len(extra)) + j] if j < 3 else np.zeros(len(extra))
        out = np.empty(int(sum(len(p.src) for p in ps)) + len(extra), canon.dtype)
        at = 0
        for p, b in zip(ps, base, strict=False):  # each part's codes into the one table
            c = getattr(p, f)
            out[at : at + len(c)] = canon[b:][c]
            at += len(c)
        out[at:] = tail
        codes.append(out)
    return table, codes


def sync_call(name: str) -> bool:
    return name in SYNC_CALL_NAMES
