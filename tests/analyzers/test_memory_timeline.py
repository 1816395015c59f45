"""GPU memory timeline on hand-built memory curves: peaks, the op that reached them, per step.

Times in µs.  Device 0 (PyTorch allocator counters, as the Kineto reader writes them)::

    t   allocated  reserved   running op (innermost)
    10  100        200        (no op)
    20  300        400        aten::empty [15,25) inside aten::linear [12,30)
    20  150        400        (a free in the same µs: the transient 300 is still the peak)
    40  250        400        aten::mm [35,45)
    65  500        600        aten::cat [60,70)          (step 3: outside the window)

Device 1 has one sample (7 bytes at 45, the end of aten::mm); device -1 (host memory) is
ignored.  Steps #1 [0,30), #2 [30,60), #3 [60,90): the window keeps #1 and #2.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.memory import (
    NOTE_NO_MEMORY,
    memory_analysis,
    memory_timeline,
    op_at,
    peaks,
    step_peaks,
)
from analyzers.options import AnalysisOptions
from collectors.model import Trace, TraceMeta, make_trace
from reports.summary.sections.wait import memory as memory_section

US = 1000
SAMPLES = [  # device, ts, allocated, reserved
    (0, 10, 100, 200),
    (0, 20, 300, 400),
    (0, 20, 150, 400),
    (-1, 30, 10_000, 10_000),
    (0, 40, 250, 400),
    (1, 45, 7, 7),
    (0, 65, 500, 600),
]
OPS = [  # name, cat, start, end
    ("aten::linear", "cpu_op", 12, 30),
    ("aten::empty", "cpu_op", 15, 25),
    ("aten::mm", "cpu_op", 35, 45),
    ("aten::cat", "cpu_op", 60, 70),
    ("ProfilerStep#1", "user_annotation", 0, 30),
    ("ProfilerStep#2", "user_annotation", 30, 60),
    ("ProfilerStep#3", "user_annotation", 60, 90),
]


def build(
    samples: list[tuple] = SAMPLES,
    ops: list[tuple] = OPS,
    counter_rows: dict | None = None,
    annotations: dict | None = None,
) -> Trace:
    names, ts, values, devices = [], [], [], []
    for dev, t, alloc, res in samples:
        for name, v in (("Total Allocated", alloc), ("Total Reserved", res)):
            names.append(name)
            ts.append(t * US)
            values.append(float(v))
            devices.append(dev)
    counters = counter_rows or {"name": names, "ts_ns": ts, "value": values, "device": devices}
    steps = [o for o in ops if o[0].startswith("ProfilerStep#")]
    ann = annotations or {
        "name": [s[0] for s in steps],
        "kind": ["step"] * len(steps),
        "start_ns": [s[2] * US for s in steps],
        "end_ns": [s[3] * US for s in steps],
        "step": [int(s[0].split("#")[1]) for s in steps],
    }
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        host={
            "name": [o[0] for o in ops],
            "cat": [o[1] for o in ops],
            "start_ns": [o[2] * US for o in ops],
            "end_ns": [o[3] * US for o in ops],
            "pid": [1] * len(ops),
            "tid": [1] * len(ops),
        },
        annotations=ann,
        counters=counters,
    )


@pytest.fixture(scope="module")
def trace() -> Trace:
    return build()


def test_timeline_keeps_every_gpu_sample_in_order(trace: Trace) -> None:
    tl = memory_timeline(trace)
    d0 = tl[(tl["device"] == 0) & (tl["series"] == "allocated")]
    assert d0["bytes"].tolist() == [100, 300, 150, 250, 500]
    assert d0["ts_ns"].tolist() == [10 * US, 20 * US, 20 * US, 40 * US, 65 * US]
    assert sorted(set(tl["device"])) == [0, 1]  # host memory (-1) is not GPU memory


def test_whole_trace_peak_and_the_op_that_reached_it(trace: Trace) -> None:
    p = {(x.device, x.series): x for x in peaks(trace)}
    a = p[(0, "allocated")]
    assert (a.peak_bytes, a.peak_ts_ns, a.peak_op) == (500, 65 * US, "aten::cat")
    assert (a.samples, a.first_bytes, a.last_bytes) == (5, 100, 500)
    r = p[(0, "reserved")]
    assert (r.peak_bytes, r.peak_ts_ns) == (600, 65 * US)
    assert p[(1, "allocated")].peak_bytes == 7


def test_peak_per_step_with_level_at_start_and_end(trace: Trace) -> None:
    sp = step_peaks(trace, AnalysisOptions())
    d0 = sp[(sp["device"] == 0) & (sp["series"] == "allocated")].set_index("step")
    assert list(d0.index) == [1, 2]  # step 3 is outside the window
    s1, s2 = d0.loc[1], d0.loc[2]
    assert pd.isna(s1["at_start_bytes"])  # no sample before the first step
    # the free at the same µs does not hide the transient 300; innermost op is aten::empty
    assert (s1["peak_bytes"], s1["peak_ts_ns"], s1["peak_op"]) == (300, 20 * US, "aten::empty")
    assert s1["at_end_bytes"] == 150
    assert (s2["at_start_bytes"], s2["peak_bytes"], s2["peak_op"]) == (150, 250, "aten::mm")
    assert s2["at_end_bytes"] == 250
    res = sp[(sp["device"] == 0) & (sp["series"] == "reserved")].set_index("step")
    assert res.loc[1, "peak_bytes"] == 400
    d1 = sp[(sp["device"] == 1) & (sp["series"] == "allocated")].set_index("step")
    assert d1.loc[2, "peak_op"] == "aten::mm"  # 45 µs is the op's end: ranges are closed


def test_all_events_option_adds_the_last_step(trace: Trace) -> None:
    sp = step_peaks(trace, AnalysisOptions(all_events=True))
    d0 = sp[(sp["device"] == 0) & (sp["series"] == "allocated")].set_index("step")
    assert d0.loc[3, "peak_bytes"] == 500 and d0.loc[3, "at_start_bytes"] == 250


def test_nsys_memory_counter_and_op_lookup_order() -> None:
    # nsys: cudaMalloc totals; the op is an NVTX range when no operator runs, else the API call
    t = build(
        samples=[],
        ops=[("cudaMalloc", "cuda_runtime", 4, 6), ("cudaMalloc", "cuda_runtime", 20, 22)],
        counter_rows={
            "name": ["cuda_memory_allocated_bytes"] * 2,
            "ts_ns": [5 * US, 21 * US],
            "value": [1024.0, 3072.0],
            "device": [0, 0],
        },
        annotations={
            "name": ["init"],
            "kind": ["nvtx"],
            "start_ns": [0],
            "end_ns": [10 * US],
            "step": [-1],
        },
    )
    p = peaks(t)
    assert [(x.series, x.peak_bytes) for x in p] == [("cuda_malloc", 3072)]
    assert p[0].peak_op == "cudaMalloc"
    assert op_at(t, 5 * US) == "init"


def test_trace_without_memory_counters_gives_a_note_and_empty_section() -> None:
    t = build(samples=[])
    res = memory_analysis(t)
    assert res.notes == (NOTE_NO_MEMORY,)
    section = memory_section(t, AnalysisOptions(), AnalysisInputs())
    assert section == {"series": [], "steps": [], "notes": [NOTE_NO_MEMORY]}


def test_memory_section_is_json_ready(trace: Trace) -> None:
    section = memory_section(trace, AnalysisOptions(), AnalysisInputs())
    text = json.dumps(section, allow_nan=False)
    assert '"peak_op": "aten::cat"' in text
    first = section["steps"][0]
    assert first["at_start_bytes"] is None and first["peak_bytes"] == 300
