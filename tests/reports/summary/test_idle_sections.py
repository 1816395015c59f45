"""The ``idle``, ``launch`` and ``memory`` summary sections and their console tables.

The real trace checks compare the JSON with metrics.md (§9.0 idle, §9.3 idle breakdown, §9.4
launch statistics for ``trace_filter/sampled_rank-0``); the console checks that untrusted names
are printed literally, never interpreted as rich markup.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import TraceMeta, make_trace
from reports.summary import build_summary
from reports.summary.sections.wait import idle, launch, memory
from reports.wait_console import print_wait_sections
from tests.support.env import shared_path

US = 1000


def walk(obj: Any, path: str = ""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, f"{path}.{k}")
            yield f"{path}.{k}", k, v
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, f"{path}[{i}]")


@pytest.fixture(scope="module")
def rank() -> dict[str, Any]:
    from collectors.load import load_traces

    traces = load_traces([shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")])
    summary = build_summary(traces, AnalysisOptions())
    json.dumps(summary, allow_nan=False)
    return summary["ranks"][0]


def test_sections_are_in_the_summary_with_integer_ns_keys(rank: dict[str, Any]) -> None:
    for key in ("idle", "launch", "memory"):
        assert key in rank
        for path, k, v in walk(rank[key]):
            if k.endswith("_ns") or k.endswith("_bytes"):
                assert v is None or type(v) is int, path


def test_idle_section_matches_hta_figures(rank: dict[str, Any]) -> None:
    s = {(r["stream"], r["category"]): r for r in rank["idle"]["streams"]}
    assert s[(7, "host_wait")]["idle_ns"] == 213_825 * US  # §9.3
    assert s[(84, "host_wait")]["idle_ns"] == 148_934 * US
    assert s[(203, "other")]["ratio"] is None  # HTA: NaN
    g = rank["idle"]["gpu"]
    assert g["idle_ns"] == 321_378 * US  # §9.0: idle of the temporal breakdown
    assert g["span_ns"] == 600_058 * US
    assert sum(g["by_cpu_activity"].values()) == g["idle_ns"]
    assert rank["idle"]["host_bound"]["verdict"] in ("host-bound", "communication-bound")


def test_launch_section_matches_hta_figures(rank: dict[str, Any]) -> None:
    h = rank["launch"]["hta"]
    assert h["launches"] == 602  # §9.4
    assert h["launch_delay_median_us"] == 10_246.0
    assert h["launch_delay_max_ns"] == 103_661 * US
    assert (h["short_kernels"], h["runtime_outliers"], h["launch_delay_outliers"]) == (140, 0, 469)
    assert abs(h["cpu_duration_mean_us"] - 8.487) < 0.0005
    q = {r["stream"]: r["max"] for r in rank["launch"]["queue"]}
    assert q[7] == 76
    a = rank["launch"]["all"]
    assert a["ops"] == 602 and a["launch_delay"]["max_ns"] == 103_661 * US


def test_host_bound_thresholds_come_from_extras() -> None:
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": ["K1", "K2"],
            "kind": ["kernel"] * 2,
            "stream": [7, 7],
            "start_ns": [0, 60 * US],
            "end_ns": [50 * US, 100 * US],
            "correlation": [1, 2],
        },
        host={
            "name": ["cudaLaunchKernel"] * 2,
            "cat": ["cuda_runtime"] * 2,
            "start_ns": [0, 55 * US],
            "end_ns": [1 * US, 56 * US],
            "pid": [1, 1],
            "tid": [1, 1],
            "correlation": [1, 2],
        },
    )
    # host wait [50,60) = 10 % of the 100 µs span
    default = idle(t, AnalysisOptions(), AnalysisInputs())["host_bound"]
    strict = idle(t, AnalysisOptions(host_threshold=0.05), AnalysisInputs())["host_bound"]
    assert default["host_share"] == pytest.approx(0.1)
    assert (default["verdict"], strict["verdict"]) == ("GPU-bound", "host-bound")
    assert strict["host_threshold"] == 0.05


def test_console_prints_untrusted_names_literally() -> None:
    evil_kernel = "[bold red]kernel[/bold red]"
    evil_op = "[link=http://x]op[/link]"
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [evil_kernel, evil_kernel],
            "kind": ["kernel"] * 2,
            "stream": [7, 7],
            "start_ns": [10 * US, 100 * US],
            "end_ns": [20 * US, 120 * US],
            "correlation": [1, 2],
        },
        host={
            "name": ["cudaLaunchKernel", "cudaLaunchKernel", evil_op],
            "cat": ["cuda_runtime", "cuda_runtime", "cpu_op"],
            "start_ns": [0, 90 * US, 30 * US],
            "end_ns": [5 * US, 95 * US, 80 * US],
            "pid": [1, 1, 1],
            "tid": [1, 1, 1],
            "correlation": [1, 2, -1],
        },
        annotations={
            "name": ["ProfilerStep#1"],
            "kind": ["step"],
            "start_ns": [0],
            "end_ns": [130 * US],
            "step": [1],
        },
        counters={
            "name": ["Total Allocated"],
            "ts_ns": [40 * US],
            "value": [2.0**20],
            "device": [0],
        },
    )
    opts = AnalysisOptions()
    r = {
        "rank": 0,
        "idle": idle(t, opts, AnalysisInputs()),
        "launch": launch(t, opts, AnalysisInputs()),
    }
    r["memory"] = memory(t, opts, AnalysisInputs())
    console = Console(record=True, width=200)
    print_wait_sections(r, console)
    text = console.export_text()
    assert evil_kernel in text
    assert evil_op in text  # as the CPU op during host wait and as the op at the memory peak
    assert "host-bound" in text
