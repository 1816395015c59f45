"""Cross-stream waits in the step graph: with the sync rows' ``wait_on_*`` fields the graph has
HTA's event-sync edges; without them (the model fallback) the waits are flagged, and a step
whose critical path crosses one says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analyzers.critical_path.analysis import critical_path_analysis
from analyzers.critical_path.rank_graph import KINDS, RankGraph, rank_graph
from analyzers.critical_path.simulate import GRAPH_NODE_NS, Change, delays
from analyzers.critical_path.step_graph import build_step_graph
from collectors.load import load_traces
from collectors.model import Trace
from reports.critical_path_section import critical_path_of
from tests.support.env import shared_path
from tests.support.hta_reference import raw_events, with_raw_fields

WAIT_COLUMNS = ["wait_on_stream", "wait_on_event_correlation", "event_index"]


def _trace(case: str, fields: bool) -> tuple[Trace, Path]:
    p = shared_path("kineto", "hta", "critical_path", case, "event_sync_trace.json.gz")
    t = load_traces([p])[0]
    bare = Trace(
        t.meta,
        t.gpu.drop(columns=WAIT_COLUMNS, errors="ignore"),
        t.host.drop(columns=["event_index"], errors="ignore"),
        t.annotations,
        t.counters,
    )
    return (with_raw_fields(bare, p) if fields else bare), p


def _ns(x: float) -> int:
    return round(x * 1000)


def _edges(g: RankGraph, kind: str) -> list[tuple[int, int, str]]:
    e = np.flatnonzero(g.kind == KINDS.index(kind))
    return [(int(g.node_time[g.src[i]]), int(g.node_time[g.dst[i]]), str(g.name[i])) for i in e]


def test_event_synchronize_waits_on_the_kernel_recorded_before_the_event() -> None:
    t, p = _trace("cuda_event_sync", fields=True)
    raw = raw_events(p)
    g = rank_graph(t)
    kernel, call = raw[33], raw[41]  # HTA's test: kernel 33's end → cudaEventSynchronize 41
    assert call["name"] == "cudaEventSynchronize"
    want = (_ns(kernel["ts"] + kernel["dur"]), _ns(call["ts"] + call["dur"]), call["name"])
    assert want in _edges(g, "sync")
    assert not g.unresolved.any()
    (path,) = critical_path_analysis([t]).paths
    assert path.unresolved_waits == 0


def test_event_synchronize_without_wait_on_fields_is_flagged_on_the_path() -> None:
    t, _ = _trace("cuda_event_sync", fields=False)
    assert "wait_on_stream" not in t.gpu.columns
    g = rank_graph(t)
    assert [n for _, _, n in _edges(g, "sync")] == [
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
    ]
    assert list(g.name[g.unresolved]) == ["cudaEventSynchronize"]
    (path,) = critical_path_analysis([t]).paths
    assert path.unresolved_waits == 1
    section = critical_path_of([t])
    assert section is not None and section["unresolved_waits"] == 1
    assert section["steps"][0]["unresolved_waits"] == 1
    assert any("cross-stream wait" in n for n in section["notes"])


def test_stream_wait_event_links_the_recorded_kernel_to_the_next_row_on_the_waiting_stream() -> (
    None
):
    t, p = _trace("cuda_event_sync_multi_stream", fields=True)
    raw = raw_events(p)
    g = rank_graph(t)
    src, dst = raw[24], raw[84]  # HTA's test: kernel 24's end → row 84's start
    want = (_ns(src["ts"] + src["dur"]), _ns(dst["ts"]), dst["name"])
    assert _edges(g, "wait") == [want]
    assert not g.unresolved.any()
    bare = rank_graph(_trace("cuda_event_sync_multi_stream", fields=False)[0])
    assert _edges(bare, "wait") == []
    assert list(bare.name[bare.unresolved]) == [dst["name"]]
    assert int(bare.node_time[bare.dst[bare.unresolved]][0]) == _ns(dst["ts"])


@pytest.mark.parametrize(
    "path",
    [("nccl_parser_config", "nccl_data.json.gz"), ("trace_filter", "sampled_rank-0.json.gz")],
)
def test_real_traces_without_sync_rows_report_the_waits_their_paths_cross(
    path: tuple[str, str],
) -> None:
    """These Kineto traces record cudaStreamWaitEvent calls (84 in nccl_data) but no sync rows:
    every wait is unresolved; trace_filter has none."""
    t = load_traces([shared_path("kineto", "hta", *path)])[0]
    g = rank_graph(t)
    waits = int((t.host["name"] == "cudaStreamWaitEvent").sum())
    assert (waits > 0) == (path[0] == "nccl_parser_config")
    assert bool(g.unresolved.any()) == (waits > 0)
    section = critical_path_of([t])
    assert section is not None
    crossed = sum(s["unresolved_waits"] for s in section["steps"])
    assert crossed == section["unresolved_waits"]
    assert (crossed > 0) == (waits > 0)  # nccl_data: 8 per step
    assert bool(section["notes"]) == (crossed > 0)


def test_cuda_graphs_keeps_the_gaps_before_rows_that_follow_an_unresolved_wait() -> None:
    """A graph replay removes launch cost, not a wait for another stream: the launch and
    stream-order edges into such rows keep their measured delays (other gaps shrink)."""
    t = load_traces([shared_path("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz")])[0]
    g = build_step_graph([t])
    d = delays(g, Change("cuda_graphs"))
    gap_edges = np.isin(g.kind, (KINDS.index("launch"), KINDS.index("stream"))) & g.binding
    kept = gap_edges & g.unresolved & (g.delay > GRAPH_NODE_NS)
    shrunk = gap_edges & ~g.unresolved & (g.delay > GRAPH_NODE_NS)
    assert kept.sum() > 0 and shrunk.sum() > 0
    assert (d[kept] == g.delay[kept]).all()
    assert (d[shrunk] == GRAPH_NODE_NS).all()
    assert all("after an unresolved cross-stream wait" in x for x in g.detail[kept])
