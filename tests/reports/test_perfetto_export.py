"""The Perfetto (Chrome-trace JSON) export (reports/perfetto.py, docs/report.md §7): every event
once, exact times, processes per rank, step markers and counters as counter tracks, NVML
counters aligned to the traces' clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from collectors.errors import UsageError
from collectors.load import load_traces
from collectors.model import TraceMeta, counter_table, make_trace
from reports.perfetto import (
    NO_STEP,
    NVML_PID,
    chrome_trace,
    gpu_pid,
    host_pid,
    step_counter,
    write_perfetto,
)
from tests.support.env import SAMPLES

UNIX = 1_700_000_000_000_000_000


def ns(ts_us: float, origin: int) -> int:
    return round(ts_us * 1000) + origin


def tiny(rank: int = 0, base: int | None = None) -> Any:
    gpu = {
        "name": ["gemm", "nccl"],
        "kind": ["kernel", "kernel"],
        "start_ns": [150, 210],
        "end_ns": [190, 390],
        "stream": [7, 20],
        "device": [0, 0],
        "correlation": [1, 2],
    }
    host = {
        "name": ["cudaLaunchKernel"],
        "cat": ["cuda_runtime"],
        "start_ns": [120],
        "end_ns": [130],
        "tid": [11],
        "pid": [5],
        "correlation": [1],
    }
    ann = {
        "name": ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5", "fwd"],
        "kind": ["step", "step", "step", "nvtx"],
        "start_ns": [100, 200, 300, 100],
        "end_ns": [200, 250, 400, 180],
        "step": [3, 4, 5, -1],
        "tid": [11, 11, 11, 11],
    }
    counters = {
        "name": ["Total Allocated"] * 2,
        "ts_ns": [100, 300],
        "value": [1.0, 2.0],
        "device": [0, 0],
    }
    meta = TraceMeta(rank=rank, source_format="kineto", base_time_ns=base)
    return make_trace(meta, gpu=gpu, host=host, annotations=ann, counters=counters)


def events(doc: dict, ph: str, pid: int | None = None) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == ph and (pid is None or e["pid"] == pid)]


def test_every_gpu_and_host_row_once_with_exact_times() -> None:
    traces = load_traces([SAMPLES / "synthetic_2rank"])
    doc = chrome_trace(traces)
    origin = doc["metadata"]["origin_ns"]
    assert origin == min(int(t.host["start_ns"].min()) for t in traces)
    for t in traces:
        xs = events(doc, "X", gpu_pid(t.rank))
        gpu_x = [e for e in xs if e["cat"] != "gpu_user"]
        assert len(gpu_x) == len(t.gpu)
        got = sorted(
            (e["name"], e["tid"], ns(e["ts"], origin), round(e["dur"] * 1000)) for e in gpu_x
        )
        want = sorted(
            zip(
                t.gpu["name"].astype(str),
                t.gpu["stream"],
                t.gpu["start_ns"],
                t.gpu["end_ns"] - t.gpu["start_ns"],
                strict=True,
            )
        )
        assert got == [(str(a), int(b), int(c), int(d)) for a, b, c, d in want]
        host_x = [
            e
            for e in events(doc, "X", host_pid(t.rank))
            if e["cat"] not in ("step", "user", "nvtx")
        ]
        assert len(host_x) == len(t.host)
        steps = [e for e in events(doc, "X", host_pid(t.rank)) if e["cat"] == "step"]
        assert sorted(ns(e["ts"], origin) for e in steps) == sorted(t.steps()["start_ns"].tolist())
    names = {(e["pid"], e["args"]["name"]) for e in events(doc, "M") if e["name"] == "process_name"}
    assert (host_pid(1), "rank 1 · host") in names
    assert any(pid == gpu_pid(1) and n.startswith("rank 1 · GPU") for pid, n in names)


def test_step_counter_is_n_during_a_step_and_minus_one_between() -> None:
    t = tiny()
    # steps [100,200) #3, [200,250) #4, [300,400) #5: #4 starts when #3 ends
    assert step_counter(t.steps()) == [(100, 3), (200, 4), (250, NO_STEP), (300, 5), (400, NO_STEP)]
    doc = chrome_trace([t])
    origin = doc["metadata"]["origin_ns"]
    assert origin == 100
    track = [
        (ns(e["ts"], origin), e["args"]["number"])
        for e in events(doc, "C", gpu_pid(0))
        if e["name"] == "step"
    ]
    assert track == step_counter(t.steps())


def test_trace_counters_and_annotations_land_on_their_processes() -> None:
    doc = chrome_trace([tiny()])
    mem = [e for e in events(doc, "C", gpu_pid(0)) if e["name"] == "device 0"]
    assert [(e["ts"], e["args"]) for e in mem] == [
        (0.0, {"Total Allocated": 1.0}),
        (0.2, {"Total Allocated": 2.0}),
    ]
    (fwd,) = [e for e in events(doc, "X") if e["name"] == "fwd"]
    assert (fwd["pid"], fwd["tid"], fwd["ts"], fwd["dur"]) == (host_pid(0), 11, 0.0, 0.08)
    (launch,) = [e for e in events(doc, "X") if e["name"] == "cudaLaunchKernel"]
    assert launch["args"] == {"correlation": 1} and launch["tid"] == 11


def nvml(marks: dict[int, int], power: list[tuple[int, float]]) -> dict[str, Any]:
    rows = [("step_begin", t, float(k), -1) for k, t in marks.items()]
    rows += [("power_instant_mw", t, v, 0) for t, v in power]
    return {
        "node0": counter_table(
            {
                "name": [r[0] for r in rows],
                "ts_ns": [r[1] for r in rows],
                "value": [r[2] for r in rows],
                "device": [r[3] for r in rows],
            }
        )
    }


def test_nvml_counters_are_moved_by_the_base_time() -> None:
    base = UNIX
    doc = chrome_trace([tiny(base=base)], nvml({}, [(UNIX + 150, 300_000.0)]))
    origin = doc["metadata"]["origin_ns"]
    assert doc["metadata"]["nvml_alignment"] == "base_time_ns"
    (p,) = [e for e in events(doc, "C", NVML_PID) if e["name"] == "gpu0"]
    assert ns(p["ts"], origin) == 150 and p["args"] == {"power_instant_mw": 300_000.0}
    names = [e["args"]["name"] for e in events(doc, "M", NVML_PID) if e["name"] == "process_name"]
    assert names == ["NVML node0"]


def test_nvml_counters_are_matched_by_step_without_a_base_time() -> None:
    # ProfilerStep#3 starts at 100 and #5 at 300; step_begin 3 and 5 at UNIX + 1000, + 1210:
    # differences 100 - (UNIX + 1000) and 300 - (UNIX + 1210); lower median = the latter
    marks = {3: UNIX + 1000, 5: UNIX + 1210, 9: UNIX + 5000}
    doc = chrome_trace([tiny()], nvml(marks, [(UNIX + 1250, 1.0)]))
    origin = doc["metadata"]["origin_ns"]
    assert doc["metadata"]["nvml_alignment"] == "steps"
    shift = 300 - (UNIX + 1210)
    (p,) = [e for e in events(doc, "C", NVML_PID) if e["name"] == "gpu0"]
    assert ns(p["ts"], origin) == UNIX + 1250 + shift == 340
    step_marks = [ns(e["ts"], origin) for e in events(doc, "C", NVML_PID) if e["name"] == "step"]
    assert sorted(step_marks) == sorted(t + shift for t in marks.values())


def test_nvml_counters_left_out_when_nothing_aligns_them() -> None:
    doc = chrome_trace([tiny()], nvml({42: UNIX}, [(UNIX, 1.0)]))
    assert doc["metadata"]["nvml_alignment"] is None
    assert not events(doc, "C", NVML_PID)
    assert "NVML counters left out" in doc["metadata"]["notes"][0]


def test_written_file_is_json_with_the_same_events(tmp_path: Path) -> None:
    traces = [tiny(0), tiny(1)]
    out = write_perfetto(traces, tmp_path / "sub" / "trace.json")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc == json.loads(json.dumps(chrome_trace(traces)))
    assert doc["displayTimeUnit"] == "ns" and doc["metadata"]["ranks"] == [0, 1]
    with pytest.raises(UsageError, match="no trace"):
        chrome_trace([])
