"""What-if replays of a :class:`StepGraph` (docs/critical-path.md "Simulator").

A change rewrites edge delays and the graph is replayed (:func:`analyzers.critical_path.paths.
replay`): nodes without predecessors keep their measured time, every other node starts at the
latest of its predecessors plus delay.  A step's predicted time is, over its ranks, the largest
``completion − ProfilerStep start``; with no change it equals the measured one exactly.

Changes (:class:`Change`):

* ``faster``: GPU rows of one :func:`kernel_category` run ``factor`` times faster;
* ``rank_on_time``: the rank that arrived last at a collective arrives with the others — the
  stretch of its critical path that the other ranks spent waiting is removed;
* ``cuda_graphs``: launch gaps closed — launch and stream-order edges carry no delay, and the
  host time of ops that launch GPU work is gone (captured into one graph launch);
* ``overlap_comm``: communication fully overlapped — collective kernels and transfers take no
  time on the path (arrival waits stay);
* ``busbw``: every matched collective's transfer takes ``S × factor / busbw`` (nccl-tests' bus
  bandwidth definition) at ``busbw_gbps``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.critical_path.paths import replay
from analyzers.critical_path.step_graph import KINDS, StepGraph

NO_ANCHOR = -(2**62)


@dataclass(frozen=True)
class Change:
    """One what-if (module docstring); ``label`` names it in reports."""

    kind: str
    category: str = ""
    factor: float = 1.0
    rank: int = -1
    busbw_gbps: float = 0.0
    transfer_ns: tuple[tuple[int, int], ...] = ()
    """(join node, new transfer ns) for ``busbw`` (computed by the caller from the message)."""

    @property
    def label(self) -> str:
        if self.kind == "faster":
            return f"{self.category} kernels {self.factor:g}x faster"
        if self.kind == "rank_on_time":
            return f"rank {self.rank} on time at collectives"
        if self.kind == "cuda_graphs":
            return "launch gaps closed (CUDA graphs)"
        if self.kind == "overlap_comm":
            return "communication fully overlapped"
        if self.kind == "busbw":
            return f"collectives at {self.busbw_gbps:g} GB/s bus bandwidth"
        return "no change"


def anchors(g: StepGraph) -> np.ndarray:
    """Measured time for nodes without predecessors and for step starts (a what-if applies
    to each step as it started), else no anchor."""
    has_pred = np.zeros(len(g.node_time), bool)
    has_pred[g.dst] = True
    out = np.where(has_pred, NO_ANCHOR, g.node_time)
    for p in g.ranks:
        for _num, s, _node, _done in p.steps:
            out[int(p.start[s])] = g.node_time[int(p.start[s])]
    return out


def run(g: StepGraph, change: Change | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Node times and binding edges after *change* (None: the measured graph, replayed once
    per graph and reused; the arrays are read-only)."""
    if change is None:
        if g.measured_replay is None:
            times, why = replay(len(g.node_time), g.topo, g.pred, g.delay.copy(), anchors(g))
            times.flags.writeable = False
            why.flags.writeable = False
            g.measured_replay = (times, why)
        return g.measured_replay
    return replay(len(g.node_time), g.topo, g.pred, delays(g, change), anchors(g))


def delays(g: StepGraph, c: Change) -> np.ndarray:
    """The edge delays under change *c*."""
    d = g.delay.astype(np.float64)
    kind = g.kind
    if c.kind == "faster":
        gpu = np.flatnonzero(kind == KINDS.index("gpu"))
        hit = gpu[[g.category(int(e)) == c.category for e in gpu.tolist()]]
        d[hit] = np.where(g.binding[hit], d[hit] / c.factor, d[hit])
    elif c.kind == "cuda_graphs":
        d[(kind == KINDS.index("launch")) | (kind == KINDS.index("stream"))] = np.minimum(
            d[(kind == KINDS.index("launch")) | (kind == KINDS.index("stream"))], 0
        )
        host = np.flatnonzero(kind == KINDS.index("host"))
        launching = np.zeros(len(host), bool)
        for p in g.ranks:
            mine = g.node_rank[g.dst[host]] == p.rank
            ev_u = g.node_event[g.src[host[mine]]]
            ev_v = g.node_event[g.dst[host[mine]]]
            launching[np.flatnonzero(mine)] = p.launches_gpu[ev_u] & p.launches_gpu[ev_v]
        d[host[launching]] = np.minimum(d[host[launching]], 0)
    elif c.kind == "overlap_comm":
        gpu = np.flatnonzero(kind == KINDS.index("gpu"))
        comm = gpu[[g.category(int(e)) == "communication" for e in gpu.tolist()]]
        d[comm] = np.minimum(d[comm], 0)
        tr = kind == KINDS.index("transfer")
        d[tr] = np.minimum(d[tr], 0)
    elif c.kind == "busbw":
        new = dict(c.transfer_ns)
        for e in np.flatnonzero(kind == KINDS.index("transfer")).tolist():
            j = int(g.src[e])
            if j in new and g.binding[e]:
                d[e] = new[j]
    elif c.kind == "rank_on_time":
        _rank_on_time(g, c.rank, d)
    return np.round(d).astype(np.int64)


def _rank_on_time(g: StepGraph, rank: int, d: np.ndarray) -> None:
    """Shrink, for every join where *rank* arrived last by ``lateness``, the binding edges of
    its path back from its arrival by their overlap with ``[arrival − lateness, arrival]``."""
    _, why = run(g)
    for j in g.joins:
        if j.late_rank != rank or j.lateness_ns <= 0:
            continue
        hi = j.arrivals[rank]
        lo = hi - j.lateness_ns
        e_in = [e for u, e in g.pred[j.node] if g.node_rank[u] == rank]
        v = int(g.src[e_in[0]]) if e_in else -1
        while v >= 0 and g.node_time[v] > lo and g.node_rank[v] == rank:
            e = int(why[v])
            if e < 0:
                break
            u = int(g.src[e])
            overlap = min(int(g.node_time[v]), hi) - max(int(g.node_time[u]), lo)
            if overlap > 0:
                d[e] -= min(overlap, d[e]) if d[e] > 0 else 0
            v = u


def step_times(g: StepGraph, times: np.ndarray) -> dict[int, dict[int, int]]:
    """``{step: {rank: completion − ProfilerStep start}}`` for node *times*."""
    out: dict[int, dict[int, int]] = {}
    for p in g.ranks:
        for num, s, node, _done in p.steps:
            out.setdefault(num, {})[p.rank] = int(times[node] - times[int(p.start[s])])
    return out


def job_step_times(g: StepGraph, times: np.ndarray) -> dict[int, int]:
    """Per step, the slowest rank's step time (the job waits for it)."""
    return {k: max(v.values()) for k, v in step_times(g, times).items()}
