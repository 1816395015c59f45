"""Host-bound detection on hand-built traces: verdict per step and per rank, responsible ops.

Times in µs.  Every trace has three ProfilerSteps, so the window keeps the first two (HTA's
rule: the last step is dropped) and only those get a verdict.  Steps are on the GPU clock
(docs/metrics.md §7): a step's GPU work is what its range launched, and it runs on the GPU from
the end of the previous step's work (the first step: from its host start) to the end of its own.
"""

from __future__ import annotations

import pytest

from analyzers.host_bound import (
    COMM_BOUND,
    GPU_BOUND,
    HOST_BOUND,
    rank_verdict,
    step_verdicts,
    top_level_ops,
    verdict,
)
from analyzers.options import AnalysisOptions
from tests.support.builders import US, trace_us

RT = "cuda_runtime"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def launch(corr: int, t: int) -> tuple:
    return ("cudaLaunchKernel", RT, t, t + 1, 1, corr)


STEPS = [(1, 0, 100), (2, 100, 200), (3, 200, 300)]

# step 1: the CPU spends [20,70) in an optimizer step and a python gap before launching K2:
#   K1 [2,20) launched at 0; K2 [72,105) launched at 70 → host wait [20,72) = 52 µs; on the GPU
#   clock the step is [0, 105) (its host start to its last GPU end)
# step 2: K3 [106,199) launched at 101 (before the GPU went idle at 105): GPU-bound, [105, 199)
# step 3 (dropped by the window): K4 launched at 201
HOST_BOUND_TRACE = trace_us(
    [("K1", 7, 2, 20, 1), ("K2", 7, 72, 105, 2), ("K3", 7, 106, 199, 3), ("K4", 7, 202, 250, 4)],
    [
        launch(1, 0),
        launch(2, 70),
        launch(3, 101),
        launch(4, 201),
        ("Optimizer.step#Adam.step", "user_annotation", 25, 60, 1, -1),
        ("aten::add_", "cpu_op", 30, 40, 1, -1),  # nested in the optimizer step
        ("aten::zeros", "cpu_op", 62, 66, 1, -1),
    ],
    STEPS,
)


def test_verdict_rule() -> None:
    assert verdict(0.3, 0.05) == HOST_BOUND
    assert verdict(0.05, 0.3) == COMM_BOUND
    assert verdict(0.2, 0.3) == COMM_BOUND
    assert verdict(0.3, 0.3) == HOST_BOUND  # tie: host
    assert verdict(0.1, 0.1) == GPU_BOUND  # thresholds are exclusive
    assert verdict(0.05, 0.05, host_threshold=0.01) == HOST_BOUND


def test_step_with_late_launches_is_host_bound_with_its_cpu_ops() -> None:
    sv = step_verdicts(HOST_BOUND_TRACE, AnalysisOptions())
    assert sv["step"].tolist() == [1, 2]  # the last step is outside the window
    s1, s2 = sv.iloc[0], sv.iloc[1]
    assert (s1["gpu_start_ns"], s1["gpu_end_ns"]) == (0, 105 * US)
    assert s1["host_wait_ns"] == 52 * US
    assert s1["idle_ns"] == 105 * US - (18 + 33) * US  # [0,2) and [20,72)
    assert s1["host_share"] == pytest.approx(52 / 105)
    assert s1["verdict"] == HOST_BOUND
    # top-level ops only (aten::add_ is inside the optimizer step), by overlap with [20,72)
    assert s1["top_ops"] == [("Optimizer.step#Adam.step", 35 * US), ("aten::zeros", 4 * US)]
    assert s1["host_wait_by_activity"] == {
        "data_loading": 0,
        "optimizer": 35 * US,  # [25,60)
        "sync": 0,
        "cuda_api": 1 * US,  # the launch of K2 [70,71)
        "cpu_op": 4 * US,  # aten::zeros [62,66)
        "python": 12 * US,  # [20,25) [60,62) [66,70) [71,72): in the step, no op
        "unattributed": 0,
    }
    assert (s2["gpu_start_ns"], s2["gpu_end_ns"]) == (105 * US, 199 * US)
    assert s2["host_wait_ns"] == 0
    assert s2["idle_ns"] == 1 * US  # [105,106): K3 was launched before the gap: kernel wait
    assert s2["verdict"] == GPU_BOUND


