"""Idle time on hand-built traces whose gaps are known: HTA's per-stream categories, the
GPU-wide gaps and their attribution to what the CPU was doing (times below in µs).

Launches on thread 1 (``cudaLaunchKernel`` unless noted) and what they enqueue::

    L1 [0,5)     → K1 s7 [10,20)
    L2 [6,9)     → K2 s7 [25,40)    gap 5 after K1, launched before K1 ended: kernel_wait
    L3 [100,105) → K3 s7 [110,150)  gap 70, launched after K2 ended:          host_wait
    L4 [106,108) → K4 s7 [200,210)  gap 50 (≥ 30), launched before K3 ended:  other
    L5 [107,108) → K5 s8 [160,190)  alone on stream 8: its stream's ratio is undefined

Host activity on thread 1 inside ProfilerStep#1 [0,195): ``aten::mm`` [0,9),
``Optimizer.step#Adam.step`` [45,60), ``cudaStreamSynchronize`` [60,70), ``aten::add`` [70,90),
``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` [150,158) around
``aten::copy_`` [152,156).  Thread 2 (never launches) runs ``aten::mm`` [190,200).
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzers.idle import (
    CPU_ACTIVITIES,
    attribute_idle,
    gpu_idle,
    gpu_idle_gaps,
    stream_idle_breakdown,
    stream_idle_intervals,
)
from analyzers.options import AnalysisOptions
from analyzers.temporal import temporal_breakdown
from collectors.model import Trace
from tests.support.builders import US, trace_us

RT = "cuda_runtime"
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
GPU = [
    ("K1", 7, 10, 20, 1),
    ("K2", 7, 25, 40, 2),
    ("K3", 7, 110, 150, 3),
    ("K4", 7, 200, 210, 4),
    ("K5", 8, 160, 190, 5),
]
HOST = [
    ("cudaLaunchKernel", RT, 0, 5, 1, 1),
    ("cudaLaunchKernel", RT, 6, 9, 1, 2),
    ("cudaLaunchKernel", RT, 100, 105, 1, 3),
    ("cudaLaunchKernel", RT, 106, 108, 1, 4),
    ("cudaLaunchKernel", RT, 107, 108, 1, 5),
    ("aten::mm", "cpu_op", 0, 9, 1, -1),
    ("Optimizer.step#Adam.step", "user_annotation", 45, 60, 1, -1),
    ("cudaStreamSynchronize", RT, 60, 70, 1, -1),
    ("aten::add", "cpu_op", 70, 90, 1, -1),
    (
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "user_annotation",
        150,
        158,
        1,
        -1,
    ),
    ("aten::copy_", "cpu_op", 152, 156, 1, -1),
    ("aten::mm", "cpu_op", 190, 200, 2, -1),
]
STEPS = [(1, 0, 195)]


@pytest.fixture
def trace() -> Trace:
    return trace_us(GPU, HOST, STEPS, pid=100)


def test_stream_categories_follow_hta_rules(trace: Trace) -> None:
    df = stream_idle_breakdown(trace, AnalysisOptions())
    got = {(r.stream, r.category): (r.idle_ns, r.intervals) for r in df.itertuples()}
    assert got == {
        (7, "host_wait"): (70 * US, 1),
        (7, "kernel_wait"): (5 * US, 1),
        (7, "other"): (50 * US, 2),  # K4's gap and K1, the stream's first event
        (8, "other"): (0, 1),
    }
    s7 = df[df["stream"] == 7].set_index("category")["ratio"]
    assert s7.to_dict() == pytest.approx(
        {"host_wait": 70 / 125, "kernel_wait": 5 / 125, "other": 50 / 125}
    )
    assert np.isnan(df[df["stream"] == 8]["ratio"].iloc[0])


def test_threshold_option_moves_gaps_between_kernel_wait_and_other(trace: Trace) -> None:
    # 60 µs: K4's 50 µs gap becomes kernel_wait; 4 µs: K2's 5 µs gap becomes other
    wide = stream_idle_breakdown(trace, AnalysisOptions(consecutive_kernel_delay_ns=60 * US))
    narrow = stream_idle_breakdown(trace, AnalysisOptions(consecutive_kernel_delay_ns=4 * US))
    w = wide[wide["stream"] == 7].set_index("category")["idle_ns"].to_dict()
    n = narrow[narrow["stream"] == 7].set_index("category")["idle_ns"].to_dict()
    assert w == {"host_wait": 70 * US, "kernel_wait": 55 * US, "other": 0}
    assert n == {"host_wait": 70 * US, "other": 55 * US}


def test_overlapping_kernels_give_negative_intervals_as_in_hta() -> None:
    # K2 starts 5 µs before K1 ends: interval -5, launched early → kernel_wait (-5 < 30)
    t = trace_us(
        [("K1", 7, 0, 20, 1), ("K2", 7, 15, 30, 2)],
        [("cudaLaunchKernel", RT, 0, 1, 1, 1), ("cudaLaunchKernel", RT, 1, 2, 1, 2)],
        [],
        pid=100,
    )
    iv = stream_idle_intervals(t, AnalysisOptions())
    assert iv[["category", "idle_ns"]].values.tolist() == [["other", 0], ["kernel_wait", -5 * US]]


def test_gpu_wide_gaps_are_classified_across_streams(trace: Trace) -> None:
    gaps = gpu_idle_gaps(trace, AnalysisOptions())
    assert gaps[["start_ns", "end_ns", "category"]].values.tolist() == [
        [20 * US, 25 * US, "kernel_wait"],
        [40 * US, 110 * US, "host_wait"],
        [150 * US, 160 * US, "kernel_wait"],  # K5 (stream 8) was launched at 107 < 150
        [190 * US, 200 * US, "kernel_wait"],
    ]
    g = gpu_idle(trace, AnalysisOptions())
    assert (g.span_ns, g.busy_ns, g.idle_ns) == (200 * US, 105 * US, 95 * US)
    assert g.by_cause == {"host_wait": 70 * US, "kernel_wait": 25 * US, "other": 0}


def test_gpu_wide_idle_is_attributed_to_the_launching_threads_activity(trace: Trace) -> None:
    g = gpu_idle(trace, AnalysisOptions())
    assert g.by_cpu_activity == {
        "data_loading": 8 * US,  # [150,158), including the copy inside it
        "optimizer": 15 * US,  # [45,60)
        "sync": 10 * US,  # [60,70)
        "cuda_api": 7 * US,  # L3 [100,105), L4/L5 [106,108)
        "cpu_op": 20 * US,  # aten::add [70,90); thread 2's aten::mm does not count
        # inside the step, no op: [20,25) [40,45) [90,100) [105,106) [108,110) [158,160)
        # [190,195)
        "python": 30 * US,
        "unattributed": 5 * US,  # [195,200): after the step, nothing recorded
    }
    assert sum(g.by_cpu_activity.values()) == g.idle_ns


def test_attribution_priority_is_first_match() -> None:
    idle = (np.array([0]), np.array([100]))
    empty = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    acts = {a: empty for a in CPU_ACTIVITIES}
    acts["cpu_op"] = (np.array([0]), np.array([100]))
    acts["optimizer"] = (np.array([10]), np.array([30]))
    acts["data_loading"] = (np.array([20]), np.array([50]))
    got = attribute_idle(idle, acts)
    assert got == {
        "data_loading": 30,
        "optimizer": 10,
        "sync": 0,
        "cuda_api": 0,
        "cpu_op": 60,
        "python": 0,
        "unattributed": 0,
    }


def test_gpu_wide_idle_equals_temporal_breakdown_idle(trace: Trace) -> None:
    assert gpu_idle(trace).idle_ns == temporal_breakdown(trace).idle_ns
