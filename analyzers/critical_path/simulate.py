"""What-if replays of a :class:`StepGraph` (docs/critical-path.md §4).

A change rewrites edge delays and the graph is replayed (:func:`analyzers.critical_path.replay.
replay_with`): nodes without predecessors keep their measured time, every other node starts at the
latest of its predecessors plus delay.  A step's predicted time is, over its ranks, the largest
``completion − ProfilerStep start``; with no change it equals the measured one exactly.

Changes (:class:`Change`; each states its assumptions in :attr:`Change.assumptions`):

* ``faster``: GPU rows of one op category run ``factor`` times faster;
* ``rank_on_time``: the rank that arrived last at a collective arrives with the others — the
  stretch of its critical path that the other ranks spent waiting is removed;
* ``cuda_graphs``: the work is replayed from a CUDA graph — the host time of ops that launch GPU
  work is gone, and every launch and stream-order edge keeps ``min(measured gap, node_ns)``
  (:data:`GRAPH_NODE_NS`: the per-node cost a graph replay keeps): a row that waited for its
  launch now starts ``node_ns`` after its stream predecessor, one that ran back to back stays so;
  a row that follows a cross-stream wait the trace does not resolve keeps its measured gaps (it
  may have waited for another stream, which a graph does not remove);
* ``overlap_comm``: communication fully overlapped — collective kernels and transfers take no
  time on the path (arrival waits stay);
* ``busbw``: every matched collective takes ``S × factor / busbw`` (nccl-tests' bus bandwidth
  definition) after its last rank arrived, at ``busbw_gbps``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.critical_path.replay import replay_with
from analyzers.critical_path.step_graph import KINDS, StepGraph

GRAPH_NODE_NS = 1_000
"""Per-node cost of a CUDA-graph replay kept by the ``cuda_graphs`` what-if: a replayed row that
waited for its launch starts 1 µs after its stream predecessor ended (or after its launch).  An
assumed figure, of the order of the kernel-to-kernel gap of graph replays on current NVIDIA GPUs
(not measured by gpuscope); :class:`Change` ``node_ns`` sets another."""

ASSUMPTIONS = {
    "faster": "only kernels of this category run faster; they keep their order and streams, "
    "nothing else speeds up or waits less",
    "rank_on_time": "the rank's own work in the stretch the others waited for it is removed; "
    "its work before that window and every other rank are unchanged",
    "cuda_graphs": "every op that launches GPU work is captured: its host time is gone; a GPU row "
    "that waited for its launch still starts {node_us:g} µs after its stream predecessor (the "
    "per-node cost of a graph replay, assumed); host work outside launching ops and the gaps "
    "before rows that follow an unresolved cross-stream wait stay",
    "overlap_comm": "collective kernels and transfers take no time on the path; ranks still wait "
    "for the last one to arrive, and compute does not slow down from sharing the GPU",
    "busbw": "each matched collective ends S × bus factor / {busbw:g} GB/s after its last rank "
    "arrived (nccl-tests' busbw definition; S = the message size the trace records)",
    "none": "the measured graph",
}
"""What each what-if assumes (printed beside it in the console, the JSON and the report)."""


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
    node_ns: int = GRAPH_NODE_NS
    """``cuda_graphs``: the per-node cost a graph replay keeps (ns)."""

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

    @property
    def assumptions(self) -> str:
        """What the prediction assumes (:data:`ASSUMPTIONS`)."""
        text = ASSUMPTIONS.get(self.kind, ASSUMPTIONS["none"])
        return text.format(node_us=self.node_ns / 1000, busbw=self.busbw_gbps)


def anchors(g: StepGraph) -> np.ndarray:
    """Measured time for nodes without predecessors and for step starts (a what-if applies
    to each step as it started), else no anchor (:attr:`StepGraph.anchor`)."""
    return g.anchor


def run(g: StepGraph, change: Change | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Node times and binding edges after *change* (None: the measured graph, whose replay is
    computed once: :attr:`StepGraph.measured`, read-only)."""
    if change is None:
        return g.measured
    times, why = replay_with(g.replay_plan, delays(g, change))
    assert why is not None
    return times, why


def run_times(g: StepGraph, change: Change) -> np.ndarray:
    """Node times after *change* (:func:`run` without the binding edges)."""
    return replay_with(g.replay_plan, delays(g, change), binding=False)[0]


def delays(g: StepGraph, c: Change) -> np.ndarray:
    """The edge delays under change *c* (integer ns: a scaled delay rounded half to even)."""
    if c.kind == "cuda_graphs" and not float(c.node_ns).is_integer():
        d = g.delay.astype(np.float64)  # a fractional node cost, rounded at the end
    else:
        d = g.delay.copy()
    kind = g.kind
    gpu = kind == KINDS.index("gpu")
    if c.kind == "faster":
        hit = np.flatnonzero(gpu & g.label_is(g.category_code, c.category) & g.binding)
        d[hit] = np.round(d[hit] / c.factor)
    elif c.kind == "cuda_graphs":
        gaps = (kind == KINDS.index("launch")) | (kind == KINDS.index("stream"))
        gaps = np.flatnonzero(gaps & ~g.unresolved)  # a wait on another stream stays
        gap = g.node_time[g.dst[gaps]] - g.node_time[g.src[gaps]]
        d[gaps] = np.minimum(np.maximum(gap, np.minimum(d[gaps], 0)), c.node_ns)
        d[g.launching] = np.minimum(d[g.launching], 0)
    elif c.kind == "overlap_comm":
        comm = gpu & g.label_is(g.category_code, "communication")
        d[comm] = np.minimum(d[comm], 0)
        tr = kind == KINDS.index("transfer")
        d[tr] = np.minimum(d[tr], 0)
    elif c.kind == "busbw":
        new = dict(c.transfer_ns)
        for j in g.joins:
            if j.node not in new:
                continue
            k = list(j.kernel_edges)
            d[k] = np.minimum(d[k], 0)
            d[list(j.transfer_edges)] = np.round(new[j.node])
    elif c.kind == "rank_on_time":
        _rank_on_time(g, c.rank, d)
    return d if d.dtype == np.int64 else np.round(d).astype(np.int64)


def _rank_on_time(g: StepGraph, rank: int, d: np.ndarray) -> None:
    """Shrink, for every join where *rank* arrived last by ``lateness``, the binding edges of
    its path back from its arrival by their overlap with ``[arrival − lateness, arrival]``."""
    _, why = run(g)
    for j in g.joins:
        if j.late_rank != rank or j.lateness_ns <= 0:
            continue
        hi = j.arrivals[rank]
        lo = hi - j.lateness_ns
        ptr, edges, _ = g.pred
        into = edges[ptr[j.node] : ptr[j.node + 1]]
        e_in = [int(e) for e in into[g.node_rank[g.src[into]] == rank]]
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
    for st in g.steps:
        out.setdefault(st.num, {})[st.rank] = int(times[st.done] - times[st.start])
    return out


def job_step_times(g: StepGraph, times: np.ndarray) -> dict[int, int]:
    """Per step, the slowest rank's step time (the job waits for it)."""
    return {k: max(v.values()) for k, v in step_times(g, times).items()}
