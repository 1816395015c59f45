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
category of a GPU row (:func:`analyzers.critical_path.sources.gpu_categories`), whether a host
edge lies inside ops that launch GPU work (the CUDA-graphs what-if), and whether its end follows
a cross-stream wait the trace does not resolve (*unresolved*: a ``cudaStreamWaitEvent`` /
``cudaEventSynchronize`` without the sync row's ``wait_on_*`` fields; the row launched next on
the waiting stream — on the calling thread when the stream is unknown — or the call's end).

:func:`part_table` / :func:`part_from_table` turn a part into one table and back: what a
many-rank worker returns (cache-storable, no Trace); the cross-rank collective joins are added
by :func:`analyzers.critical_path.step_graph.build_step_graph`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analyzers.critical_path.callstack import thread_walk_arrays
from analyzers.critical_path.events import LAUNCH_NAMES, NODE_CATS, Events, build_events
from analyzers.critical_path.hta_graph import event_records
from analyzers.critical_path.sources import (
    COMMUNICATION,
    MEMORY,
    collectives_of,
    gpu_categories,
)
from collectors.arrays import dense_codes, sorted_unique
from collectors.linking import group_codes

if TYPE_CHECKING:
    from collectors.model import Trace

KINDS = ("host", "gpu", "stream", "launch", "sync", "wait", "arrive", "transfer", "complete")
"""Edge kinds; ``arrive`` / ``transfer`` are the cross-rank edges of the step graph."""
K = {k: i for i, k in enumerate(KINDS)}
STEP_PREFIX = "ProfilerStep#"
SYNC_CALL_NAMES = frozenset(
    {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}
)
"""Blocking host calls: their host time is ``synchronisation``."""
DATA_LOADING = re.compile(r"DataLoader|data_load|dataloader|_next_data|fetch", re.I)
WAIT_CALLS = ("cudaStreamWaitEvent", "cudaEventSynchronize")


@dataclass
class RankGraph:
    """One rank's nodes and edges (module docstring); node ids are local to the part."""

    rank: int
    node_time: np.ndarray
    """Measured time of each node on the rank's clock (ns)."""
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    """Index into :data:`KINDS`."""
    cause: np.ndarray
    detail: np.ndarray
    name: np.ndarray
    """Per edge: cause label, its detail and the event's name (object arrays of str)."""
    category: np.ndarray
    """Per edge: the op category of a ``gpu`` edge's row, "" elsewhere."""
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
    """Nodes and edges added in blocks (numpy arrays, concatenated once at the end)."""

    def __init__(self) -> None:
        self.n_nodes = 0
        self._t: list[np.ndarray] = []
        self._event: list[np.ndarray] = []
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._kind: list[np.ndarray] = []

    def nodes(self, times: np.ndarray, events: np.ndarray) -> np.ndarray:
        base = self.n_nodes
        self._t.append(np.asarray(times, np.int64))
        self._event.append(np.asarray(events, np.int64))
        self.n_nodes += len(times)
        return np.arange(base, base + len(times), dtype=np.int64)

    def edges(self, u: np.ndarray | list[int], v: np.ndarray | list[int], kind: str) -> None:
        uu, vv = np.asarray(u, np.int64), np.asarray(v, np.int64)
        ok = (uu >= 0) & (vv >= 0) & (uu != vv)
        self._src.append(uu[ok])
        self._dst.append(vv[ok])
        self._kind.append(np.full(int(ok.sum()), K[kind], np.int64))

    @staticmethod
    def _cat(blocks: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(blocks) if blocks else np.zeros(0, np.int64)

    def node_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(time, event) of every node, in id order."""
        return self._cat(self._t), self._cat(self._event)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, dst, kind) of every edge, in the order added."""
        return self._cat(self._src), self._cat(self._dst), self._cat(self._kind)


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


def rank_graph(trace: Trace) -> RankGraph:
    """The part of *trace*'s rank (module docstring)."""
    ev = build_events(trace)
    b = _Builder()
    dur = ev.end - ev.ts
    is_step = ev.is_host & ev.per_name(_is_step)
    host = ev.is_host & (dur > 0) & (np.isin(ev.cat, NODE_CATS) | is_step)
    gpu = ~ev.is_host & (ev.stream >= 0) & np.isin(ev.cat, ("kernel", "gpu_memcpy", "gpu_memset"))
    members = np.flatnonzero(host | gpu)
    start = np.full(len(ev), -1, np.int64)
    end = np.full(len(ev), -1, np.int64)
    start[members] = b.nodes(ev.ts[members], members)
    end[members] = b.nodes(ev.end[members], members)
    launches_gpu = _host_edges(b, ev, start, end, host)
    g_rows = np.flatnonzero(gpu)
    b.edges(start[g_rows], end[g_rows], "gpu")
    order = g_rows[np.lexsort((ev.ts[g_rows], ev.stream[g_rows], ev.pid[g_rows]))]
    same = (ev.stream[order][1:] == ev.stream[order][:-1]) & (
        ev.pid[order][1:] == ev.pid[order][:-1]
    )
    b.edges(end[order][:-1][same], start[order][1:][same], "stream")
    lk = ev.link[g_rows]
    b.edges(np.where(lk >= 0, start[np.maximum(lk, 0)], -1), start[g_rows], "launch")
    _sync_edges(b, ev, end, order)
    unresolved_nodes = _wait_edges(b, ev, start, end)
    host_steps = np.flatnonzero(is_step & host)
    host_steps = host_steps[np.argsort(ev.ts[host_steps], kind="stable")]
    launch_of = np.where(lk >= 0, ev.ts[np.maximum(lk, 0)], -1)
    step_done: list[int] = []
    for s in host_steps.tolist():
        inside = (launch_of >= ev.ts[s]) & (launch_of < ev.end[s])
        ends = np.concatenate([[end[s]], end[g_rows[inside]]])
        done = int(max(ev.end[s], ev.end[g_rows[inside]].max(initial=ev.end[s])))
        node = int(b.nodes(np.array([done]), np.array([-1]))[0])
        b.edges(ends, np.full(len(ends), node), "complete")
        step_done.append(node)
    src, dst, kind = b.edge_arrays()
    n_edges = len(src)
    node_time, node_event = b.node_arrays()
    cats = np.concatenate([np.full(ev.n_host, "", dtype=object), gpu_categories(trace)])
    cause, detail, name, category = _labels(ev, node_event, src, dst, kind, cats, launches_gpu)
    flagged = np.zeros(b.n_nodes, bool)
    flagged[np.asarray(sorted(unresolved_nodes), np.int64)] = True
    unresolved = flagged[dst] if n_edges else np.zeros(0, bool)
    gaps = unresolved & np.isin(kind, (K["launch"], K["stream"]))
    detail[gaps] = [f"{d} after an unresolved cross-stream wait" for d in detail[gaps]]
    ev_u, ev_v = node_event[src], node_event[dst]
    launching = (kind == K["host"]) & launches_gpu[np.maximum(ev_u, 0)]
    launching &= launches_gpu[np.maximum(ev_v, 0)] & (ev_u >= 0) & (ev_v >= 0)
    coll = _collective_rows(ev, trace, start, end)
    return RankGraph(
        rank=trace.rank,
        node_time=node_time,
        src=src,
        dst=dst,
        kind=kind,
        cause=cause,
        detail=detail,
        name=name,
        category=category,
        launching=launching,
        unresolved=unresolved,
        step_num=np.array([_step_number(str(ev.name[s])) for s in host_steps], np.int64),
        step_start=start[host_steps].astype(np.int64),
        step_done=np.asarray(step_done, np.int64),
        **coll,
    )


def _host_edges(
    b: _Builder, ev: Events, start: np.ndarray, end: np.ndarray, host: np.ndarray
) -> np.ndarray:
    """Call-stack walk edges per thread (each boundary's node → the next one's); returns which
    host events are, or contain, a launch (a launch and its ancestors on the walk's stack)."""
    launches_gpu = np.zeros(len(ev), bool)
    is_launch = ev.name_in(LAUNCH_NAMES)
    parent_of = np.full(len(ev), -1, np.int64)
    for e, entering, parent in thread_walk_arrays(
        ev.ts, ev.end, ev.order, ev.pid, ev.tid, np.flatnonzero(host)
    ):
        node = np.where(entering, start[e], end[e]).astype(np.int64)
        b.edges(np.concatenate([[-1], node[:-1]]), node, "host")
        parent_of[e[entering]] = parent[entering]
    cur = np.flatnonzero(is_launch & host)
    while cur.size:
        launches_gpu[cur] = True
        cur = sorted_unique(parent_of[cur])
        cur = cur[(cur >= 0) & ~launches_gpu[np.maximum(cur, 0)]]
    return launches_gpu


def _sync_edges(b: _Builder, ev: Events, end: np.ndarray, order: np.ndarray) -> None:
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
        for s in sorted_unique(ev.stream[cand]).tolist():
            c = cand[ev.stream[cand] == s]
            if len(c):
                us.append(int(end[c[np.argmax(ev.end[c])]]))
                vs.append(int(end[call]))
    b.edges(us, vs, "sync")


def _next_launched_rows(ev: Events, calls: np.ndarray, streams: np.ndarray) -> np.ndarray:
    """Per host call, the GPU row of the first launch on the call's thread after it — onto
    ``streams[i]`` when ≥ 0, any stream otherwise — or -1."""
    launch = ev.is_host & ev.name_in(LAUNCH_NAMES) & (ev.link >= 0)
    launches = np.flatnonzero(launch)
    launches = launches[ev.stream[ev.link[launches]] >= 0]
    out = np.full(len(calls), -1, np.int64)
    if not len(launches) or not len(calls):
        return out
    # each launch stands in two groups, its (pid, tid, stream) and its thread's (pid, tid, -1);
    # per call, the first entry of its group (in time order, then row order) after its start
    on = ev.stream[ev.link[launches]]
    entry = np.concatenate([launches, launches])
    keys = (
        np.concatenate([ev.pid[launches], ev.pid[launches]]),
        np.concatenate([ev.tid[launches], ev.tid[launches]]),
        np.concatenate([on, np.full(len(launches), -1, np.int64)]),
    )
    queries = (ev.pid[calls], ev.tid[calls], np.asarray(streams, np.int64))
    code, q_code = group_codes(keys, queries)
    t_entry, t_query = ev.ts[entry], ev.ts[calls]
    rank = dense_codes(np.concatenate([t_entry, t_query]))  # times as ranks: one code space
    width = int(rank.max()) + 1
    order = np.lexsort((entry, t_entry, code))
    composite = code[order] * width + rank[: len(entry)][order]
    at = np.searchsorted(composite, q_code * width + rank[len(entry) :], side="right")
    hit = at < len(order)
    hit[hit] = code[order[at[hit]]] == q_code[hit]
    out[hit] = ev.link[entry[order[at[hit]]]]
    return out


def _wait_edges(b: _Builder, ev: Events, start: np.ndarray, end: np.ndarray) -> set[int]:
    """``wait`` / event ``sync`` edges of the waits the trace resolves (``wait_on_*`` known, the
    awaited row recorded by HTA's rule: the last row launched on the recorded stream before the
    ``cudaEventRecord``); returns the nodes that follow a wait it does not resolve."""
    records = event_records(ev)
    unresolved: set[int] = set()
    rows = np.flatnonzero((ev.cat == "cuda_sync") & (ev.link >= 0) & ~ev.is_host)
    swe = rows[ev.name[rows] == "Stream Wait Event"]
    esy = rows[ev.name[rows] == "Event Sync"]
    targets = _next_launched_rows(ev, ev.link[swe], ev.stream[swe])
    us: list[int] = []
    vs: list[int] = []
    for r, target in zip(swe.tolist(), targets.tolist(), strict=True):
        if target < 0 or start[target] < 0:
            continue
        launch = records.get(int(ev.wait_on_corr[r]), -1)
        if launch < 0:
            unresolved.add(int(start[target]))
            continue
        k = int(ev.link[launch])
        if k >= 0 and end[k] >= 0 and ev.end[k] <= ev.ts[target]:
            us.append(int(end[k]))
            vs.append(int(start[target]))
    b.edges(us, vs, "wait")
    us, vs = [], []
    for r in esy.tolist():
        call = int(ev.link[r])
        if end[call] < 0 or ev.name[call] != "cudaEventSynchronize":
            continue
        launch = records.get(int(ev.wait_on_corr[r]), -1)
        if launch < 0:
            unresolved.add(int(end[call]))
            continue
        k = int(ev.link[launch])
        if k >= 0 and end[k] >= 0 and ev.end[k] <= ev.end[call]:
            us.append(int(end[k]))
            vs.append(int(end[call]))
    b.edges(us, vs, "sync")
    # wait calls without a sync row at all (older Kineto records none)
    bare = np.flatnonzero(ev.is_host & ev.name_in(WAIT_CALLS) & (ev.link < 0))
    swe_calls = bare[ev.name[bare] == "cudaStreamWaitEvent"]
    nxt = _next_launched_rows(ev, swe_calls, np.full(len(swe_calls), -1, np.int64))
    unresolved.update(int(start[t]) for t in nxt.tolist() if t >= 0 and start[t] >= 0)
    es_calls = bare[ev.name[bare] == "cudaEventSynchronize"]
    unresolved.update(int(end[c]) for c in es_calls.tolist() if end[c] >= 0)
    return unresolved


def _labels(
    ev: Events,
    node_event: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    kind: np.ndarray,
    cats: np.ndarray,
    launches_gpu: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per edge (cause, detail, name, category); the cause table is blame's module docstring.

    A ``gpu`` edge: ``exposed_communication`` (detail: the kernel name up to its first "(",
    60 characters), ``memory`` (the name up to " (") or ``compute`` (its category); ``launch``
    / ``stream``: ``launch_gap``; ``sync``: ``synchronisation`` (the call); ``wait``:
    ``synchronisation`` (cross-stream wait); ``complete``: ``cpu``.  A host edge's time belongs
    to the op it ends in (or the parent op between siblings): ``synchronisation`` for a
    blocking call (:data:`SYNC_CALL_NAMES`), ``data_loading`` when the name matches
    :data:`DATA_LOADING`, ``launch_gap`` (``host``) between nodes of ops that launch GPU work
    (neither a ``ProfilerStep``), else ``cpu``.  Per-name work is done once per distinct name."""
    ev_v, ev_u = node_event[dst], node_event[src]
    ev_pos = np.where(ev_v >= 0, ev_v, ev_u)
    n_set = len(ev.name_set)
    code = np.where(ev_pos >= 0, ev.name_code[np.maximum(ev_pos, 0)], n_set)
    name_set = np.concatenate([ev.name_set, np.array([""], dtype=object)])
    names = name_set[code]
    gpu = kind == K["gpu"]
    cat_code, cat_set = pd_factorize(cats)
    edge_cat = np.where(gpu, cat_code[np.maximum(ev_u, 0)], -1)
    category = np.concatenate([cat_set, np.array([""], dtype=object)])[edge_cat]
    uniq = name_set.tolist()
    # labels as positions in one table: fixed labels, then per name, then per category
    fixed = ["", "cpu", "exposed_communication", "memory", "compute", "launch_gap",
             "synchronisation", "data_loading", "launch", "stream", "cross-stream wait",
             "complete", "host"]  # fmt: skip
    at = {v: i for i, v in enumerate(fixed)}
    n_u = len(uniq)
    comm_at, mem_at, name_at = len(fixed), len(fixed) + n_u, len(fixed) + 2 * n_u
    cat_at = len(fixed) + 3 * n_u
    table = np.asarray(
        fixed
        + [u.split("(")[0][:60] for u in uniq]
        + [u.split(" (")[0] for u in uniq]
        + uniq
        + cat_set.tolist(),
        dtype=object,
    )
    cause = np.full(len(src), at["cpu"], np.int64)
    detail = np.full(len(src), at[""], np.int64)
    is_comm = np.asarray([c == COMMUNICATION for c in cat_set.tolist()] + [False], bool)
    is_mem = np.asarray([c == MEMORY for c in cat_set.tolist()] + [False], bool)
    comm = gpu & is_comm[edge_cat]
    mem = gpu & is_mem[edge_cat] & ~comm
    comp = gpu & ~comm & ~mem
    cause[comm], detail[comm] = at["exposed_communication"], comm_at + code[comm]
    cause[mem], detail[mem] = at["memory"], mem_at + code[mem]
    cause[comp], detail[comp] = at["compute"], cat_at + edge_cat[comp]
    for k in ("launch", "stream"):
        hit = kind == K[k]
        cause[hit], detail[hit] = at["launch_gap"], at[k]
    sync = kind == K["sync"]
    cause[sync], detail[sync] = at["synchronisation"], name_at + code[sync]
    wait = kind == K["wait"]
    cause[wait], detail[wait] = at["synchronisation"], at["cross-stream wait"]
    detail[kind == K["complete"]] = at["complete"]
    # host edges (every other kind)
    host = ~np.isin(kind, [K[k] for k in ("gpu", "launch", "stream", "sync", "wait", "complete")])
    host &= ev_v >= 0

    def per_name(fn: Callable[[str], bool]) -> np.ndarray:
        return np.asarray([fn(u) for u in uniq], bool)[code]

    is_sync = host & per_name(SYNC_CALL_NAMES.__contains__)
    cause[is_sync], detail[is_sync] = at["synchronisation"], name_at + code[is_sync]
    data = host & ~is_sync & per_name(lambda n: DATA_LOADING.search(n) is not None)
    cause[data], detail[data] = at["data_loading"], name_at + code[data]
    is_step = ev.per_name(_is_step)
    u, v = np.maximum(ev_u, 0), np.maximum(ev_v, 0)
    gap = host & ~is_sync & ~data & (ev_u >= 0) & launches_gpu[v] & launches_gpu[u]
    gap &= ~(is_step[v] | is_step[u])
    cause[gap], detail[gap] = at["launch_gap"], at["host"]
    return table[cause], table[detail], names, category


def pd_factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, distinct values)`` of an object array (first-seen order; no missing values)."""
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return np.asarray(codes, np.int64), np.asarray(uniques, dtype=object)


def _collective_rows(
    ev: Events, trace: Trace, start: np.ndarray, end: np.ndarray
) -> dict[str, np.ndarray]:
    """The rank's collectives with a GPU row that is a node, in issue order (RankGraph)."""
    c = collectives_of(trace)
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
            kernels.append(str(ev.name[pos]))
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
