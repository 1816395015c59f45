"""Traces that lack what some analyses need: the rest still runs, with a one-line note.

Hand-built traces (µs) without correlation ids, without runtime events, without GPU events, and
entirely empty; then the real Kineto fixtures of those kinds, through the JSON summary and the
``gpuscope analyze`` command (exit 0, no traceback).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzers.host_bound import rank_verdict, step_verdicts
from analyzers.idle import (
    NOTE_NO_CORRELATION,
    NOTE_NO_GPU,
    NOTE_NO_RUNTIME,
    idle_analysis,
)
from analyzers.launch import launch_analysis
from analyzers.memory import NOTE_NO_MEMORY, memory_analysis
from analyzers.options import AnalysisOptions
from collectors.model import Trace, TraceMeta, make_trace
from reports.summary import build_summary
from tests.support.cli import gpuscope
from tests.support.env import shared_path

US = 1000


def build(correlated: bool, runtime: bool, gpu: bool = True) -> Trace:
    """Stream 7: K1 [10,20) and K2 [100,120), launched at 0 and 90 (a 80 µs host gap)."""
    corr = [1, 2] if correlated else [-1, -1]
    host_names = ["cudaLaunchKernel", "cudaLaunchKernel"] if runtime else ["aten::mm", "aten::add"]
    host_cats = ["cuda_runtime"] * 2 if runtime else ["cpu_op"] * 2
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": ["K1", "K2"],
            "kind": ["kernel", "kernel"],
            "stream": [7, 7],
            "start_ns": [10 * US, 100 * US],
            "end_ns": [20 * US, 120 * US],
            "correlation": corr,
        }
        if gpu
        else None,
        host={
            "name": host_names,
            "cat": host_cats,
            "start_ns": [0, 90 * US],
            "end_ns": [5 * US, 95 * US],
            "pid": [1, 1],
            "tid": [1, 1],
            "correlation": corr if runtime else [-1, -1],
        },
    )


@pytest.mark.parametrize(
    ("correlated", "runtime", "note"),
    [(False, True, NOTE_NO_CORRELATION), (True, False, NOTE_NO_RUNTIME)],
    ids=["no-correlation-ids", "no-runtime-events"],
)
def test_idle_without_launch_links_still_breaks_down_idle(
    correlated: bool, runtime: bool, note: str
) -> None:
    t = build(correlated, runtime)
    res = idle_analysis(t)
    assert res.notes == (note,)
    # the 80 µs gap cannot be host_wait without the launch link: it is "other" (≥ 30 µs)
    got = {r.category: int(r.idle_ns) for r in res.per_stream.itertuples()}
    assert got == {"other": 80 * US}
    assert res.gpu.idle_ns == 80 * US
    assert res.gpu.by_cause == {"host_wait": 0, "kernel_wait": 0, "other": 80 * US}
    la = launch_analysis(t)
    assert la.notes == (note,)
    assert la.hta.n == 0 and la.launches.empty and la.queue.empty
    assert rank_verdict(t).verdict == "GPU-bound"


def test_the_same_trace_with_links_finds_the_host_wait() -> None:
    res = idle_analysis(build(True, True))
    assert res.notes == ()
    assert res.gpu.by_cause["host_wait"] == 80 * US


def test_trace_without_gpu_events_has_no_verdict() -> None:
    t = build(True, True, gpu=False)
    assert idle_analysis(t).notes == (NOTE_NO_GPU,)
    assert launch_analysis(t).notes == (NOTE_NO_GPU,)
    assert rank_verdict(t).verdict is None
    assert step_verdicts(t).empty


def test_empty_trace_gives_empty_sections() -> None:
    t = make_trace(TraceMeta(rank=3, source_format="synthetic"))
    summary = build_summary([t], AnalysisOptions())
    (rank,) = summary["ranks"]
    assert rank["idle"]["notes"] == [NOTE_NO_GPU]
    assert rank["idle"]["host_bound"]["verdict"] is None
    assert rank["launch"]["all"]["calls"] == 0
    assert rank["memory"]["notes"] == [NOTE_NO_MEMORY]
    json.dumps(summary, allow_nan=False)
    assert memory_analysis(t).notes == (NOTE_NO_MEMORY,)


REAL = {
    # fixture: (idle notes, HTA pairs, gpuscope launch calls)
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": ([NOTE_NO_GPU], 0, 0),
    "rank_non_gpu/rank_non_gpu.json.gz": ([NOTE_NO_GPU], 0, 0),
    # CUPTI range-profiler mode: runtime calls, no kernel activity
    "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz": ([NOTE_NO_GPU], 0, 0),
    # torch.compile: one cuLaunchKernel (driver), which only gpuscope's selection counts
    "triton_example/triton_example.json.gz": ([], 0, 1),
    # 2022 Kineto categories (Runtime / Kernel)
    "trace_file_list/inference_rank_1.json.gz": ([], 4, 4),
}


@pytest.mark.parametrize("fixture", sorted(REAL))
def test_real_traces_of_each_kind_give_the_possible_analyses(fixture: str) -> None:
    from collectors.load import load_traces

    notes, hta_n, calls = REAL[fixture]
    traces = load_traces([shared_path("kineto", "hta", fixture)])
    summary = build_summary(traces, AnalysisOptions())
    json.dumps(summary, allow_nan=False)
    rank = summary["ranks"][0]
    assert rank["idle"]["notes"] == notes
    assert rank["launch"]["hta"]["launches"] == hta_n
    assert rank["launch"]["all"]["calls"] == calls


def test_analyze_command_prints_the_note_and_exits_zero(tmp_path: Path) -> None:
    src = shared_path("kineto", "hta", "cpu_only", "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    out = tmp_path / "s.json"
    proc = gpuscope("analyze", src, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads(out.read_text())
    assert summary["ranks"][0]["idle"]["notes"] == [NOTE_NO_GPU]
