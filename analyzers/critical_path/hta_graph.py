"""HTA's single-rank critical-path graph (``hta/analyzers/critical_path_analysis.py``), rebuilt
from the trace model.

Nodes are the start and the end of every event of the clipped window that is a CPU op, a CUDA
runtime/driver call, a data-loading op, or a GPU row with a stream and a correlation; they are
numbered in ``(time, order)`` order.  Edges, added in HTA's order:

1. *runtime lock* (HTA main; ``lock_edges``): over ``cudaHostAlloc`` / ``cudaLaunchKernel`` /
   ``cudaMemcpyAsync`` nodes in node order, an end takes every pending start (its own start:
   ``operator``; another call's: ``dependency``), and follows the previous end (``dependency``);
2. *call stacks* (per thread, depth first): the previous node of the walk to an op's start
   (``dependency`` at the top level, else ``operator``) and to its end (``operator``, weight 0
   for blocking calls), except between nodes that share the runtime lock (1.);
3. *kernels* (GPU rows by start, sync rows by end): start→end ``operator``; a GPU→GPU
   ``sync_dependency`` from the kernel a ``Stream Wait Event`` waits on; ``kernel_launch_delay``
   from the launch when the stream's queue held only this kernel at launch and start, else
   ``kernel_kernel_delay`` from the stream's previous kernel (closer than ``kk_threshold_ns``
   in HTA main); a zero-weight launch edge otherwise (``zero_weight_launch``);
   ``Stream Sync`` / ``Context Sync`` / ``Event Sync`` add ``sync_dependency`` edges from the
   awaited kernel's end to the runtime call's end.

Weights are ``dest − src`` except ``dependency`` / ``sync_dependency`` / zero-weight edges; a
negative weight counts as 0 in the path (HTA ``_validate_graph``).  Times are ns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from analyzers.critical_path.callstack import thread_walks
from analyzers.critical_path.events import LAUNCH_NAMES, NODE_CATS, STREAMLESS_SYNC, Events
from analyzers.critical_path.paths import hta_longest_path

OPERATOR = "critical_path_operator"
DEPENDENCY = "critical_path_dependency"
LAUNCH = "critical_path_kernel_launch_delay"
KERNEL_KERNEL = "critical_path_kernel_kernel_delay"
SYNC = "critical_path_sync_dependency"
EDGE_TYPES = (OPERATOR, DEPENDENCY, LAUNCH, KERNEL_KERNEL, SYNC)
"""HTA's ``CPEdgeType`` values."""
VIZ_TYPES = frozenset({DEPENDENCY, LAUNCH, SYNC})
"""Edge types HTA draws as flow events by default (``DEFAULT_EDGE_TYPES_IN_VIZ``)."""

BLOCKING_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventQuery",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpyAsync",
    }
)
LOCK_CALLS = frozenset({"cudaHostAlloc", "cudaLaunchKernel", "cudaMemcpyAsync"})
KK_THRESHOLD_NS = 1_500_000
"""HTA main's ``KERNEL_KERNEL_DELAY_THRESHOLD_US`` (1.5 ms)."""


@dataclass(frozen=True)
class HtaOptions:
    """Which HTA the graph follows: ``main`` (default; the version that wrote the
    ``end_to_end`` reference) or ``0.5`` (the PyPI release 0.5.0)."""

    lock_edges: bool = True
    kk_threshold_ns: int | None = KK_THRESHOLD_NS
    zero_weight_launch: bool = True
    data_load_events: tuple[str, ...] = ()
    merge_backward_thread: bool = True

    @staticmethod
    def release_0_5() -> HtaOptions:
        return HtaOptions(lock_edges=False, kk_threshold_ns=None, merge_backward_thread=False)


@dataclass
class HtaGraph:
    """Nodes (``node_event``, ``node_ts``, ``node_start``) and edges in insertion order."""

    node_event: np.ndarray
    node_ts: np.ndarray
    node_start: np.ndarray
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    etype: list[str] = field(default_factory=list)
    weight: list[int] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    _index: dict[tuple[int, int], int] = field(default_factory=dict)

    def add(self, u: int, v: int, etype: str, zero: bool = False) -> None:
        if u == v:
            raise ValueError(f"self edge at node {u}")
        w = 0 if zero or etype in (DEPENDENCY, SYNC) else int(self.node_ts[v] - self.node_ts[u])
        k = self._index.get((u, v))
        if k is None:
            self._index[(u, v)] = len(self.src)
            self.src.append(u)
            self.dst.append(v)
            self.etype.append(etype)
            self.weight.append(w)
        else:  # networkx add_edge on an existing edge: new attributes, same position
            self.etype[k], self.weight[k] = etype, w

    def edge(self, u: int, v: int) -> int:
        return self._index[(u, v)]

    @property
    def path_edges(self) -> list[int]:
        return [self._index[(u, v)] for u, v in zip(self.path, self.path[1:], strict=False)]

    @property
    def path_events(self) -> set[int]:
        return {int(self.node_event[n]) for n in self.path}


