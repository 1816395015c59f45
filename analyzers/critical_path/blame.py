"""The critical path of each step across ranks, cut into segments labelled by cause.

The path of a step is the chain of binding edges (:mod:`analyzers.critical_path.step_graph`)
from the completion node of the step's slowest rank back to that rank's ``ProfilerStep``
start; it crosses ranks through collective joins.  Its segments add up to the step time
exactly.  Causes (``cause``, with ``detail``):

=========================  ===================================================================
``compute``                a GPU kernel's execution (detail: :func:`kernel_category`)
``memory``                 a memcpy / memset
``exposed_communication``  a collective kernel or its transfer (detail: collective)
``late_rank``              on the path through a collective, the stretch the other ranks spent
                           waiting for the last rank to arrive (``rank``; detail: what that rank
                           was doing, the cause it would otherwise have)
``launch_gap``             GPU waiting for its launch: launch latency, stream gaps, and host time
                           of ops that launch GPU work
``synchronisation``        a blocking sync call, and the wake-up after the awaited GPU work
``data_loading``           host ops whose name says data loading (DataLoader, data_load)
``cpu``                    other host time (CPU ops, gaps between ops; ``untracked``: time
                           before work the graph has no predecessor for)
=========================  ===================================================================
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from analyzers.critical_path.simulate import run
from analyzers.critical_path.sources import kernel_category
from analyzers.critical_path.step_graph import KINDS, StepGraph, sync_call

DATA_LOADING = re.compile(r"DataLoader|data_load|dataloader|_next_data|fetch", re.I)
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

    def by_cause(self) -> dict[tuple[str, str, int], int]:
        """``{(cause, detail, rank): ns}`` (rank -1 except for ``late_rank``)."""
        out: dict[tuple[str, str, int], int] = {}
        for s in self.segments:
            k = (s.cause, s.detail, s.rank if s.cause == "late_rank" else -1)
            out[k] = out.get(k, 0) + s.duration_ns
        return out


@functools.lru_cache(maxsize=65536)
def _data_loading(name: str) -> bool:
    return DATA_LOADING.search(name) is not None


def _label(g: StepGraph, e: int) -> tuple[str, str, str]:
    kind = KINDS[int(g.kind[e])]
    u, v = int(g.src[e]), int(g.dst[e])
    rank = int(g.node_rank[v] if g.node_rank[v] >= 0 else g.node_rank[u])
    part = g.ranks_by_id.get(rank)
    ev_pos = int(g.node_event[v] if g.node_event[v] >= 0 else g.node_event[u])
    name = str(part.ev.name[ev_pos]) if part is not None and ev_pos >= 0 else ""
    if kind in ("gpu", "transfer"):
        cat = kernel_category(name)
        if cat == "communication" or kind == "transfer":
            return "exposed_communication", name.split("(")[0][:60], name
        if cat == "memory":
            return "memory", name.split(" (")[0], name
        return "compute", cat, name
    if kind in ("launch", "stream"):
        return "launch_gap", kind, name
    if kind == "sync":
        return "synchronisation", name, name
    if kind in ("arrive", "complete"):
        return "cpu", kind, name
    # host edge: the time belongs to the op it ends in (or the parent op between siblings)
    if part is None or ev_pos < 0:
        return "cpu", "", name
    if sync_call(name):
        return "synchronisation", name, name
    if _data_loading(name):
        return "data_loading", name, name
    ev_u = int(g.node_event[u])
    in_step = part.is_step[ev_pos] or part.is_step[ev_u]
    if part.launches_gpu[ev_pos] and part.launches_gpu[ev_u] and not in_step:
        return "launch_gap", "host", name
    return "cpu", "", name


def step_paths(g: StepGraph) -> list[StepPath]:
    """The path of every step (module docstring), steps in number order."""
    times, why = run(g)
    per_step: dict[int, list[tuple[int, int, int, int]]] = {}
    for p in g.ranks:
        for num, s, node, _ in p.steps:
            per_step.setdefault(num, []).append((p.rank, int(p.start[s]), node, 0))
    out = []
    t_list, why_list = times.tolist(), why.tolist()  # the walk reads them one by one
    src, kind, node_rank = g.src.tolist(), g.kind.tolist(), g.node_rank.tolist()
    for num in sorted(per_step):
        rows = per_step[num]
        durs = {r: int(times[c] - times[s]) for r, s, c, _ in rows}
        rank, s_node, c_node, _ = max(rows, key=lambda x: (durs[x[0]], -x[0]))
        path = StepPath(num, rank, durs[rank], durs)
        lo = int(times[s_node])
        v = c_node
        segs: list[Segment] = []
        on_path: set[int] = set()
        while v != s_node:
            e = why_list[v]
            if e < 0:  # a node the graph does not explain (no predecessor): untracked time
                if t_list[v] > lo:
                    r = node_rank[v]
                    segs.append(Segment(r, lo, t_list[v], "cpu", "untracked", ""))
                break
            u = src[e]
            if KINDS[kind[e]] == "transfer":
                on_path.add(u)
            a, b = max(t_list[u], lo), t_list[v]
            if b > a:
                cause, detail, name = _label(g, e)
                r = node_rank[v] if node_rank[v] >= 0 else node_rank[u]
                segs.append(Segment(r, a, b, cause, detail, name))
            if t_list[u] <= lo:
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
