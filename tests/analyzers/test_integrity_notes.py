"""Integrity notes (docs/metrics.md §10, analyzers/integrity.py): each case produces its note, a
graph-capture trace never gets a host-bound verdict or the host-bound / idle findings, and a
step without GPU work gives a null verdict, never NaN.  Hand-built traces in µs
(tests/builders.py); the prelaunched work of a shared TraceLens trace is counted against the
raw JSON (tests/support/raw_kineto.py)."""

from __future__ import annotations

import json
from pathlib import Path

from analyzers.findings import findings
from analyzers.host_bound import rank_verdict, step_verdicts
from analyzers.integrity import integrity
from collectors.kineto import read_kineto
from reports.summary import build_summary
from tests.support.builders import US, trace_us
from tests.support.env import shared_path
from tests.support.raw_kineto import events

RT = "cuda_runtime"
STEPS = [(1, 0, 100), (2, 100, 200), (3, 200, 300)]


def call(name: str, t: float, corr: int) -> tuple:
    return (name, RT, t, t + 1, 1, corr)


def _slow_launches(capture: bool) -> object:
    """Two window steps whose kernels are launched late (host-bound), with or without a stream
    capture recorded in the first."""
    host = [
        call("hipLaunchKernel", 3, 2),
        call("hipLaunchKernel", 78, 3),
        call("hipLaunchKernel", 148, 4),
        call("hipLaunchKernel", 201, 5),
    ]
    if capture:
        host += [call("hipStreamBeginCapture", 20, 60), call("hipStreamEndCapture", 40, 61)]
    gpu = [
        ("K1", 7, 5, 10, 2),
        ("K2", 7, 80, 90, 3),
        ("K3", 7, 150, 160, 4),
        ("K4", 7, 202, 250, 5),
    ]
    return trace_us(gpu, host, STEPS)


def test_a_capture_trace_gets_its_note_and_no_host_bound_verdict() -> None:
    plain, captured = _slow_launches(False), _slow_launches(True)
    assert rank_verdict(plain).verdict == "host-bound"  # the same trace without the capture
    assert set(step_verdicts(plain)["verdict"]) == {"host-bound"}
    i = integrity(captured)
    assert (i.capture, i.capture_regions) == (True, 1)
    assert any(n.startswith("graph-capture trace (1 capture region") for n in i.notes)
    rv = rank_verdict(captured)
    assert (rv.verdict, rv.basis) == (None, "capture trace")
    assert step_verdicts(captured)["verdict"].tolist() == [None, None]
    doc = json.loads(json.dumps(build_summary([captured]), allow_nan=False))
    rank = doc["ranks"][0]
    assert rank["integrity"]["capture"] is True
    assert rank["idle"]["host_bound"]["verdict"] is None
    assert [s["verdict"] for s in rank["idle"]["steps"]] == [None, None]
    ids = {f.id for f in findings(doc)}
    assert "host_bound" not in ids and "gpu_idle" not in ids  # no "try CUDA graphs"
    plain_ids = {f.id for f in findings(json.loads(json.dumps(build_summary([plain]))))}
    assert {"host_bound", "gpu_idle"} <= plain_ids


def test_the_shared_capture_trace_gets_no_host_bound_verdict() -> None:
    path = shared_path(
        "kineto", "tracelens", "inference", "sglang_decode", "capture_traces", "bs_32_rank0.json.gz"
    )
    doc = build_summary([read_kineto(path)])
    rank = doc["ranks"][0]
    assert rank["integrity"]["capture"] is True
    assert rank["idle"]["host_bound"]["verdict"] is None
    assert all(s["verdict"] is None for s in rank["idle"]["steps"])
    assert "host_bound" not in {f.id for f in findings(doc)}


