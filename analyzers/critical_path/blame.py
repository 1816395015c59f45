"""The critical path of each step across ranks, cut into segments labelled by cause.

The path of a step is the chain of binding edges (:mod:`analyzers.critical_path.step_graph`)
from the completion node of the step's slowest rank back to that rank's ``ProfilerStep``
start; it crosses ranks through collective joins.  Its segments add up to the step time
exactly.  Causes (``cause``, with ``detail``):

=========================  ===================================================================
``compute``                a GPU kernel's execution (detail: its op category,
                           :func:`analyzers.critical_path.sources.gpu_category_codes`)
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

import bisect
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analyzers.critical_path.labels import Labelled, distinct
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


@dataclass(frozen=True)
class Segments(Labelled):
    """A path's segments as columns (one entry per :class:`Segment`, in path order), their
    labels as codes into a table of distinct strings (:attr:`cause` / :attr:`detail` /
    :attr:`name` give the strings)."""

    rank: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    labels: np.ndarray
    """The distinct label strings (object array)."""
    cause_code: np.ndarray
    detail_code: np.ndarray
    name_code: np.ndarray

    def __len__(self) -> int:
        return len(self.rank)

    @property
    def duration_ns(self) -> np.ndarray:
        return self.end_ns - self.start_ns

    def rows(self, pick: np.ndarray | None = None) -> list[Segment]:
        """The segments as :class:`Segment` objects (those at *pick* only, in its order)."""
        sel = slice(None) if pick is None else pick
        lab = self.labels
        cols = (
            self.rank[sel],
            self.start_ns[sel],
            self.end_ns[sel],
            lab[self.cause_code[sel]],
            lab[self.detail_code[sel]],
            lab[self.name_code[sel]],
        )
        return [Segment(*r) for r in zip(*(c.tolist() for c in cols), strict=True)]

    @classmethod
    def of(cls, segs: list[Segment]) -> Segments:
        strings = [x for s in segs for x in (s.cause, s.detail, s.name)]
        canon, table = distinct(strings)
        return cls(
            np.asarray([s.rank for s in segs], np.int64),
            np.asarray([s.start_ns for s in segs], np.int64),
            np.asarray([s.end_ns for s in segs], np.int64),
            table,
            canon[0::3],
            canon[1::3],
            canon[2::3],
        )

    def key_totals(self) -> dict[tuple[str, str, int], int]:
        """``{(cause, detail, rank): Σ ns}`` (rank -1 except for ``late_rank``), keys in the
        order of their first segment (grouped by codes: the table's strings are distinct)."""
        if not len(self):
            return {}
        late = (self.labels == "late_rank")[self.cause_code]
        rank = np.where(late, self.rank, -1)
        key = self.cause_code.astype(np.int64) * len(self.labels) + self.detail_code
        if late.any():
            ranks, rank_at = np.unique(rank, return_inverse=True)
            key = key * len(ranks) + rank_at.reshape(-1)
        group, _ = pd.factorize(key)  # numbered in the order of their first segment
        sums = _group_sums(group, self.duration_ns)
        top = np.maximum.accumulate(group)
        f = np.flatnonzero(np.r_[True, top[1:] > top[:-1]])  # each group's first segment
        c = self.labels[self.cause_code[f]].tolist()
        d = self.labels[self.detail_code[f]].tolist()
        return {
            (str(ci), str(di), int(r)): int(x)
            for ci, di, r, x in zip(c, d, rank[f].tolist(), sums.tolist(), strict=True)
        }


def _group_sums(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ *values* (int64) per group ``0..max(group)``, exactly: a float ``bincount`` where
    the values are ≥ 0 and every partial sum stays below 2**53 (each then exact), else
    ``np.add.at``."""
    n = int(group.max()) + 1
    if int(values.max()) * len(values) < 2**53 and int(values.min()) >= 0:
        return np.bincount(group, weights=values, minlength=n).astype(np.int64)
    sums = np.zeros(n, np.int64)
    np.add.at(sums, group, values)
    return sums


@dataclass
class StepPath:
    """A step's path: its ranks' measured times, the slowest rank and the segments."""

    step: int
    rank: int
    duration_ns: int
    rank_durations: dict[int, int]
    table: Segments | None = None
    """The segments, in path order (:attr:`segments` as objects)."""
    unresolved_waits: int = 0
    """Nodes on the path that follow a cross-stream wait the trace does not resolve
    (``wait_on_*`` fields missing): the path may have missed a dependency there."""
    _by_cause: dict[tuple[str, str, int], int] | None = field(default=None, repr=False)

    @property
    def segments(self) -> list[Segment]:
        return self.table.rows() if self.table is not None else []

    @property
    def n_segments(self) -> int:
        return len(self.table) if self.table is not None else 0

    def longest(self, k: int) -> list[Segment]:
        """The *k* longest segments, longest first (ties in path order): the stable sort by
        duration of the segments at least as long as the *k*-th longest only."""
        if self.table is None:
            return []
        d = self.table.duration_ns
        cand = np.arange(len(d))
        if 0 < k < len(d):
            cand = np.flatnonzero(d >= np.partition(d, len(d) - k)[len(d) - k])
        pick = cand[np.argsort(-d[cand], kind="stable")[:k]]
        return self.table.rows(pick)

    def by_cause(self) -> dict[tuple[str, str, int], int]:
        """``{(cause, detail, rank): ns}`` (rank -1 except for ``late_rank``), keys in the order
        of their first segment (computed once)."""
        if self._by_cause is None:
            self._by_cause = self.table.key_totals() if self.table is not None else {}
        return dict(self._by_cause)


def step_paths(
    g: StepGraph, measured: tuple[np.ndarray, np.ndarray] | None = None
) -> list[StepPath]:
    """The path of every step (module docstring), steps in number order; *measured*: the
    replay with no change (:func:`analyzers.critical_path.simulate.run`), when already done.

    Walking back from the completion node along each node's binding edge (``why``), an edge
    ``u → v`` gives the segment ``[max(t[u], start), t[v])`` when not empty; the walk stops at
    the step's start node, at the first node whose predecessor is at or before the start, or at
    a node the graph does not explain (no binding edge: the time since the start is
    ``cpu``/``untracked``)."""
    times, why = measured if measured is not None else run(g)
    per_step: dict[int, list[tuple[int, int, int]]] = {}
    for st in g.steps:
        per_step.setdefault(st.num, []).append((st.rank, st.start, st.done))
    out = []
    up = np.where(why >= 0, g.src[why], -1) if len(g.src) else np.full(len(why), -1)
    walk = _Walk(up, times)
    t = walk.t
    for num in sorted(per_step):
        rows = per_step[num]
        durs = {r: int(t[c] - t[s]) for r, s, c in rows}
        rank, s_node, c_node = max(rows, key=lambda x: (durs[x[0]], -x[0]))
        path = StepPath(num, rank, durs[rank], durs)
        lo = int(t[s_node])
        left, untracked = walk.back(c_node, s_node, lo)
        walked = why[left]
        path.table, path.unresolved_waits, on_path = _segments(g, times, walked, lo, untracked)
        path.table = _late_rank(g, path.table, on_path)
        out.append(path)
    return out


class _Walk:
    """The walk back along binding predecessors *up* (-1: none) over node *times*, by runs:
    a node whose predecessor is the node numbered just before it continues that node's run
    (:mod:`analyzers.critical_path.rank_graph` numbers nodes lane by lane, so a path along one
    thread or stream is mostly one run), and a run is walked in one step — its nodes' times do
    not decrease along it (checked; else node by node), so where the walk stops inside it is
    one bisection.  Single elements are read through memoryviews: Python ints, no per-node
    list."""

    def __init__(self, up: np.ndarray, times: np.ndarray) -> None:
        n = len(up)
        ix = np.int32 if n < 2**31 else np.int64
        ids = np.arange(n, dtype=ix)
        cont = np.zeros(n, bool)
        cont[1:] = up[1:] == ids[:-1]
        self.by_runs = not bool((cont[1:] & (times[1:] < times[:-1])).any())
        head = np.maximum.accumulate(np.where(cont, ix(0), ids))
        self.up = np.ascontiguousarray(up, ix).data
        self.t = np.ascontiguousarray(times, np.int64).data
        self.head = np.ascontiguousarray(head, ix).data

    def back(self, c_node: int, s_node: int, lo: int) -> tuple[np.ndarray, int]:
        """The nodes the walk from *c_node* leaves (path order: last left first) until it
        reaches *s_node*, a node whose predecessor is at or before *lo*, or a node without a
        predecessor (returned as the untracked node, else -1)."""
        if not self.by_runs:
            return self._nodes(c_node, s_node, lo)
        up, t, head = self.up, self.t, self.head
        ranges: list[tuple[int, int]] = []  # walked from the second down to the first
        v = c_node
        untracked = -1
        while v != s_node:
            h = head[v]
            # inside the run, node q > h leaves for q - 1: the first (highest) q whose
            # predecessor is at or before lo, unless the walk reaches s_node first
            q_t = bisect.bisect_right(t, lo, h, v) if h < v and t[h] <= lo else -1
            q_s = s_node if h <= s_node < v else -1
            if q_t > h and q_t > q_s:
                ranges.append((q_t, v))
                break
            if q_s >= 0:
                ranges.append((q_s + 1, v))
                break
            u = up[h]
            if u < 0:  # a node the graph does not explain (no predecessor): untracked time
                if h < v:
                    ranges.append((h + 1, v))
                untracked = h
                break
            ranges.append((h, v))
            if t[u] <= lo:
                break
            v = u
        if not ranges:
            return np.zeros(0, np.int64), untracked
        first = np.asarray([a for a, _ in reversed(ranges)], np.int64)
        size = np.asarray([b - a + 1 for a, b in reversed(ranges)], np.int64)
        start = np.repeat(first - (np.cumsum(size) - size), size)
        return start + np.arange(int(size.sum())), untracked

    def _nodes(self, c_node: int, s_node: int, lo: int) -> tuple[np.ndarray, int]:
        """:meth:`back` node by node."""
        up, t = self.up, self.t
        v = c_node
        left: list[int] = []
        untracked = -1
        while v != s_node:
            u = up[v]
            if u < 0:
                untracked = v
                break
            left.append(v)
            if t[u] <= lo:
                break
            v = u
        return np.asarray(left[::-1], np.int64), untracked


def _segments(
    g: StepGraph, times: np.ndarray, walked: np.ndarray, lo: int, untracked: int
) -> tuple[Segments, int, set[int]]:
    """The segments of the *walked* edges (path order), the unresolved waits among them and
    the sources of their ``transfer`` edges (the joins on the path)."""
    e = np.asarray(walked, np.int64)
    u, v = g.src[e], g.dst[e]
    a, b = np.maximum(times[u], lo), times[v]
    keep = b > a
    ek, uk, vk = e[keep], u[keep], v[keep]
    rank = np.where(g.node_rank[vk] >= 0, g.node_rank[vk], g.node_rank[uk])
    table = Segments(
        rank,
        a[keep],
        b[keep],
        g.labels,
        g.cause_code[ek],
        g.detail_code[ek],
        g.name_code[ek],
    )
    if untracked >= 0 and times[untracked] > lo:  # time before the first explained node
        labels = g.labels
        at = {x: i for i, x in enumerate(labels.tolist())}
        extra = [x for x in ("cpu", "untracked", "") if x not in at]
        if extra:
            at.update({x: len(labels) + i for i, x in enumerate(extra)})
            labels = np.concatenate([labels, np.asarray(extra, dtype=object)])
        code = np.dtype(np.int16 if len(labels) < 2**15 else np.int32)

        def head(col: np.ndarray, x: object) -> np.ndarray:
            return np.concatenate([np.asarray([x], col.dtype), col])

        def label(col: np.ndarray, x: str) -> np.ndarray:
            return np.concatenate([np.asarray([at[x]], code), col.astype(code)])

        table = Segments(
            head(table.rank, int(g.node_rank[untracked])),
            head(table.start_ns, lo),
            head(table.end_ns, int(times[untracked])),
            labels,
            label(table.cause_code, "cpu"),
            label(table.detail_code, "untracked"),
            label(table.name_code, ""),
        )
    on_path = set(u[g.kind[e] == KINDS.index("transfer")].tolist())
    return table, int(g.unresolved[e].sum()), on_path


def _late_rank(g: StepGraph, table: Segments, on_path: set[int]) -> Segments:
    """Relabel the parts of segments on a late rank that fall in the window the other ranks
    waited for it (``[arrival − lateness, arrival]``) at a join the path goes through."""
    windows = [
        (j.late_rank, j.arrivals[j.late_rank] - j.lateness_ns, j.arrivals[j.late_rank])
        for j in g.joins
        if j.lateness_ns > 0 and j.node in on_path
    ]
    if not windows:
        return table
    late = {r for r, _, _ in windows}
    if not np.isin(table.rank, list(late)).any():
        return table
    out: list[Segment] = []
    for s in table.rows():
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
    return Segments.of(out)


def cause_totals(paths: list[StepPath]) -> dict[str, int]:
    """Σ ns per cause over *paths*."""
    out = dict.fromkeys(CAUSES, 0)
    for p in paths:
        for (cause, _, _), ns in p.by_cause().items():
            out[cause] += ns
    return out


def mean(xs: list[int]) -> float:
    return float(np.mean(xs)) if xs else 0.0
