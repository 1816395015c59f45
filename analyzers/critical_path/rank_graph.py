"""One rank's part of the step graph (docs/critical-path.md §2), from that rank's Trace alone.

Nodes are the start and end of the rank's host ops (CPU ops, runtime/driver calls and the
``ProfilerStep`` ranges, positive duration), of its GPU rows with a stream (kernels, copies,
sets), and one *completion* node per step.  Edges (``kind``):

=============  ==================================================================
``host``       call-stack order on a thread: the previous node of HTA's walk → the next
``gpu``        a GPU row's start → its end
``stream``     the previous row on the stream's end → the row's start
``launch``     the launching call's start → the GPU row's start
``sync``       the awaited GPU row's end → a blocking call's end (Stream/Context Sync; Event
               Sync of ``cudaEventSynchronize`` when the row's ``wait_on_*`` fields are known)
``wait``       the row a ``Stream Wait Event`` waits on (``wait_on_*`` known) → the first row
               launched onto the waiting stream after the ``cudaStreamWaitEvent`` call
``complete``   the step's ``ProfilerStep`` end and its GPU rows' ends → the completion node
=============  ==================================================================

Each edge carries its *cause* label (:mod:`analyzers.critical_path.blame` defines them), the op
category of a GPU row (:func:`analyzers.critical_path.sources.gpu_category_codes`) — labels as
codes into the part's table of strings (:mod:`analyzers.critical_path.labels`) —, whether a host
edge lies inside ops that launch GPU work (the CUDA-graphs what-if), and whether its end follows
a cross-stream wait the trace does not resolve (*unresolved*: a ``cudaStreamWaitEvent`` /
``cudaEventSynchronize`` without the sync row's ``wait_on_*`` fields; the row launched next on
the waiting stream — on the calling thread when the stream is unknown — or the call's end).

:func:`part_table` / :func:`part_from_table` turn a part into one table and back: what a
many-rank worker returns (cache-storable, no Trace); the cross-rank collective joins are added
by :func:`analyzers.critical_path.step_graph.build_step_graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analyzers.critical_path.callstack import thread_lanes
from analyzers.critical_path.events import LAUNCH_NAMES, NODE_CATS, Events, build_events
from analyzers.critical_path.labels import (
    DATA_LOADING,
    KINDS,
    SYNC_CALL_NAMES,
    Categorised,
    K,
    edge_labels,
)
from analyzers.critical_path.sources import collectives_of, gpu_category_codes, launch_rows
from analyzers.critical_path.waits import sync_edges, wait_edges

if TYPE_CHECKING:
    from collectors.model import Trace

__all__ = ["DATA_LOADING", "KINDS", "SYNC_CALL_NAMES", "K", "RankGraph", "rank_graph"]
STEP_PREFIX = "ProfilerStep#"
GPU_ROW_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass
class RankGraph(Categorised):
    """One rank's nodes and edges (module docstring); node ids are local to the part,
    numbered lane by lane (:func:`rank_graph`)."""

    rank: int
    node_time: np.ndarray
    """Measured time of each node on the rank's clock (ns)."""
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    """Index into :data:`KINDS` (int8)."""
    labels: np.ndarray
    """The distinct label strings (object array, ``""`` first)."""
    cause_code: np.ndarray
    detail_code: np.ndarray
    name_code: np.ndarray
    """Per edge: cause label, its detail and the event's name (codes into
    :attr:`labels`; :attr:`cause` / :attr:`detail` / :attr:`name` give the strings)."""
    category_code: np.ndarray
    """Per edge: the op category of a ``gpu`` edge's row, "" elsewhere (code)."""
    launching: np.ndarray
    """Per edge: a ``host`` edge between nodes of ops that are, or contain, a launch call."""
    unresolved: np.ndarray
    """Per edge: its end follows a cross-stream wait the trace does not resolve."""
    step_num: np.ndarray
    step_start: np.ndarray
    step_done: np.ndarray
    """Per step (start order): its number, the ``ProfilerStep`` start node, the completion
    node."""
    coll_key: np.ndarray
    coll_name: np.ndarray
    coll_kernel: np.ndarray
    coll_start: np.ndarray
    coll_end: np.ndarray
    coll_facts: np.ndarray
    """Per collective with GPU work (issue order): match key (``pg#seqN``, else ``pg#n``),
    collective, kernel name, kernel start / end node, ``(message_bytes, group_size,
    link_peak_gbps)`` (float64, n × 3)."""

    @property
    def n_nodes(self) -> int:
        return len(self.node_time)