def test_graph_launches_without_recorded_kernels_are_counted_with_the_idle_after_them() -> None:
    # K1 [5,100); graph A (recorded) [105,300); graph B at 310: nothing recorded; K2 [700,800);
    # graph C at 900, after the last GPU event: no idle inside the GPU span follows it
    t = trace_us(
        [
            ("K1", 7, 5, 100, 1),
            ("G1", 7, 105, 200, 2),
            ("G2", 7, 200, 300, 2),
            ("K2", 7, 700, 800, 4),
        ],
        [
            call("hipLaunchKernel", 0, 1),
            call("hipGraphLaunch", 100, 2),
            call("hipGraphLaunch", 310, 3),
            call("hipLaunchKernel", 320, 4),
            call("hipGraphLaunch", 900, 5),
        ],
        [],
    )
    i = integrity(t)
    assert (i.graph_launches, i.graph_launches_unrecorded) == (3, 2)
    assert i.unrecorded_idle_ns == (700 - 310) * US  # the gap [300,700) from the launch on
    (note,) = [n for n in i.notes if "graph launch" in n]
    assert note.startswith("2 of 3 graph launch(es) have no recorded GPU work")
    assert "0.390 ms of GPU idle time follows them" in note


def test_an_idle_gap_dominating_the_first_step_is_named() -> None:
    # step 1 launches its only kernel after 85 µs: on the GPU clock it is [0, 98), 88 idle
    t = trace_us(
        [("K1", 7, 88, 98, 1), ("K2", 7, 102, 195, 2), ("K3", 7, 205, 290, 3)],
        [call("cudaLaunchKernel", t, c) for t, c in ((85, 1), (101, 2), (201, 3))],
        STEPS,
    )
    (gap,) = integrity(t).edge_gaps
    assert (gap.edge, gap.step, gap.start_ns, gap.end_ns) == ("first", 1, 0, 88 * US)
    assert gap.share == 88 / 98
    assert "one idle gap of 0.088 ms is 89.8 % of step 1 on the GPU clock" in " ".join(
        integrity(t).notes
    )


def test_a_step_without_gpu_work_has_a_null_verdict_and_the_summary_no_nan() -> None:
    t = trace_us(
        [("K1", 7, 5, 90, 1), ("K3", 7, 205, 290, 3)],
        [call("cudaLaunchKernel", 2, 1), call("cudaLaunchKernel", 201, 3)],
        STEPS,
    )
    doc = json.loads(json.dumps(build_summary([t]), allow_nan=False))
    idle_steps = doc["ranks"][0]["idle"]["steps"]
    assert [s["verdict"] for s in idle_steps] == ["GPU-bound", None]
    step2 = doc["ranks"][0]["steps"][1]
    assert (step2["gpu_start_ns"], step2["gpu_duration_ns"], step2["work_events"]) == (None, 0, 0)
    assert step2["launch_lag_ns"] is None and step2["steps_behind"] is None


def _raw_prelaunched(path: Path) -> tuple[int, int]:
    """GPU events of the raw JSON whose correlation id has no runtime call and is below every
    runtime call's id, and the union of their intervals (ns)."""
    evs = events(path)
    calls = {
        int(e["args"]["correlation"])
        for e in evs
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e["args"] or {})
    }
    pre = sorted(
        (e["ts_ns"], e["end_ns"])
        for e in evs
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and "stream" in e["args"]
        and int(e["args"].get("correlation", -1)) >= 0
        and int(e["args"]["correlation"]) not in calls
        and int(e["args"]["correlation"]) < min(calls)
    )
    total, end = 0, None
    for s, e in pre:
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return len(pre), total


def test_work_launched_before_the_profiler_started_is_counted_on_a_shared_trace() -> None:
    path = shared_path("kineto", "tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    n, union = _raw_prelaunched(path)
    i = integrity(read_kineto(path))
    assert (i.prelaunched_events, i.prelaunched_ns) == (n, union)
    assert n == 463 and 13.0e6 < union < 13.4e6  # the 13.3 ms of issue 16
    (note,) = [x for x in i.notes if "before the profiler started" in x]
    assert note.startswith("463 GPU event(s), ")
