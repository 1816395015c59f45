"""The edges of a rank's graph part (:mod:`analyzers.critical_path.rank_graph`) that synchronise:
``sync`` edges into blocking calls' ends and ``wait`` edges between streams, and the nodes after
a wait the trace does not resolve (docs/critical-path.md §2).  Edges are ``(sources,
destinations)`` lists of node ids."""

from __future__ import annotations

import numpy as np

from analyzers.critical_path.events import LAUNCH_NAMES, Events
from analyzers.critical_path.hta_graph import event_records
from collectors.arrays import dense_codes, sorted_unique
from collectors.linking import group_codes

WAIT_CALLS = ("cudaStreamWaitEvent", "cudaEventSynchronize")
Edges = tuple[list[int], list[int]]


def sync_edges(ev: Events, end: np.ndarray, order: np.ndarray) -> Edges:
    """``sync`` edges (node ids, *end*: each event's end node): awaited GPU row's end → the
    blocking call's end: per Stream/Context Sync row, the rows on its stream (all streams of
    the device) that ended last before the sync ended (*order*: the GPU rows that are nodes,
    by device, stream and time)."""
    syncs = np.flatnonzero(ev.cat_in(("cuda_sync",)) & (ev.link >= 0))
    us: list[int] = []
    vs: list[int] = []
    for r in syncs.tolist():
        call = int(ev.link[r])
        if end[call] < 0 or ev.names_of(r) not in ("Stream Sync", "Context Sync"):
            continue
        cand = order[(ev.pid[order] == ev.pid[r]) & (ev.end[order] <= ev.end[r])]
        if ev.names_of(r) == "Stream Sync":
            cand = cand[ev.stream[cand] == ev.stream[r]]
        for s in sorted_unique(ev.stream[cand]).tolist():
            c = cand[ev.stream[cand] == s]
            if len(c):
                us.append(int(end[c[np.argmax(ev.end[c])]]))
                vs.append(int(end[call]))
    return us, vs


def next_launched_rows(ev: Events, calls: np.ndarray, streams: np.ndarray) -> np.ndarray:
    """Per host call, the GPU row of the first launch on the call's thread after it — onto
    ``streams[i]`` when ≥ 0, any stream otherwise — or -1."""
    out = np.full(len(calls), -1, np.int64)
    if not len(calls):
        return out
    launch = ev.is_host & ev.name_in(LAUNCH_NAMES) & (ev.link >= 0)
    launches = np.flatnonzero(launch)
    launches = launches[ev.stream[ev.link[launches]] >= 0]
    if not len(launches):
        return out
    # each launch stands in its (pid, tid, stream) group and in its thread's (pid, tid, -1),
    # the latter only where some call asks for any stream, the former where one asks for a
    # stream; per call, the first entry of its group (in time order, then row order) after
    # its start
    streams = np.asarray(streams, np.int64)
    on = ev.stream[ev.link[launches]]
    halves = [(launches, on)] if (streams >= 0).any() else []
    if (streams < 0).any():
        halves.append((launches, np.full(len(launches), -1, np.int64)))
    entry = np.concatenate([e for e, _ in halves])
    keys = (ev.pid[entry], ev.tid[entry], np.concatenate([k for _, k in halves]))
    queries = (ev.pid[calls], ev.tid[calls], streams)
    code, q_code = group_codes(keys, queries)
    t_entry, t_query = ev.ts[entry], ev.ts[calls]
    lo = min(int(t_entry.min()), int(t_query.min()))
    width = max(int(t_entry.max()), int(t_query.max())) - lo + 1
    order = np.lexsort((t_entry, code))  # stable: entries of equal (code, time) in row order
    if (int(max(code.max(), q_code.max())) + 1) * width < 2**62:  # (code, time) as one int64
        composite = code[order] * width + (t_entry[order] - lo)
        q_key = q_code * width + (t_query - lo)
    else:  # times as ranks: one code space
        rank = dense_codes(np.concatenate([t_entry, t_query]))
        width = int(rank.max()) + 1
        composite = code[order] * width + rank[: len(entry)][order]
        q_key = q_code * width + rank[len(entry) :]
    at = np.searchsorted(composite, q_key, side="right")
    hit = at < len(order)
    hit[hit] = code[order[at[hit]]] == q_code[hit]
    out[hit] = ev.link[entry[order[at[hit]]]]
    return out


def wait_edges(ev: Events, start: np.ndarray, end: np.ndarray) -> tuple[Edges, Edges, set[int]]:
    """The ``wait`` and the event ``sync`` edges of the waits the trace resolves (``wait_on_*``
    known, the awaited row recorded by HTA's rule: the last row launched on the recorded stream
    before the ``cudaEventRecord``), and the nodes that follow a wait it does not resolve."""
    records = event_records(ev)
    unresolved: set[int] = set()
    rows = np.flatnonzero(ev.cat_in(("cuda_sync",)) & (ev.link >= 0) & ~ev.is_host)
    swe = rows[ev.names_of(rows) == "Stream Wait Event"]
    esy = rows[ev.names_of(rows) == "Event Sync"]
    targets = next_launched_rows(ev, ev.link[swe], ev.stream[swe])
    ok = (targets >= 0) & (start[np.maximum(targets, 0)] >= 0)
    swe, targets = swe[ok], targets[ok]
    waits = _awaited(ev, records, end, swe, start[targets], ev.ts[targets], unresolved)
    calls = ev.link[esy]
    ok = end[calls] >= 0
    esy, calls = esy[ok], calls[ok]
    ok = ev.names_of(calls) == "cudaEventSynchronize"
    esy, calls = esy[ok], calls[ok]
    syncs = _awaited(ev, records, end, esy, end[calls], ev.end[calls], unresolved)
    # wait calls without a sync row at all (older Kineto records none)
    bare = np.flatnonzero(ev.is_host & ev.name_in(WAIT_CALLS) & (ev.link < 0))
    swe_calls = bare[ev.names_of(bare) == "cudaStreamWaitEvent"]
    nxt = next_launched_rows(ev, swe_calls, np.full(len(swe_calls), -1, np.int64))
    unresolved.update(int(start[t]) for t in nxt.tolist() if t >= 0 and start[t] >= 0)
    es_calls = bare[ev.names_of(bare) == "cudaEventSynchronize"]
    unresolved.update(int(end[c]) for c in es_calls.tolist() if end[c] >= 0)
    return waits, syncs, unresolved


def _awaited(
    ev: Events,
    records: dict[int, int],
    end: np.ndarray,
    rows: np.ndarray,
    node: np.ndarray,
    at: np.ndarray,
    unresolved: set[int],
) -> Edges:
    """Per sync row of *rows* (waiter node *node*, at time *at*): an edge from the end node of
    the GPU row its awaited ``cudaEventRecord`` launched, when that row ended by *at*; the
    waiter's node goes to *unresolved* when the trace lacks the record."""
    us: list[int] = []
    vs: list[int] = []
    for r, v, t in zip(rows.tolist(), node.tolist(), at.tolist(), strict=True):
        launch = records.get(int(ev.gpu_wait_on_corr[r - ev.n_host]), -1)
        if launch < 0:
            unresolved.add(v)
            continue
        k = int(ev.link[launch])
        if k >= 0 and end[k] >= 0 and ev.end[k] <= t:
            us.append(int(end[k]))
            vs.append(v)
    return us, vs
