"""A large run stays a small report: 100,000 kernels over 8 ranks, 2,000 steps in all, 300
kernel names per rank, and 8 GPUs × every plotted NVML field × 12,000 samples (20 minutes at
10 Hz, integer readings as NVML gives them) give a report under 10 MB whose tables and series
are cut as documented (docs/report.md §5, §6)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from collectors.model import Trace, TraceMeta, counter_table, make_trace
from reports.html import render_report
from reports.html_payload import TOP_KERNELS
from reports.html_series import MAX_BREAKDOWN_RANKS, MAX_BREAKDOWN_STEPS, MAX_COUNTER_POINTS
from reports.summary import build_summary
from reports.summary.sections.series import PLOT_FIELDS
from tests.support.builders import h100

RANKS = 8
STEPS = 250
PER_STEP = 50  # 49 compute kernels and one all-reduce
KERNELS = RANKS * STEPS * PER_STEP
STEP_NS = 2_000_000
NVML_SAMPLES = 12_000
NVML_FIELDS = (*PLOT_FIELDS, "clock_event_reasons")


def big_trace(rank: int, names: int = 300) -> Trace:
    rng = np.random.default_rng(rank)
    n = STEPS * PER_STEP
    slot = STEP_NS // PER_STEP
    s_idx = np.repeat(np.arange(STEPS), PER_STEP)
    k_idx = np.tile(np.arange(PER_STEP), STEPS)
    starts = 10**9 + s_idx * STEP_NS + k_idx * slot + rng.integers(0, 5_000, n)
    comm = k_idx == PER_STEP - 1
    durs = np.where(comm, rng.integers(100_000, 400_000, n), rng.integers(5_000, slot - 6_000, n))
    pool = np.array(
        [f"void kernel_{i}<float, {i % 7}>(Params)" for i in range(names)], dtype=object
    )
    name = pool[rng.integers(0, names, n)]
    name[comm] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    ones = np.ones(n, dtype=np.int64)
    gpu = {
        "name": name,
        "kind": np.full(n, "kernel", dtype=object),
        "start_ns": starts,
        "end_ns": starts + durs,
        "device": ones * rank,
        "stream": np.where(comm, 20, 7),
        "correlation": np.arange(n),
        "grid_x": ones * 132,
        "grid_y": ones,
        "grid_z": ones,
        "block_x": ones * 256,
        "block_y": ones,
        "block_z": ones,
        "registers_per_thread": ones * 64,
        "shared_mem_bytes": ones * 0,
    }
    st = 10**9 + np.arange(STEPS) * STEP_NS
    ann = {
        "name": [f"ProfilerStep#{s}" for s in range(STEPS)],
        "kind": ["step"] * STEPS,
        "start_ns": st,
        "end_ns": st + STEP_NS,
        "step": np.arange(STEPS),
    }
    meta = TraceMeta(
        rank=rank,
        source_format="synthetic",
        world_size=RANKS,
        devices=[h100(rank)],
    )
    return make_trace(meta, gpu=gpu, annotations=ann)


def big_counters() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    t = 1_700_000_000_000_000_000 + np.arange(NVML_SAMPLES, dtype=np.int64) * 100_000_000
    cols: dict[str, list[np.ndarray]] = {"name": [], "ts_ns": [], "value": [], "device": []}
    for dev in range(8):
        for field in NVML_FIELDS:
            v = np.round(rng.normal(250_000, 20_000, NVML_SAMPLES))
            if field == "mem_used_bytes":
                v = np.round(rng.normal(7e10, 1e9, NVML_SAMPLES))
            if field == "clock_event_reasons":
                v = np.where(rng.random(NVML_SAMPLES) < 0.05, 0x4, 0).astype(float)
            cols["name"].append(np.full(NVML_SAMPLES, field, dtype=object))
            cols["ts_ns"].append(t)
            cols["value"].append(v)
            cols["device"].append(np.full(NVML_SAMPLES, dev))
    marks = t[::60]
    cols["name"].append(np.full(len(marks), "step_begin", dtype=object))
    cols["ts_ns"].append(marks)
    cols["value"].append(np.arange(len(marks), dtype=float))
    cols["device"].append(np.full(len(marks), -1))
    return counter_table({k: np.concatenate(v) for k, v in cols.items()})


class Sizes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.payload = ""
        self._in = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in = tag == "script" and ("id", "gpuscope-data") in attrs

    def handle_data(self, data: str) -> None:
        if self._in:
            self.payload += data

    def handle_endtag(self, tag: str) -> None:
        self._in = False


@pytest.mark.slow
def test_100k_kernel_8_rank_run_gives_a_report_under_10_mb() -> None:
    traces = [big_trace(r) for r in range(RANKS)]
    assert sum(len(t.gpu) for t in traces) == KERNELS == 100_000
    summary = build_summary(traces, extras={"nvml": {"node0": big_counters()}})
    text = render_report(summary)
    size = len(text.encode("utf-8"))
    print(f"report: {size:,} bytes")
    assert size < 10 * 2**20
    page = Sizes()
    page.feed(text)
    payload = json.loads(page.payload)
    assert len(page.payload) < 2 * 2**20
    # what was cut, and how much of it is said
    assert len(payload["kernels"]["rows"]) == TOP_KERNELS
    assert payload["kernels"]["names_total"] == 301
    steps = payload["steps"]
    assert (steps["steps_total"], steps["steps_shown"]) == (STEPS, MAX_BREAKDOWN_STEPS)
    assert steps["ranks_shown"] == RANKS <= MAX_BREAKDOWN_RANKS
    assert len(steps["rows"]) == MAX_BREAKDOWN_STEPS * RANKS
    assert len(payload["heatmap"]["columns"]) == STEPS and not payload["heatmap"]["binned"]
    series = payload["counters"]["series"]
    assert len(series) == 8 * len(PLOT_FIELDS) and payload["counters"]["decimated"]
    assert all(s["samples"] == NVML_SAMPLES for s in series)
    assert sum(len(s["t_ns"]) for s in series) <= MAX_COUNTER_POINTS
    assert len(payload["counters"]["throttle"]) == 500 < payload["counters"]["throttle_total"]
    assert len(payload["counters"]["step_marks"]) == 200
    assert payload["counters"]["step_marks_total"] == NVML_SAMPLES // 60
