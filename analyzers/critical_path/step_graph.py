"""The multi-rank dependency graph the simulator replays (docs/critical-path.md "Step graph").

Nodes are the start and end of each rank's host ops (CPU ops, runtime/driver calls and the
``ProfilerStep`` ranges, positive duration), its GPU rows with a stream (kernels, copies, sets),
one *join* node per collective matched across ranks, and one *completion* node per (rank, step).
Edges (``kind``):

=============  ==================================================================
``host``       call-stack order on a thread: the previous node of HTA's walk → the next
``gpu``        a GPU row's start → its end
``stream``     the previous row on the stream's end → the row's start
``launch``     the launching call's start → the GPU row's start
``sync``       the awaited GPU row's end → a blocking call's end (Stream/Context/Event Sync)
``arrive``     a rank's collective kernel start → the join (clock offset applied)
``transfer``   the join → each rank's collective kernel end
``complete``   the step's ``ProfilerStep`` end and its GPU rows' ends → the completion node
=============  ==================================================================

Every node's *binding* in-edge is the one from the predecessor that happened last; it gets the
measured gap as delay, the others ``min(0, gap)``.  Replaying the delays therefore reproduces
every measured time exactly, and a change to the delays moves only what depended on it.  Times
are aligned across ranks by one offset per rank: the median of the differences of the matched
collectives' kernel ends (a collective ends together on every rank).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.critical_path.callstack import thread_walks
from analyzers.critical_path.events import LAUNCH_NAMES, NODE_CATS, Events, build_events
from analyzers.critical_path.paths import topological_order
from analyzers.critical_path.sources import collectives_of, kernel_category

if TYPE_CHECKING:
    from collectors.model import Trace

KINDS = ("host", "gpu", "stream", "launch", "sync", "arrive", "transfer", "complete")
STEP_RE_PREFIX = "ProfilerStep#"
SYNC_CALL_NAMES = frozenset(
    {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}
)


@dataclass
class RankPart:
    """One rank's events and the node ids of their start / end (-1 when not a node)."""

    rank: int
    ev: Events
    start: np.ndarray
    end: np.ndarray
    launches_gpu: np.ndarray
    """Host events that are, or contain, a launch call."""
    is_step: np.ndarray
    """``ProfilerStep#N`` host events."""
    steps: list[tuple[int, int, int, int]]
    """(step number, ProfilerStep event, completion node, measured completion ns)."""


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


@dataclass
class StepGraph:
    """All ranks' nodes and edges (module docstring) with the measured times."""

    ranks: list[RankPart]
    node_time: np.ndarray
    """Measured time of each node on the aligned clock (ns)."""
    node_rank: np.ndarray
    node_event: np.ndarray
    """Event position in its rank's :class:`Events` (-1 for join / completion nodes)."""
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    """Index into :data:`KINDS`."""
    delay: np.ndarray
    binding: np.ndarray
    """True for each node's binding in-edge."""
    joins: list[Join]
    offsets: dict[int, int]
    topo: list[int]
    pred: list[list[tuple[int, int]]]
    measured_replay: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    """The replay with no change (:func:`analyzers.critical_path.simulate.run`), once computed."""

    def category(self, e: int) -> str:
        """kernel_category of the GPU row of a ``gpu`` edge."""
        r = self.ranks_by_id[int(self.node_rank[self.src[e]])]
        return kernel_category(str(r.ev.name[int(self.node_event[self.src[e]])]))

    @functools.cached_property
    def ranks_by_id(self) -> dict[int, RankPart]:
        return {p.rank: p for p in self.ranks}


class _Builder:
    def __init__(self) -> None:
        self.t: list[int] = []
        self.rank: list[int] = []
        self.event: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.kind: list[int] = []

    def nodes(self, times: np.ndarray, rank: int, events: np.ndarray) -> np.ndarray:
        base = len(self.t)
        self.t.extend(times.tolist())
        self.rank.extend([rank] * len(times))
        self.event.extend(events.tolist())
        return np.arange(base, base + len(times), dtype=np.int64)

    def edges(self, u: np.ndarray | list[int], v: np.ndarray | list[int], kind: str) -> None:
        uu, vv = np.asarray(u, np.int64), np.asarray(v, np.int64)
        ok = (uu >= 0) & (vv >= 0) & (uu != vv)
        self.src.extend(uu[ok].tolist())
        self.dst.extend(vv[ok].tolist())
        self.kind.extend([KINDS.index(kind)] * int(ok.sum()))


def _step_numbers(ev: Events, host_steps: np.ndarray) -> list[int]:
    out = []
    for s in ev.name[host_steps].tolist():
        tail = s[len(STEP_RE_PREFIX) :]
        out.append(int(tail) if tail.isdigit() else -1)
    return out