def clip_window(ev: Events, start_ns: int, end_ns: int) -> np.ndarray:
    """HTA's clipped frame: host-side rows (stream -1) with a positive duration starting in
    ``[start, end]``, and stream rows whose launch is such a row (or ``Stream Wait Event``)."""
    dur = ev.end - ev.ts
    cpu = (ev.stream == -1) & (ev.ts >= start_ns) & (ev.ts <= end_ns) & (dur > 0)
    keep = cpu.copy()
    gpu = np.flatnonzero(ev.stream != -1)
    lk = ev.link[gpu]
    ok = lk >= 0
    lk0 = np.where(ok, lk, 0)
    launched = ok & (ev.stream[lk0] == -1) & (ev.ts[lk0] >= start_ns) & (ev.ts[lk0] <= end_ns)
    launched &= dur[lk0] > 0
    keep[gpu[launched | (ev.name[gpu] == "Stream Wait Event")]] = True
    return keep


def _matches(names: np.ndarray, patterns: tuple[str, ...]) -> np.ndarray:
    if not patterns:
        return np.zeros(len(names), bool)
    rx = [re.compile(p) for p in patterns]
    uniq = {s: any(r.search(s) for r in rx) for s in set(names.tolist())}
    return np.array([uniq[s] for s in names.tolist()], dtype=bool)


def build_hta_graph(ev: Events, clipped: np.ndarray, opts: HtaOptions | None = None) -> HtaGraph:
    """HTA's graph over the *clipped* events (module docstring)."""
    opts = opts or HtaOptions()
    is_node_cat = np.isin(ev.cat, NODE_CATS) & ev.is_host
    data_load = _matches(ev.name, opts.data_load_events)
    gpu_node = (ev.stream != -1) & ((ev.correlation >= 0) | (ev.link >= 0))
    node_ev = np.flatnonzero(clipped & (is_node_cat | data_load | gpu_node))
    k = len(node_ev)
    n_ts = np.concatenate([ev.ts[node_ev], ev.end[node_ev]])
    n_ev = np.concatenate([node_ev, node_ev])
    n_start = np.concatenate([np.ones(k, bool), np.zeros(k, bool)])
    seq = np.lexsort((~n_start, ev.order[n_ev], n_ts))
    g = HtaGraph(n_ev[seq], n_ts[seq], n_start[seq])
    start_of = np.full(len(ev), -1, np.int64)
    end_of = np.full(len(ev), -1, np.int64)
    pos = np.arange(2 * k)
    start_of[g.node_event[g.node_start]] = pos[g.node_start]
    end_of[g.node_event[~g.node_start]] = pos[~g.node_start]
    lock = ev.name_in(LOCK_CALLS) & (start_of >= 0)
    if opts.lock_edges:
        _lock_edges(g, ev, lock)
    _call_stack_edges(g, ev, clipped, start_of, end_of, lock if opts.lock_edges else None, opts)
    _kernel_edges(g, ev, clipped, start_of, end_of, opts)
    return g


def _lock_edges(g: HtaGraph, ev: Events, lock: np.ndarray) -> None:
    pending: list[int] = []
    last: int | None = None
    for nid in np.flatnonzero(lock[g.node_event]).tolist():
        if g.node_start[nid]:
            pending.append(nid)
        else:
            while pending:
                p = pending.pop()
                g.add(p, nid, OPERATOR if g.node_event[p] == g.node_event[nid] else DEPENDENCY)
            if last is not None and not g.node_start[last]:
                g.add(last, nid, DEPENDENCY)
        last = nid


def _single_tid(ev: Events, clipped: np.ndarray, word: str) -> int | None:
    m = clipped & ev.is_host & np.isin(ev.cat, ("cpu_op", "user_annotation"))
    m &= np.array([word in s for s in ev.name.tolist()], dtype=bool)
    tids = set(ev.tid[m].tolist())
    return next(iter(tids)) if len(tids) == 1 else None


