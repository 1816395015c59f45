"""Launch statistics on a hand-built trace whose launches are known (times in µs).

Host calls on thread 1 and the GPU ops they enqueue (correlation in brackets)::

    A cudaLaunchKernel        [0,5)     (1) → K1 kernel s7 [20,30)
    B cudaLaunchKernel_v7000  [6,8)     (2) → K2 kernel s7 [30,31)   nsys-style name
    C cuLaunchKernel (driver) [10,14)   (3) → K3 kernel s9 [12,40)   starts before C returns
    D cudaGraphLaunch         [40,50)   (4) → G1 s7 [55,60), G2 s7 [60,65), G3 s8 [70,80)
    E cudaMemcpyAsync         [50,110)  (5) → M memcpy s7 [120,130)
    F cudaStreamSynchronize   [110,300) (6) → Stream Sync, kind sync, s7 [130,131)
    H cudaLaunchKernel        [120,121) (7) → K7 kernel s7 [400,410)
      (no host call)                    (99) → K99 kernel s7 [500,510)

Steps: ProfilerStep#1 [0,100), #2 [100,600); the default window keeps step 1's launches only.
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzers.launch import (
    all_launches,
    distribution,
    grouped_distributions,
    hta_launches,
    launch_stats,
    queue_length,
    queue_summary,
)
from analyzers.options import AnalysisOptions
from collectors.model import Trace, TraceMeta, make_trace

US = 1000
ALL = AnalysisOptions(all_events=True)
MEMCPY = "Memcpy HtoD (Pinned -> Device)"

GPU = [  # name, kind, stream, start, end, correlation
    ("K1", "kernel", 7, 20, 30, 1),
    ("K2", "kernel", 7, 30, 31, 2),
    ("K3", "kernel", 9, 12, 40, 3),
    ("G1", "kernel", 7, 55, 60, 4),
    ("G2", "kernel", 7, 60, 65, 4),
    ("G3", "kernel", 8, 70, 80, 4),
    (MEMCPY, "memcpy", 7, 120, 130, 5),
    ("Stream Sync", "sync", 7, 130, 131, 6),
    ("K7", "kernel", 7, 400, 410, 7),
    ("K99", "kernel", 7, 500, 510, 99),
]
HOST = [  # name, cat, start, end, correlation
    ("cudaLaunchKernel", "cuda_runtime", 0, 5, 1),
    ("cudaLaunchKernel_v7000", "cuda_runtime", 6, 8, 2),
    ("cuLaunchKernel", "cuda_driver", 10, 14, 3),
    ("cudaGraphLaunch", "cuda_runtime", 40, 50, 4),
    ("cudaMemcpyAsync", "cuda_runtime", 50, 110, 5),
    ("cudaStreamSynchronize", "cuda_runtime", 110, 300, 6),
    ("cudaLaunchKernel", "cuda_runtime", 120, 121, 7),
    ("ProfilerStep#1", "user_annotation", 0, 100, -1),
    ("ProfilerStep#2", "user_annotation", 100, 600, -1),
]


@pytest.fixture(scope="module")
def trace() -> Trace:
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [g[0] for g in GPU],
            "kind": [g[1] for g in GPU],
            "stream": [g[2] for g in GPU],
            "start_ns": [g[3] * US for g in GPU],
            "end_ns": [g[4] * US for g in GPU],
            "correlation": [g[5] for g in GPU],
        },
        host={
            "name": [h[0] for h in HOST],
            "cat": [h[1] for h in HOST],
            "start_ns": [h[2] * US for h in HOST],
            "end_ns": [h[3] * US for h in HOST],
            "pid": [1] * len(HOST),
            "tid": [1] * len(HOST),
            "correlation": [h[4] for h in HOST],
        },
        annotations={
            "name": ["ProfilerStep#1", "ProfilerStep#2"],
            "kind": ["step", "step"],
            "start_ns": [0, 100 * US],
            "end_ns": [100 * US, 600 * US],
            "step": [1, 2],
        },
    )


def test_hta_selection_pairs_named_launches_with_their_ops(trace: Trace) -> None:
    pairs = hta_launches(trace, ALL)
    assert sorted(pairs["name"]) == ["K1", "K2", "K7", MEMCPY]
    st = launch_stats(pairs)
    # cpu 5, 2, 60, 1; gpu 10, 1, 10, 10; delay 15, 22, 10, 279 (µs)
    assert st.n == 4
    assert st.cpu_duration_mean_ns == 68 * US / 4
    assert st.gpu_duration_mean_ns == 31 * US / 4
    assert st.launch_delay_mean_ns == 326 * US / 4
    assert st.launch_delay_median_ns == (15 + 22) * US / 2
    assert st.launch_delay_max_ns == 279 * US
    assert (st.short_kernels, st.runtime_outliers, st.launch_delay_outliers) == (1, 1, 1)


def test_default_window_keeps_only_launches_before_the_last_step(trace: Trace) -> None:
    assert sorted(hta_launches(trace)["name"]) == ["K1", "K2", MEMCPY]


def test_all_launches_include_driver_and_graph_launches(trace: Trace) -> None:
    a = all_launches(trace, ALL).set_index("name")
    assert sorted(a.index) == [
        "G1",
        "G2",
        "G3",
        "K1",
        "K2",
        "K3",
        "K7",
        "Memcpy HtoD (Pinned -> Device)",
    ]
    assert a.loc["K3", "launch_name"] == "cuLaunchKernel"
    assert a.loc["K3", "launch_delay_ns"] == 0  # started before the call returned
    assert a.loc["K3", "start_after_call_ns"] == 2 * US
    assert a.loc[["G1", "G2", "G3"], "ops_in_launch"].tolist() == [3, 3, 3]
    assert a.loc[["G1", "G2", "G3"], "launch_delay_ns"].tolist() == [5 * US, 10 * US, 20 * US]
    assert a.loc["K1", "start_after_call_ns"] == 20 * US
    assert a["gpu_index"].is_unique
    assert a.loc[["K1", "G1", "K7"], "step"].tolist() == [1, 1, 2]


def test_distributions_use_observed_values() -> None:
    d = distribution(np.array([4, 1, 3, 2]))
    assert d == {
        "n": 4,
        "sum_ns": 10,
        "min_ns": 1,
        "p50_ns": 2,
        "p90_ns": 4,
        "p99_ns": 4,
        "max_ns": 4,
    }
    assert distribution(np.array([], dtype=np.int64)) == {"n": 0}


def test_distributions_per_step_and_per_kernel(trace: Trace) -> None:
    a = all_launches(trace, ALL)
    per_step = grouped_distributions(a, "step").set_index("step")
    assert per_step.loc[1, "launches"] == 7 and per_step.loc[2, "launches"] == 1
    assert per_step.loc[2, "delay_max_ns"] == 279 * US
    per_kernel = grouped_distributions(a, "name")
    assert per_kernel.iloc[0]["name"] == "K7"  # largest total launch delay first
    assert per_kernel.set_index("name").loc["G3", "cpu_sum_ns"] == 10 * US


def test_queue_length_counts_enqueues_and_starts_per_stream(trace: Trace) -> None:
    q = queue_length(trace, ALL)
    s7 = q[q["stream"] == 7]
    # +1 at A, B, E, H; -1 at K1, K2, M, K7 (graph ops and the sync are not counted);
    # at 120 the enqueue of H comes before the start of M
    assert s7[["ts_ns", "queue_length"]].values.tolist() == [
        [0, 1],
        [6 * US, 2],
        [20 * US, 1],
        [30 * US, 0],
        [50 * US, 1],
        [120 * US, 2],
        [120 * US, 1],
        [400 * US, 0],
    ]
    summary = queue_summary(q).set_index("stream")
    assert summary.loc[7, "max"] == 2 and summary.loc[7, "max_ts_ns"] == 6 * US
    assert summary.loc[9, "max"] == 1
    # held values: 1×6 + 2×14 + 1×10 + 0×20 + 1×70 + 1×280 over 400 µs
    assert summary.loc[7, "time_weighted_mean"] == pytest.approx(394 / 400)