def _rank_part(b: _Builder, trace: Trace) -> RankPart:
    ev = build_events(trace)
    dur = ev.end - ev.ts
    is_step = ev.is_host & np.array([s.startswith(STEP_RE_PREFIX) for s in ev.name.tolist()])
    host = ev.is_host & (dur > 0) & (np.isin(ev.cat, NODE_CATS) | is_step)
    gpu = ~ev.is_host & (ev.stream >= 0) & np.isin(ev.cat, ("kernel", "gpu_memcpy", "gpu_memset"))
    members = np.flatnonzero(host | gpu)
    start = np.full(len(ev), -1, np.int64)
    end = np.full(len(ev), -1, np.int64)
    start[members] = b.nodes(ev.ts[members], trace.rank, members)
    end[members] = b.nodes(ev.end[members], trace.rank, members)
    launches_gpu = np.zeros(len(ev), bool)
    is_launch = np.isin(ev.name, list(LAUNCH_NAMES))
    for walk in thread_walks(ev.ts, ev.end, ev.order, ev.pid, ev.tid, np.flatnonzero(host)):
        last = -1
        stack: list[int] = []
        us: list[int] = []
        vs: list[int] = []
        for e, entering, _parent in walk:
            node = int(start[e] if entering else end[e])
            if entering:
                stack.append(e)
                if is_launch[e]:
                    launches_gpu[stack] = True
            elif stack:
                stack.pop()
            us.append(last)
            vs.append(node)
            last = node
        b.edges(us, vs, "host")
    g_rows = np.flatnonzero(gpu)
    b.edges(start[g_rows], end[g_rows], "gpu")
    order = g_rows[np.lexsort((ev.ts[g_rows], ev.stream[g_rows], ev.pid[g_rows]))]
    same = (ev.stream[order][1:] == ev.stream[order][:-1]) & (
        ev.pid[order][1:] == ev.pid[order][:-1]
    )
    b.edges(end[order][:-1][same], start[order][1:][same], "stream")
    lk = ev.link[g_rows]
    b.edges(np.where(lk >= 0, start[np.maximum(lk, 0)], -1), start[g_rows], "launch")
    _sync_edges(b, ev, start, end, order)
    steps: list[tuple[int, int, int, int]] = []
    host_steps = np.flatnonzero(is_step & host)
    host_steps = host_steps[np.argsort(ev.ts[host_steps], kind="stable")]
    launch_of = np.where(lk >= 0, ev.ts[np.maximum(lk, 0)], -1)
    for num, s, rows in zip(
        _step_numbers(ev, host_steps),
        host_steps.tolist(),
        _launched_in(launch_of, ev.ts[host_steps], ev.end[host_steps]),
        strict=True,
    ):
        ends = np.concatenate([[end[s]], end[g_rows[rows]]])
        done = int(max(ev.end[s], ev.end[g_rows[rows]].max(initial=ev.end[s])))
        node = int(b.nodes(np.array([done]), trace.rank, np.array([-1]))[0])
        b.edges(ends, np.full(len(ends), node), "complete")
        steps.append((num, s, node, done))
    return RankPart(trace.rank, ev, start, end, launches_gpu, is_step, steps)