def _call_stack_edges(
    g: HtaGraph,
    ev: Events,
    clipped: np.ndarray,
    start_of: np.ndarray,
    end_of: np.ndarray,
    lock: np.ndarray | None,
    opts: HtaOptions,
) -> None:
    tid = ev.tid
    if opts.merge_backward_thread:
        fwd, bwd = _single_tid(ev, clipped, "forward"), _single_tid(ev, clipped, "autograd")
        if fwd and bwd and fwd != bwd:
            tid = np.where(ev.is_host & (tid == bwd), fwd, tid)
    dur = ev.end - ev.ts
    cpu = clipped & (ev.stream == -1) & (dur > 0)
    is_blocking = ev.name_in(BLOCKING_CALLS)
    for walk in thread_walks(ev.ts, ev.end, ev.order, ev.pid, tid, np.flatnonzero(cpu)):
        last: int | None = None
        depth = 0
        for e, entering, _parent in walk:
            s, t = int(start_of[e]), int(end_of[e])
            if s < 0 or t < 0:
                continue
            node = s if entering else t
            shared = (
                lock is not None
                and last is not None
                and bool(lock[g.node_event[last]])
                and bool(lock[e])
                and (bool(g.node_start[last]) or not entering)
            )
            if last is not None and not shared:
                if entering:
                    g.add(last, node, DEPENDENCY if depth == 0 else OPERATOR)
                else:
                    g.add(last, node, OPERATOR, zero=bool(is_blocking[e]))
            last = node
            depth += 1 if entering else -1


def _queue_lengths(ev: Events) -> dict[int, int]:
    """HTA ``_get_queue_length_time_series_for_rank``: per stream, +1 at each launch call that
    launched a stream row, -1 at that row's start; the running sum at each of those events."""
    launch = ev.name_in(LAUNCH_NAMES) & (ev.link >= 0) & ev.is_host
    calls = np.flatnonzero(launch)
    kern = ev.link[calls]
    ok = ev.stream[kern] != -1
    calls, kern = calls[ok], kern[ok]
    pos = np.concatenate([calls, kern])
    stream = np.concatenate([ev.stream[kern], ev.stream[kern]])
    delta = np.concatenate([np.ones(len(calls), np.int64), -np.ones(len(kern), np.int64)])
    t = ev.ts[pos]
    seq = np.lexsort((np.arange(len(pos)), t, stream))
    q = np.empty(len(pos), np.int64)
    s_sorted = stream[seq]
    c = np.cumsum(delta[seq])
    first = np.r_[0, np.flatnonzero(s_sorted[1:] != s_sorted[:-1]) + 1]
    base = np.repeat(
        np.r_[0, c[first[1:] - 1]] if len(first) else [], np.diff(np.r_[first, len(c)])
    )
    q[seq] = c - base
    return dict(zip(pos.tolist(), q.tolist(), strict=True))


def event_records(ev: Events) -> dict[int, int]:
    """``cudaEventRecord`` correlation → the launch call (position) of the last kernel launched on
    the recorded stream before it (HTA ``_get_cuda_event_record_df``); needs the sync rows'
    ``wait_on_stream`` / ``wait_on_event_correlation``."""
    at = np.flatnonzero(ev.gpu_wait_on_stream > -1)  # GPU rows: events n_host + at
    if not len(at):
        return {}
    stream_of = {
        int(c): (int(ev.pid[w]), int(s))
        for w, c, s in zip(
            ev.n_host + at, ev.gpu_wait_on_corr[at], ev.gpu_wait_on_stream[at], strict=True
        )
    }
    records = np.flatnonzero(ev.is_host & ev.name_in(("cudaEventRecord",)))
    launches = np.flatnonzero(ev.name_in(LAUNCH_NAMES) & ev.is_host & (ev.link >= 0))
    launches = launches[ev.stream[ev.link[launches]] != -1]
    launches = launches[np.argsort(ev.ts[launches], kind="stable")]
    out: dict[int, int] = {}
    by_stream: dict[tuple[int, int], np.ndarray] = {}
    for r in records[np.argsort(ev.ts[records], kind="stable")].tolist():
        key = stream_of.get(int(ev.correlation[r]))
        if key is None:
            continue
        if key not in by_stream:
            kk = ev.link[launches]
            sel = (ev.pid[kk] == key[0]) & (ev.stream[kk] == key[1])
            by_stream[key] = launches[sel]
        cand = by_stream[key]
        i = int(np.searchsorted(ev.ts[cand], ev.ts[r], side="right")) - 1
        if i >= 0:
            out[int(ev.correlation[r])] = int(cand[i])
    return out


