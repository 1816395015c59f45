"""Single rank: the critical path equals HTA's, edge for edge (HTA's overlaid output for
simple_add, and the cases HTA's own tests state in tests/test_critical_path_analysis.py)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.critical_path.events import Events, build_events
from analyzers.critical_path.hta_graph import (
    DEPENDENCY,
    KERNEL_KERNEL,
    LAUNCH,
    OPERATOR,
    SYNC,
    VIZ_TYPES,
    HtaGraph,
    HtaOptions,
    build_hta_graph,
    clip_window,
    hta_critical_path,
)
from collectors.load import load_traces
from collectors.model import Trace
from tests.support.env import shared_path
from tests.support.hta_reference import raw_events

ALEX_FWD = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"


def _load(*parts: str) -> tuple[Events, Path]:
    p = shared_path("kineto", "hta", "critical_path", *parts)
    return build_events(load_traces([p])[0]), p


def _graph(ev: Events, annotation: str | None, instance: int, opts: HtaOptions) -> HtaGraph:
    if annotation is None:  # HTA annotation="": the whole trace
        lo, hi = int(ev.ts.min()), int(ev.end.max())
    else:
        m = np.flatnonzero(ev.is_host & np.array([annotation in s for s in ev.name.tolist()]))
        a = m[np.argsort(ev.order[m])][instance]
        lo, hi = int(ev.ts[a]), int(ev.end[a])
    g = build_hta_graph(ev, clip_window(ev, lo, hi), opts)
    hta_critical_path(g)
    return g


def _nodes(g: HtaGraph, ev: Events, raw_index: int) -> tuple[int, int]:
    """(start node, end node) of the event at *raw_index* of traceEvents."""
    e = int(np.flatnonzero(ev.order == raw_index)[0])
    nodes = np.flatnonzero(g.node_event == e)
    start = int(nodes[g.node_start[nodes]][0])
    end = int(nodes[~g.node_start[nodes]][0])
    return start, end


def _edge(g: HtaGraph, u: int, v: int) -> tuple[str, int]:
    k = g.edge(u, v)
    return g.etype[k], g.weight[k] // 1000  # HTA weights are µs


def _flow_key(g: HtaGraph, ev: Events, raw: list[dict[str, Any]], node: int) -> tuple[Any, ...]:
    """HTA's flow-event end point of a node: the event's pid/tid and ts (start) or end (end;
    1 µs earlier on GPU rows)."""
    r = raw[int(ev.order[int(g.node_event[node])])]
    if g.node_start[node]:
        return (r["pid"], r["tid"], r["ts"])
    back = min(1, r["dur"]) if r.get("args", {}).get("device", -1) >= 0 else 0
    return (r["pid"], r["tid"], r["ts"] + r["dur"] - back)


def test_simple_add_whole_trace_equals_hta_overlaid_output_edge_for_edge() -> None:
    ev, p = _load("simple_add", "benchmark_result_493459_1694039959_trace.json.gz")
    assert (ev.order[ev.is_host] >= 0).all()
    out = shared_path(
        "kineto",
        "hta",
        "critical_path",
        "end_to_end",
        "simple_add",
        "output",
        "overlaid_critical_path_trace.json.gz",
    )
    ref = raw_events(out)
    raw = raw_events(p)
    # HTA's end-to-end run: annotation "", no zero-weight launch edges (env option unset)
    g = _graph(ev, None, 0, HtaOptions(zero_weight_launch=False))
    critical = {int(ev.order[e]) for e in g.path_events}
    ref_critical = {
        i for i, e in enumerate(ref) if e.get("ph") == "X" and e["args"].get("critical")
    }
    assert len(ref_critical) == 624
    assert critical == ref_critical
    mine = collections.Counter(
        _flow_key(g, ev, raw, g.src[k])
        + _flow_key(g, ev, raw, g.dst[k])
        + (g.etype[k], g.weight[k] // 1000)
        for k in g.path_edges
        if g.etype[k] in VIZ_TYPES
    )
    pairs: dict[int, dict[str, Any]] = collections.defaultdict(dict)
    for e in ref:
        if e.get("cat") == "critical_path":
            pairs[e["id"]][e["ph"]] = e
    theirs = collections.Counter(
        (
            b["s"]["pid"],
            b["s"]["tid"],
            b["s"]["ts"],
            b["f"]["pid"],
            b["f"]["tid"],
            b["f"]["ts"],
            b["s"]["args"]["type"],
            b["s"]["args"]["weight"],
        )
        for b in pairs.values()
    )
    assert sum(theirs.values()) == 192
    assert mine == theirs


@pytest.mark.parametrize("opts", [HtaOptions(), HtaOptions.release_0_5()], ids=["main", "0.5"])
def test_simple_add_forward_instance_matches_hta_test_expectations(opts: HtaOptions) -> None:
    ev, _ = _load("simple_add", "benchmark_result_493459_1694039959_trace.json.gz")
    g = _graph(ev, ALEX_FWD, 1, opts)
    assert len(g.path) == 315
    assert len(g.path_events) == 159
    assert sum(1 for k in g.path_edges if g.etype[k] in VIZ_TYPES) == 21
    relu, clamp, launch = _nodes(g, ev, 286), _nodes(g, ev, 287), _nodes(g, ev, 1005)
    assert [ev.name[int(g.node_event[relu[0]])], ev.name[int(g.node_event[launch[0]])]] == [
        "aten::relu_",
        "cudaLaunchKernel",
    ]
    assert (relu, clamp, launch) == ((57, 62), (58, 61), (59, 60))
    assert _edge(g, relu[0], clamp[0]) == (OPERATOR, 15)
    assert _edge(g, clamp[0], launch[0]) == (OPERATOR, 14)
    assert _edge(g, launch[0], launch[1]) == (OPERATOR, 17)
    assert _edge(g, launch[1], clamp[1]) == (OPERATOR, 15)
    assert _edge(g, clamp[1], relu[1]) == (OPERATOR, 32)
    fft = _nodes(g, ev, 1051)
    fft_rt = _nodes(g, ev, int(ev.order[int(ev.link[int(np.flatnonzero(ev.order == 1051)[0])])]))
    assert _edge(g, fft_rt[0], fft[0]) == (LAUNCH, 27)
    ampere = _nodes(g, ev, 1067)
    assert _edge(g, fft[1], ampere[0]) == (KERNEL_KERNEL, 7)
    amp_rt = _nodes(g, ev, int(ev.order[int(ev.link[int(np.flatnonzero(ev.order == 1067)[0])])]))
    assert _edge(g, amp_rt[0], ampere[0]) == (LAUNCH, 0)
    assert _edge(g, _nodes(g, ev, 1275)[1], _nodes(g, ev, 1281)[1]) == (SYNC, 0)


def test_alexnet_forward_instance_has_hta_path_length_and_gpu_to_gpu_sync_edge() -> None:
    ev, _ = _load("alexnet", "benchmark_result_2869224_1695835535_trace.json.gz")
    g = _graph(ev, ALEX_FWD, 1, HtaOptions())
    assert len(g.path) == 149
    assert _edge(g, _nodes(g, ev, 1109)[1], _nodes(g, ev, 1161)[0]) == (SYNC, 0)


def test_event_sync_edges_from_kernel_to_event_and_device_synchronize() -> None:
    ev, _ = _load("cuda_event_sync", "event_sync_trace.json.gz")
    g = _graph(ev, "ProfilerStep", 0, HtaOptions())
    kernel_end = _nodes(g, ev, 33)[1]
    assert _edge(g, kernel_end, _nodes(g, ev, 41)[1]) == (SYNC, 0)
    assert _edge(g, kernel_end, _nodes(g, ev, 51)[1]) == (SYNC, 0)


def test_stream_wait_event_links_kernel_on_recorded_stream_not_the_latest() -> None:
    ev, _ = _load("cuda_event_sync_multi_stream", "event_sync_trace.json.gz")
    g = _graph(ev, None, 0, HtaOptions())
    assert _edge(g, _nodes(g, ev, 24)[1], _nodes(g, ev, 84)[0]) == (SYNC, 0)


def test_without_wait_on_fields_event_syncs_add_no_edge() -> None:
    """A source that does not record ``wait_on_*`` (-1): HTA then skips the event-sync edges."""
    p = shared_path("kineto", "hta", "critical_path", "cuda_event_sync", "event_sync_trace.json.gz")
    t = load_traces([p])[0]
    assert (t.gpu["wait_on_event_correlation"] > -1).any()
    gpu = t.gpu.assign(wait_on_stream=-1, wait_on_event_correlation=-1)
    ev = build_events(Trace(t.meta, gpu, t.host, t.annotations, t.counters))
    g = build_hta_graph(ev, clip_window(ev, int(ev.ts.min()), int(ev.end.max())))
    assert SYNC in g.etype  # stream / context syncs still link
    assert DEPENDENCY in g.etype
    assert (ev.wait_on_corr == -1).all()