def _launched_in(t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[np.ndarray]:
    """Per window ``[lo[i], hi[i])`` (sorted by *lo*), the positions of *t* inside it, in
    order.  Disjoint windows (ProfilerSteps) take one ``searchsorted`` for all; overlapping
    ones are scanned one by one."""
    if len(lo) and bool((hi[:-1] <= lo[1:]).all()):
        k = np.searchsorted(lo, t, side="right") - 1
        inside = (k >= 0) & (t < hi[np.maximum(k, 0)])
        pos = np.flatnonzero(inside)
        by = k[pos]  # ascending positions, grouped by window in a stable sort
        pos = pos[np.argsort(by, kind="stable")]
        cuts = np.searchsorted(np.sort(by), np.arange(1, len(lo)))
        return np.split(pos, cuts)
    return [np.flatnonzero((t >= a) & (t < z)) for a, z in zip(lo, hi, strict=True)]


def _sync_edges(
    b: _Builder, ev: Events, start: np.ndarray, end: np.ndarray, order: np.ndarray
) -> None:
    """Awaited GPU row's end → the blocking call's end: per Stream/Context Sync row, the rows on
    its stream (all streams of the device) that ended last before the sync ended."""
    syncs = np.flatnonzero((ev.cat == "cuda_sync") & (ev.link >= 0))
    us: list[int] = []
    vs: list[int] = []
    for r in syncs.tolist():
        call = int(ev.link[r])
        if end[call] < 0 or ev.name[r] not in ("Stream Sync", "Context Sync"):
            continue
        cand = order[(ev.pid[order] == ev.pid[r]) & (ev.end[order] <= ev.end[r])]
        if ev.name[r] == "Stream Sync":
            cand = cand[ev.stream[cand] == ev.stream[r]]
        for s in np.unique(ev.stream[cand]).tolist():
            c = cand[ev.stream[cand] == s]
            if len(c):
                us.append(int(end[c[np.argmax(ev.end[c])]]))
                vs.append(int(end[call]))
    b.edges(us, vs, "sync")


def _collective_rows(part: RankPart, trace: Trace) -> list[tuple[str, int, str, dict[str, float]]]:
    """(match key, GPU event position, collective, size facts) of the rank's collectives, in
    issue order; keys are ``pg#seqN`` when the rank records ``Seq``, else ``pg#ordinal``."""
    c = collectives_of(trace)
    if c is None or not len(c):
        return []
    out = []
    counts: dict[str, int] = {}
    cols = c.sort_values("start_ns", kind="stable")
    row: Any
    for row in cols.itertuples(index=False):
        pg = str(row.pg_name) if isinstance(row.pg_name, str) else "?"
        n = counts.get(pg, 0)
        counts[pg] = n + 1
        key = f"{pg}#seq{row.seq}" if int(row.seq) >= 0 else f"{pg}#{n}"
        pos = part.ev.n_host + int(row.gpu_row)
        facts = {
            "message_bytes": float(row.message_bytes),
            "group_size": float(row.group_size),
            "link_peak_gbps": float(row.link_peak_gbps),
        }
        out.append((key, pos, str(row.collective), facts))
    return out


def build_step_graph(traces: Sequence[Trace]) -> StepGraph:
    """The graph of *traces* (one per rank) with measured delays (module docstring)."""
    b = _Builder()
    parts = [_rank_part(b, t) for t in traces]
    coll = {p.rank: _collective_rows(p, t) for p, t in zip(parts, traces, strict=True)}
    by_key: dict[str, dict[int, tuple[int, str]]] = {}
    facts: dict[str, dict[str, float]] = {}
    for rank, rows in coll.items():
        for key, pos, name, f in rows:
            by_key.setdefault(key, {})[rank] = (pos, name)
            facts.setdefault(key, f)
    matched = {k: v for k, v in by_key.items() if len(v) >= 2}
    offsets = _offsets(parts, matched)
    t_local = np.asarray(b.t, np.int64)
    rank_arr = np.asarray(b.rank, np.int64)
    joins: list[Join] = []
    pmap = {p.rank: p for p in parts}
    for key, per in matched.items():
        arrivals = {r: int(pmap[r].ev.ts[pos]) + offsets[r] for r, (pos, _) in per.items()}
        late = max(arrivals, key=lambda r: (arrivals[r], -r))
        others = [a for r, a in arrivals.items() if r != late]
        node = int(b.nodes(np.array([arrivals[late]]), -1, np.array([-1]))[0])
        b.edges(
            [int(pmap[r].start[pos]) for r, (pos, _) in per.items()], [node] * len(per), "arrive"
        )
        b.edges(
            [node] * len(per), [int(pmap[r].end[pos]) for r, (pos, _) in per.items()], "transfer"
        )
        f = facts[key]
        joins.append(
            Join(
                node,
                key,
                next(iter(per.values()))[1],
                sorted(per),
                late,
                arrivals[late] - max(others),
                arrivals,
                f["message_bytes"],
                f["group_size"],
                f["link_peak_gbps"],
            )
        )
    t_all = np.asarray(b.t, np.int64)
    rank_arr = np.asarray(b.rank, np.int64)
    ranks_seen = np.unique(rank_arr)
    per_rank = np.array([offsets.get(int(r), 0) if r >= 0 else 0 for r in ranks_seen], np.int64)
    off = per_rank[np.searchsorted(ranks_seen, rank_arr)] if len(rank_arr) else rank_arr.copy()
    aligned = t_all + off
    aligned[len(t_local) :] = t_all[len(t_local) :]  # join nodes are on the aligned clock
    src, dst = np.asarray(b.src, np.int64), np.asarray(b.dst, np.int64)
    kind = np.asarray(b.kind, np.int64)
    gap = aligned[dst] - aligned[src]
    binding = np.zeros(len(src), bool)
    if len(src):
        seq = np.lexsort((-aligned[src], dst))
        first = np.r_[True, dst[seq][1:] != dst[seq][:-1]]
        binding[seq[first]] = True
    delay = np.where(binding, gap, np.minimum(gap, 0))
    n = len(aligned)
    topo = topological_order(n, src, dst)
    pred: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (u, v) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        pred[v].append((u, e))
    return StepGraph(
        parts,
        aligned,
        rank_arr,
        np.asarray(b.event, np.int64),
        src,
        dst,
        kind,
        delay,
        binding,
        joins,
        offsets,
        topo,
        pred,
    )


def _offsets(
    parts: list[RankPart], matched: dict[str, dict[int, tuple[int, str]]]
) -> dict[int, int]:
    """Per rank, the clock offset onto the first rank's clock: the median over matched
    collectives of (first rank's kernel end − this rank's kernel end); 0 when unmatched."""
    if not parts:
        return {}
    ref = parts[0].rank
    pmap = {p.rank: p for p in parts}
    out = {ref: 0}
    for p in parts[1:]:
        diffs = [
            int(pmap[ref].ev.end[per[ref][0]]) - int(p.ev.end[per[p.rank][0]])
            for per in matched.values()
            if ref in per and p.rank in per
        ]
        out[p.rank] = int(np.median(diffs)) if diffs else 0
    return out


def sync_call(name: str) -> bool:
    return name in SYNC_CALL_NAMES