def _next_launch(ev: Events, wait_call: int, stream: int) -> int:
    """The first launch call on the waiting call's thread onto *stream* after it, or -1."""
    m = (
        ev.is_host
        & ev.name_in(LAUNCH_NAMES)
        & (ev.link >= 0)
        & (ev.pid == ev.pid[wait_call])
        & (ev.tid == ev.tid[wait_call])
        & (ev.ts > ev.ts[wait_call])
    )
    cand = np.flatnonzero(m)
    cand = cand[ev.stream[ev.link[cand]] == stream]
    return int(cand[np.argmin(ev.ts[cand])]) if len(cand) else -1


def _kernel_edges(
    g: HtaGraph,
    ev: Events,
    clipped: np.ndarray,
    start_of: np.ndarray,
    end_of: np.ndarray,
    opts: HtaOptions,
) -> None:
    q = _queue_lengths(ev)
    records = event_records(ev)
    rows = np.flatnonzero(
        clipped
        & ((ev.stream != -1) | ev.name_in(STREAMLESS_SYNC))
        & ((ev.link >= 0) | (ev.correlation >= 0))
    )
    is_sync = ev.cat[rows] == "cuda_sync"
    key = np.where(is_sync, ev.end[rows], ev.ts[rows])
    rows = rows[np.lexsort((ev.order[rows], key))]
    last: dict[int, int] = {}
    kernel_sync: dict[int, int] = {}
    for r in rows.tolist():
        name, runtime = ev.name[r], int(ev.link[r])
        if ev.cat[r] == "cuda_sync":
            if runtime < 0 or end_of[runtime] < 0:
                continue
            if name in ("Stream Wait Event", "Event Sync"):
                launch = records.get(int(ev.wait_on_corr[r]), -1)
                if launch < 0:
                    continue
                src_kernel = int(ev.link[launch])
                if name == "Stream Wait Event":
                    nxt = _next_launch(ev, runtime, int(ev.stream[r]))
                    if nxt >= 0:
                        kernel_sync[int(ev.link[nxt])] = src_kernel
                elif end_of[src_kernel] >= 0:
                    g.add(int(end_of[src_kernel]), int(end_of[runtime]), SYNC)
                continue
            targets = (
                list(last.values()) if name == "Context Sync" else [last.get(int(ev.stream[r]))]
            )
            for node in targets:
                if node is not None:
                    g.add(node, int(end_of[runtime]), SYNC)
            continue
        s, t, stream = int(start_of[r]), int(end_of[r]), int(ev.stream[r])
        if s < 0 or t < 0:
            continue
        g.add(s, t, OPERATOR)
        sync_src = kernel_sync.pop(r, None)
        sync_end = int(end_of[sync_src]) if sync_src is not None else -1
        if sync_end >= 0:
            g.add(sync_end, s, SYNC)
        rt_ts = ev.ts[runtime] if runtime >= 0 else None
        prev = last.get(stream)
        launch_added = False
        if (
            runtime >= 0
            and q.get(runtime) == 1
            and q.get(r) == 0
            and (prev is None or g.node_ts[prev] < rt_ts)
            and (sync_end < 0 or g.node_ts[sync_end] < rt_ts)
            and start_of[runtime] >= 0
        ):
            g.add(int(start_of[runtime]), s, LAUNCH)
            launch_added = True
        elif (
            prev is not None
            and (
                opts.kk_threshold_ns is None
                or g.node_ts[s] - g.node_ts[prev] < opts.kk_threshold_ns
            )
            and (sync_end < 0 or g.node_ts[sync_end] < g.node_ts[prev])
        ):
            g.add(prev, s, KERNEL_KERNEL)
        if opts.zero_weight_launch and not launch_added and runtime >= 0 and start_of[runtime] >= 0:
            g.add(int(start_of[runtime]), s, LAUNCH, zero=True)
        last[stream] = t


def hta_critical_path(g: HtaGraph) -> list[int]:
    """HTA's critical path (node list) of *g*; also stored as ``g.path``."""
    w = np.maximum(np.asarray(g.weight, dtype=np.int64), 0)
    g.path = hta_longest_path(
        len(g.node_ts), np.asarray(g.src, np.int64), np.asarray(g.dst, np.int64), w
    )
    return g.path