class _Builder:
    """Nodes numbered lane by lane — a host thread's boundaries in its call-stack walk's
    order, then each stream's rows (start, end) in time order, then the steps' completion
    nodes — and edges added in blocks (numpy arrays, concatenated once at the end).  In this
    numbering a node's one in-edge mostly comes from the node just before it, which the
    replay's and the path walk's runs take in one step (:func:`analyzers.critical_path.paths.
    chain_roots`); ids are int32 when they fit."""

    def __init__(self, ev: Events) -> None:
        self.ev = ev
        self.ids = np.dtype(np.int32 if 3 * len(ev) < 2**31 else np.int64)
        self.n_nodes = 0
        self.start = np.full(len(ev), -1, self.ids)
        """Per event, the node of its start (-1: not a node)."""
        self.end = np.full(len(ev), -1, self.ids)
        self._t: list[np.ndarray] = []
        self._event: list[np.ndarray] = []
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._kind: list[np.ndarray] = []

    def lane(
        self,
        events: np.ndarray,
        entering: np.ndarray,
        at: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Nodes for the boundaries of *events* in order (the start where *entering*, else the
        end); returns their ids.  *at*: the events once each and, per event, the positions of
        its start and its end among the boundaries, when known."""
        base = self.n_nodes
        ids = np.arange(base, base + len(events), dtype=self.ids)
        if at is None:
            self.start[events[entering]] = ids[entering]
            self.end[events[~entering]] = ids[~entering]
            t = np.where(entering, self.ev.ts[events], self.ev.end[events])
        else:
            each, start_at, end_at = at
            self.start[each] = start_at + base
            self.end[each] = end_at + base
            t = np.empty(len(events), np.int64)
            t[start_at] = self.ev.ts[each]
            t[end_at] = self.ev.end[each]
        self._t.append(t)
        self._event.append(np.asarray(events, np.int32))
        self.n_nodes += len(events)
        return ids

    def node(self, time: int) -> int:
        """A node of no event (a step's completion)."""
        return int(self.nodes(np.array([time], np.int64))[0])

    def nodes(self, times: np.ndarray) -> np.ndarray:
        """Nodes of no event at *times* (steps' completions); returns their ids."""
        ids = np.arange(self.n_nodes, self.n_nodes + len(times), dtype=self.ids)
        self._t.append(np.asarray(times, np.int64))
        self._event.append(np.full(len(times), -1, np.int32))
        self.n_nodes += len(times)
        return ids

    def edges(self, u: np.ndarray | list[int], v: np.ndarray | list[int], kind: str) -> None:
        uu, vv = np.asarray(u, self.ids), np.asarray(v, self.ids)
        ok = (uu >= 0) & (vv >= 0) & (uu != vv)
        self._src.append(uu[ok])
        self._dst.append(vv[ok])
        self._kind.append(np.full(int(ok.sum()), K[kind], np.int8))

    @staticmethod
    def _cat(blocks: list[np.ndarray], dtype: np.dtype | type) -> np.ndarray:
        return np.concatenate(blocks).astype(dtype, copy=False) if blocks else np.zeros(0, dtype)

    def node_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(time, event) of every node, in id order."""
        return self._cat(self._t, np.int64), self._cat(self._event, np.int32)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, dst, kind) of every edge, in the order added."""
        return (
            self._cat(self._src, self.ids),
            self._cat(self._dst, self.ids),
            self._cat(self._kind, np.int8),
        )


MAX_STEP_DIGITS = 18
"""As the readers: a ``ProfilerStep#N`` whose N has more digits is not a step (it would not fit
int64; the reader notes it)."""


def _step_number(name: str) -> int:
    tail = name[len(STEP_PREFIX) :]
    return int(tail) if tail.isdigit() and len(tail) <= MAX_STEP_DIGITS else -1


def _is_step(name: str) -> bool:
    if not name.startswith(STEP_PREFIX):
        return False
    digits = len(name) - len(name[len(STEP_PREFIX) :].lstrip("0123456789")) - len(STEP_PREFIX)
    return digits <= MAX_STEP_DIGITS


def rank_graph(trace: Trace, collectives: bool = True) -> RankGraph:
    """The part of *trace*'s rank (module docstring); without its collectives unless
    *collectives* (what only joins across ranks read: a sole rank's section needs none)."""
    ev = build_events(trace)
    step_event = ev.name_flags(_is_step)[ev.name_code]
    is_step = ev.is_host & step_event
    host = ev.is_host & (ev.end > ev.ts) & (ev.cat_in(NODE_CATS) | is_step)
    gpu = ~ev.is_host & (ev.stream >= 0) & ev.cat_in(GPU_ROW_CATS)
    b = _Builder(ev)
    calls = launch_rows(trace)
    asked = np.zeros(len(ev), bool)
    asked[calls[calls >= 0]] = True  # host rows come first among the events
    launches_gpu, op_at = _host_lanes(b, ev, host, asked)
    del asked
    g_rows = np.flatnonzero(gpu)
    order = g_rows[np.lexsort((ev.ts[g_rows], ev.stream[g_rows], ev.pid[g_rows]))]
    two = np.arange(0, 2 * len(order), 2, dtype=b.ids)
    b.lane(np.repeat(order, 2), np.tile([True, False], len(order)), (order, two, two + 1))
    start, end = b.start, b.end
    b.edges(start[g_rows], end[g_rows], "gpu")
    same = (ev.stream[order][1:] == ev.stream[order][:-1]) & (
        ev.pid[order][1:] == ev.pid[order][:-1]
    )
    b.edges(end[order][:-1][same], start[order][1:][same], "stream")
    lk = ev.link[g_rows]
    b.edges(np.where(lk >= 0, start[np.maximum(lk, 0)], -1), start[g_rows], "launch")
    b.edges(*sync_edges(ev, end, order), "sync")
    waits, syncs, unresolved_nodes = wait_edges(ev, start, end)
    b.edges(*waits, "wait")
    b.edges(*syncs, "sync")
    host_steps = np.flatnonzero(is_step & host)
    host_steps = host_steps[np.argsort(ev.ts[host_steps], kind="stable")]
    launch_of = np.where(lk >= 0, ev.ts[np.maximum(lk, 0)], -1)
    step_done = _completions(b, ev, host_steps, g_rows, launch_of)
    coll = _collective_rows(ev, trace if collectives else None, start, end)
    step_num = np.array([_step_number(str(ev.name_set[ev.name_code[s]])) for s in host_steps])
    step_start = start[host_steps].astype(np.int64)
    ev_name, names, n_host = ev.name_code, ev.name_set, ev.n_host
    del ev, b.ev, host, gpu, is_step, launch_of, lk, g_rows, order
    src, dst, kind = b.edge_arrays()
    node_time, node_event = b.node_arrays()
    del b
    ev_u, ev_v = node_event[src], node_event[dst]
    del node_event
    flagged = np.zeros(len(node_time), bool)
    flagged[np.asarray(sorted(unresolved_nodes), np.int64)] = True
    unresolved = flagged[dst]
    del flagged
    lg = np.append(launches_gpu, False)  # event -1 → launches nothing
    launching = (kind == K["host"]) & lg[ev_u] & lg[ev_v]
    del lg, launches_gpu
    cat_codes, cats = gpu_category_codes(trace, op_at[:n_host])
    del op_at
    ev_cat = np.concatenate([np.full(n_host, -1, np.int32), cat_codes])
    del cat_codes
    lab = edge_labels(
        kind, ev_u, ev_v, ev_name, names, ev_cat, cats, step_event, launching, unresolved
    )
    return RankGraph(
        rank=trace.rank,
        node_time=node_time,
        src=src,
        dst=dst,
        kind=kind,
        labels=lab.table,
        cause_code=lab.cause,
        detail_code=lab.detail,
        name_code=lab.name,
        category_code=lab.category,
        launching=launching,
        unresolved=unresolved,
        step_num=step_num.astype(np.int64),
        step_start=step_start,
        step_done=np.asarray(step_done, np.int64),
        **coll,
    )


def step_of(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """Per instant of *t*, the range ``[starts[i], ends[i])`` holding it (-1: none), where the
    ranges (sorted by start, positive lengths) do not overlap — each instant then has at most
    one, the last starting at or before it; None where they overlap."""
    if len(starts) > 1 and bool((ends[:-1] > starts[1:]).any()):
        return None
    k = np.searchsorted(starts, t, side="right") - 1
    inside = k >= 0
    inside[inside] = t[inside] < ends[k[inside]]
    return np.where(inside, k, -1)


def _completions(
    b: _Builder, ev: Events, steps: np.ndarray, g_rows: np.ndarray, launch_of: np.ndarray
) -> np.ndarray:
    """One completion node per step of *steps* (host events in start order) and its
    ``complete`` edges: from the step's end, then from the ends of the GPU rows *g_rows*
    launched in it (*launch_of*: per row, its launch call's start), in row order; returns
    the nodes."""
    end = b.end
    member = step_of(ev.ts[steps], ev.end[steps], launch_of)
    if member is None:  # steps that overlap: a row may complete several
        done: list[int] = []
        for s in steps.tolist():
            inside = (launch_of >= ev.ts[s]) & (launch_of < ev.end[s])
            ends = np.concatenate([[end[s]], end[g_rows[inside]]])
            node = b.node(int(max(ev.end[s], ev.end[g_rows[inside]].max(initial=ev.end[s]))))
            b.edges(ends, np.full(len(ends), node), "complete")
            done.append(node)
        return np.asarray(done, np.int64)
    rows = np.flatnonzero(member >= 0)
    k = member[rows]
    rows = rows[np.argsort(k, kind="stable")]  # by step, row order kept
    k = member[rows]
    size = np.bincount(k, minlength=len(steps)) + 1  # each step's end, then its rows
    at = np.cumsum(size) - size
    src = np.empty(int(size.sum()), np.int64)
    src[at] = end[steps]
    src[np.arange(len(rows)) + k + 1] = end[g_rows[rows]]  # after the ends of steps ≤ k
    time = ev.end[steps].copy()
    np.maximum.at(time, k, ev.end[g_rows[rows]])
    nodes = b.nodes(time)
    b.edges(src, np.repeat(nodes, size), "complete")
    return nodes.astype(np.int64)


def _host_lanes(
    b: _Builder, ev: Events, host: np.ndarray, asked: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The *host* events' nodes, thread by thread in HTA's call-stack walk order, and the walk
    edges (each boundary's node → the next one's); returns which host events are, or contain,
    a launch (a launch and its ancestors on the walk's stack), and per event the innermost
    non-step ``cpu_op`` holding the start of the *asked* ones (-1: none; -2: not asked, or
    left to the exact look-up: :func:`~analyzers.critical_path.callstack.walk_lane`)."""
    launches_gpu = np.zeros(len(ev), bool)
    is_launch = ev.name_in(LAUNCH_NAMES) & host
    is_op = ev.cat_in(("cpu_op",)) & ~ev.per_name(lambda s: s.startswith(STEP_PREFIX))
    op_at = np.full(len(ev), -2, np.int64)
    for lane in thread_lanes(
        ev.ts, ev.end, ev.order, ev.pid, ev.tid, np.flatnonzero(host), is_launch, asked, is_op
    ):
        node = b.lane(lane.event, lane.entering, lane.at)
        b.edges(node[:-1], node[1:], "host")
        launches_gpu[lane.holding] = True
        op_at[lane.asked] = lane.op
    return launches_gpu, op_at


def _collective_rows(
    ev: Events, trace: Trace | None, start: np.ndarray, end: np.ndarray
) -> dict[str, np.ndarray]:
    """The rank's collectives with a GPU row that is a node, in issue order (RankGraph); none
    without *trace*."""
    c = collectives_of(trace) if trace is not None else None
    keys: list[str] = []
    names: list[str] = []
    kernels: list[str] = []
    s_nodes: list[int] = []
    e_nodes: list[int] = []
    facts: list[tuple[float, float, float]] = []
    if c is not None and len(c):
        c = c.sort_values("start_ns", kind="stable")
        counts: dict[str, int] = {}
        rows = zip(
            c["pg_name"].astype(object).tolist(),
            c["gpu_row"].to_numpy(np.int64).tolist(),
            c["seq"].to_numpy(np.int64).tolist(),
            c["collective"].astype(object).tolist(),
            c[["message_bytes", "group_size", "link_peak_gbps"]].to_numpy(np.float64).tolist(),
            strict=True,
        )
        for pg_name, gpu_row, seq, collective, fact in rows:
            pg = str(pg_name) if isinstance(pg_name, str) else "?"
            n = counts.get(pg, 0)
            counts[pg] = n + 1
            pos = ev.n_host + gpu_row
            if gpu_row < 0 or start[pos] < 0:
                continue
            keys.append(f"{pg}#seq{seq}" if seq >= 0 else f"{pg}#{n}")
            names.append(str(collective))
            kernels.append(str(ev.names_of(pos)))
            s_nodes.append(int(start[pos]))
            e_nodes.append(int(end[pos]))
            facts.append((fact[0], fact[1], fact[2]))
    return {
        "coll_key": np.asarray(keys, dtype=object),
        "coll_name": np.asarray(names, dtype=object),
        "coll_kernel": np.asarray(kernels, dtype=object),
        "coll_start": np.asarray(s_nodes, np.int64),
        "coll_end": np.asarray(e_nodes, np.int64),
        "coll_facts": np.asarray(facts, np.float64).reshape(-1, 3),
    }


# --- one table per part (the many-rank digest) -----------------------------------------------