def test_step_dominated_by_exposed_communication_is_communication_bound() -> None:
    t = trace_us(
        [
            (NCCL, 20, 5, 70, 1),
            ("gemm", 7, 60, 95, 2),
            ("gemm", 7, 101, 199, 3),
            ("gemm", 7, 201, 250, 4),
        ],
        [launch(1, 0), launch(2, 1), launch(3, 100), launch(4, 200)],
        STEPS,
    )
    sv = step_verdicts(t, AnalysisOptions())
    s1, s2 = sv.iloc[0], sv.iloc[1]
    assert s1["gpu_duration_ns"] == 95 * US  # [0, 95): the step's own work ends at 95
    assert s1["exposed_comm_ns"] == 55 * US  # [5,60): no gemm beside the all-reduce
    assert s1["host_wait_ns"] == 0
    assert s1["verdict"] == COMM_BOUND
    # step 2 on the GPU clock: [95, 199); the gemm was launched at 100, after the GPU went idle
    assert (s2["gpu_duration_ns"], s2["host_wait_ns"]) == (104 * US, 6 * US)
    assert s2["verdict"] == GPU_BOUND  # 6/104 = 5.8 % host wait
    rv = rank_verdict(t, AnalysisOptions(), sv)
    assert rv.steps_by_verdict == {HOST_BOUND: 0, COMM_BOUND: 1, GPU_BOUND: 1}
    # rank: 55 µs exposed of 199 µs of steps on the GPU clock = 27.6 % > 10 %
    assert (rv.verdict, rv.basis, rv.duration_ns) == (COMM_BOUND, "steps", 199 * US)
    assert rv.comm_share == pytest.approx(55 / 199)


def test_rank_verdict_sums_the_steps() -> None:
    rv = rank_verdict(HOST_BOUND_TRACE, AnalysisOptions())
    assert rv.host_wait_ns == 52 * US
    assert rv.duration_ns == 199 * US  # [0, 105) + [105, 199)
    assert rv.host_share == pytest.approx(52 / 199)
    assert rv.verdict == HOST_BOUND
    # a threshold above 26 % turns the rank GPU-bound, while step 1 (50 %) stays host-bound
    rv2 = rank_verdict(HOST_BOUND_TRACE, AnalysisOptions(), host_threshold=0.3)
    assert rv2.verdict == GPU_BOUND
    assert rv2.steps_by_verdict[HOST_BOUND] == 1


def test_without_steps_the_rank_verdict_uses_the_gpu_span() -> None:
    t = trace_us(
        [("K1", 7, 0, 10, 1), ("K2", 7, 50, 60, 2)],
        [launch(1, 0), launch(2, 40)],
        [],
    )
    assert step_verdicts(t).empty
    rv = rank_verdict(t)
    assert (rv.basis, rv.duration_ns, rv.host_wait_ns) == ("gpu span", 60 * US, 40 * US)
    assert rv.verdict == HOST_BOUND


def test_rank_without_gpu_work_has_no_verdict() -> None:
    t = trace_us([], [("aten::add", "cpu_op", 0, 10, 1, -1)], [])
    assert rank_verdict(t).verdict is None


def test_top_level_ops_are_per_thread() -> None:
    t = trace_us(
        [],
        [
            ("outer", "cpu_op", 0, 100, 1, -1),
            ("inner", "cpu_op", 10, 20, 1, -1),
            ("other_thread", "cpu_op", 10, 20, 2, -1),
            ("after", "cpu_op", 100, 120, 1, -1),
            ("cudaLaunchKernel", RT, 30, 31, 1, 5),
        ],
        [(1, 0, 200)],
    )
    names = sorted(top_level_ops(t.host)["name"].astype(str))
    assert names == ["after", "other_thread", "outer"]
