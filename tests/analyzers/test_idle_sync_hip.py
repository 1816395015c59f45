"""HIP calls that block the CPU are synchronisation, like their CUDA peers: GPU idle time the
CPU spends in them is attributed to ``sync``, not to ``cuda_api`` (launches, allocations).

Hand trace (µs), thread 1: ``hipLaunchKernel`` [0,1) → K1 [2,10); the call under test [12,60);
``hipLaunchKernel`` [60,61) → K2 [62,70).  GPU idle [10,62): 48 µs inside the call under test,
1 µs in the second launch, 3 µs in the step with nothing else running (python).
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzers import intervals as iv
from analyzers.idle import gpu_idle, gpu_idle_gaps
from analyzers.options import AnalysisOptions
from tests.support.amd_traces import HTA_MI250, load
from tests.support.builders import US, trace_us
from tests.support.env import shared_path

RT = "cuda_runtime"


def _trace(call: str):
    return trace_us(
        [("K1", 0, 2, 10, 1), ("K2", 0, 62, 70, 2)],
        [
            ("hipLaunchKernel", RT, 0, 1, 1, 1),
            (call, RT, 12, 60, 1, 3),
            ("hipLaunchKernel", RT, 60, 61, 1, 2),
        ],
        [(1, 0, 80)],
    )


@pytest.mark.parametrize(
    "call",
    [
        "hipMemcpyWithStream",  # hipMemcpyAsync + hipStreamSynchronize (HIP API reference)
        "hipMemcpy",
        "hipMemcpy2D",
        "hipMemcpy3D",
        "hipMemcpyDtoH",
        "hipMemcpyHtoD",
        "hipMemcpyDtoD",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "cudaMemcpy",  # the CUDA peers, unchanged
        "cudaStreamSynchronize",
    ],
)
def test_blocking_hip_calls_are_synchronisation(call: str) -> None:
    g = gpu_idle(_trace(call), AnalysisOptions())
    assert g.idle_ns == 52 * US
    assert (g.by_cpu_activity["sync"], g.by_cpu_activity["cuda_api"]) == (48 * US, 1 * US)
    assert g.by_cpu_activity["python"] == 3 * US


@pytest.mark.parametrize("call", ["hipMemcpyAsync", "hipLaunchKernel", "hipMalloc"])
def test_non_blocking_hip_calls_stay_api_time(call: str) -> None:
    g = gpu_idle(_trace(call), AnalysisOptions())
    assert (g.by_cpu_activity["sync"], g.by_cpu_activity["cuda_api"]) == (0, 49 * US)


def test_hta_mi250_trace_idle_inside_hipmemcpywithstream_is_sync() -> None:
    trace = load(shared_path(*HTA_MI250))
    opts = AnalysisOptions()
    g = gpu_idle(trace, opts)
    gaps = gpu_idle_gaps(trace, opts)
    h = trace.host
    names = h["name"].astype(str)
    blocking = h[names.isin(["hipMemcpyWithStream", "hipDeviceSynchronize"])]
    assert len(blocking) == 3
    # independent: idle time covered by the blocking calls (no data-loading/optimizer row
    # overlaps them, so the attribution's priority does not intervene)
    lo = np.maximum.outer(gaps["start_ns"].to_numpy(), blocking["start_ns"].to_numpy())
    hi = np.minimum.outer(gaps["end_ns"].to_numpy(), blocking["end_ns"].to_numpy())
    want = int(np.clip(hi - lo, 0, None).sum())
    opt = h[names.str.contains("optimizer|zero_grad|DataLoader", case=False)]
    assert (
        iv.total(
            iv.intersect(
                iv.merge(opt["start_ns"].to_numpy(), opt["end_ns"].to_numpy()),
                iv.merge(blocking["start_ns"].to_numpy(), blocking["end_ns"].to_numpy()),
            )
        )
        == 0
    )
    assert want > 0 and g.by_cpu_activity["sync"] == want
    assert sum(g.by_cpu_activity.values()) == g.idle_ns
