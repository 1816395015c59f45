"""The critical path of each step across ranks, cut into segments labelled by cause.

The path of a step is the chain of binding edges (:mod:`analyzers.critical_path.step_graph`)
from the completion node of the step's slowest rank back to that rank's ``ProfilerStep``
start; it crosses ranks through collective joins.  Its segments add up to the step time
exactly.  Causes (``cause``, with ``detail``):

=========================  ===================================================================
``compute``                a GPU kernel's execution (detail: its op category,
                           :func:`analyzers.critical_path.sources.gpu_categories`)
``memory``                 a memcpy / memset
``exposed_communication``  a collective kernel or its transfer (detail: collective)
``late_rank``              on the path through a collective, the stretch the other ranks spent
                           waiting for the last rank to arrive (``rank``; detail: what that rank
                           was doing, the cause it would otherwise have)
``launch_gap``             GPU waiting for its launch: launch latency, stream gaps, and host time
                           of ops that launch GPU work
``synchronisation``        a blocking sync call, the wake-up after the awaited GPU work, and a
                           row waiting on another stream (``cross-stream wait``)
``data_loading``           host ops whose name says data loading (DataLoader, data_load)
``cpu``                    other host time (CPU ops, gaps between ops; ``untracked``: time
                           before work the graph has no predecessor for)
=========================  ===================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzers.critical_path.simulate import run
from analyzers.critical_path.step_graph import KINDS, StepGraph

CAUSES = (
    "compute",
    "memory",
    "exposed_communication",
    "late_rank",
    "launch_gap",
    "synchronisation",
    "data_loading",
    "cpu",
)


@dataclass(frozen=True)
class Segment:
    """One edge of the path: ``[start_ns, end_ns)`` on the aligned clock."""

    rank: int
    start_ns: int
    end_ns: int
    cause: str
    detail: str
    name: str

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class StepPath:
    """A step's path: its ranks' measured times, the slowest rank and the segments."""

    step: int
    rank: int
    duration_ns: int
    rank_durations: dict[int, int]
    segments: list[Segment] = field(default_factory=list)
    unresolved_waits: int = 0
    """Nodes on the path that follow a cross-stream wait the trace does not resolve
    (``wait_on_*`` fields missing): the path may have missed a dependency there."""

    def by_cause(self) -> dict[tuple[str, str, int], int]:
        """``{(cause, detail, rank): ns}`` (rank -1 except for ``late_rank``)."""
        out: dict[tuple[str, str, int], int] = {}
        for s in self.segments:
            k = (s.cause, s.detail, s.rank if s.cause == "late_rank" else -1)
            out[k] = out.get(k, 0) + s.duration_ns
        return out


def step_paths(
    g: StepGraph, measured: tuple[np.ndarray, np.ndarray] | None = None
) -> list[StepPath]:
    """The path of every step (module docstring), steps in number order; *measured*: the
    replay with no change (:func:`analyzers.critical_path.simulate.run`), when already done."""
    times, why = measured if measured is not None else run(g)
    per_step: dict[int, list[tuple[int, int, int]]] = {}
    for st in g.steps:
        per_step.setdefault(st.num, []).append((st.rank, st.start, st.done))
    out = []
    # the walk reads single elements: Python lists, not numpy scalars (same values)
    t_l, why_l = times.tolist(), why.tolist()
    src_l, kind_l, unres_l = g.src.tolist(), g.kind.tolist(), g.unresolved.tolist()
    rank_l = g.node_rank.tolist()
    cause_l, detail_l, name_l = g.cause.tolist(), g.detail.tolist(), g.name.tolist()
    transfer = KINDS.index("transfer")
    for num in sorted(per_step):
        rows = per_step[num]
        durs = {r: int(t_l[c] - t_l[s]) for r, s, c in rows}
        rank, s_node, c_node = max(rows, key=lambda x: (durs[x[0]], -x[0]))
        path = StepPath(num, rank, durs[rank], durs)
        lo = int(t_l[s_node])
        v = c_node
        segs: list[Segment] = []
        on_path: set[int] = set()
        while v != s_node:
            e = why_l[v]
            if e < 0:  # a node the graph does not explain (no predecessor): untracked time
                if t_l[v] > lo:
                    segs.append(Segment(rank_l[v], lo, t_l[v], "cpu", "untracked", ""))
                break
            u = src_l[e]
            if kind_l[e] == transfer:
                on_path.add(u)
            if unres_l[e]:
                path.unresolved_waits += 1
            a, b = max(t_l[u], lo), t_l[v]
            if b > a:
                r = rank_l[v] if rank_l[v] >= 0 else rank_l[u]
                segs.append(Segment(r, a, b, str(cause_l[e]), str(detail_l[e]), str(name_l[e])))
            if t_l[u] <= lo:
                break
            v = u
        segs.reverse()
        path.segments = _late_rank(g, segs, on_path)
        out.append(path)
    return out


def _late_rank(g: StepGraph, segs: list[Segment], on_path: set[int]) -> list[Segment]:
    """Relabel the parts of segments on a late rank that fall in the window the other ranks
    waited for it (``[arrival − lateness, arrival]``) at a join the path goes through."""
    windows = [
        (j.late_rank, j.arrivals[j.late_rank] - j.lateness_ns, j.arrivals[j.late_rank])
        for j in g.joins
        if j.lateness_ns > 0 and j.node in on_path
    ]
    if not windows:
        return segs
    out: list[Segment] = []
    for s in segs:
        cuts = sorted(
            (max(lo, s.start_ns), min(hi, s.end_ns))
            for r, lo, hi in windows
            if r == s.rank and min(hi, s.end_ns) > max(lo, s.start_ns)
        )
        t = s.start_ns
        for a, b in cuts:
            if a > t:
                out.append(Segment(s.rank, t, a, s.cause, s.detail, s.name))
            a = max(a, t)
            if b > a:
                out.append(Segment(s.rank, a, b, "late_rank", f"{s.cause}: {s.name[:50]}", s.name))
                t = b
        if s.end_ns > t:
            out.append(Segment(s.rank, t, s.end_ns, s.cause, s.detail, s.name))
    return out


def cause_totals(paths: list[StepPath]) -> dict[str, int]:
    """Σ ns per cause over *paths*."""
    out = dict.fromkeys(CAUSES, 0)
    for p in paths:
        for s in p.segments:
            out[s.cause] += s.duration_ns
    return out


def mean(xs: list[int]) -> float:
    return float(np.mean(xs)) if xs else 0.0
