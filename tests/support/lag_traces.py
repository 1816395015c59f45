"""Synthetic data-parallel ranks whose GPU runs a known number of steps behind the CPU, with the
per-step ground truth of docs/metrics.md §7 worked out from the layout (no interval code).

Each rank has ``steps`` ProfilerSteps of host length ``T`` = :data:`STEP_NS`, back to back.  In
every step the CPU launches, at offsets ``p_j`` into the step (+ :data:`HOST_NS`), three compute
kernels on stream 7 and one NCCL all-reduce on stream 20, each through a ``cudaLaunchKernel``
call; the GPU runs kernel ``j`` of step ``i`` at ``c_i + round(lag·T) + p_j + HOST_NS +
LATENCY_NS``: the same pattern, ``lag`` steps later.  The pattern (rank-dependent lengths
``a``, ``b``, ``c`` of the compute kernels and gaps ``GAP1``, ``GAP2``)::

    stream 7    [a)  GAP1  [b)  GAP2  [c ............)
    stream 20                           [ NCCL: from c's start + NCCL_IN to c's end + EXPOSED )

so per step: compute = a + b + c, exposed communication = EXPOSED, busy = a + b + c + EXPOSED,
and the pattern lasts W = a + GAP1 + b + GAP2 + c + EXPOSED < T.  With ``lag > 0`` the GPU is
still busy with earlier steps when profiling starts: the kernels of the ``⌈lag⌉ + 1`` steps
before the first that start after the trace's start are recorded, with correlation ids below
every recorded launch call's and no launching call (work launched before the profiler started).

Ground truth per window step (every step but the last, as HTA's window keeps): the step runs on
the GPU from the previous step's last GPU end (the first step: from its host start, or the end
of the earlier work when that is later, but no later than its first kernel) to its own last GPU
end (its NCCL end); idle = that length − busy; the host wait is the idle time when the GPU waits
for a launch (with ``lag = 0`` every gap ends with a kernel launched after it began; the lead-in
before the trace's first GPU event is no gap); every kernel starts ``round(lag·T) + LATENCY_NS``
after its launch call, so that is the median launch lag and ``steps_behind`` = it ÷ T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from tests.support.builders import host_columns, step_annotations

US = 1000
MS = 1_000_000
STEP_NS = 10 * MS
HOST_NS = 50 * US
"""Offset of the launch calls in the step, after the pattern offset."""
LATENCY_NS = 10 * US
"""GPU start − launch call start, on top of the lag."""
CALL_NS = 5 * US
GAP1 = 300 * US
GAP2 = 200 * US
NCCL_IN = 1 * MS
"""The NCCL kernel starts this long after the last compute kernel starts."""
EXPOSED = 1_500 * US
"""... and ends this long after it ends: the exposed communication of a step."""
FIRST_STEP = 100
T0 = 1_000_000 * MS
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
COMPUTE_STREAM = 7
COMM_STREAM = 20


def durations(rank: int) -> tuple[int, int, int]:
    """The compute kernels' lengths ``a``, ``b``, ``c`` of *rank*."""
    return 2 * MS + 100 * US * rank, 2_500 * US - 50 * US * rank, 3 * MS + 30 * US * rank


def pattern(rank: int) -> list[tuple[str, int, int, int]]:
    """(name, stream, offset, length) of one step's GPU work, offsets from the pattern start."""
    a, b, c = durations(rank)
    pb = a + GAP1
    pc = pb + b + GAP2
    return [
        (GEMM, COMPUTE_STREAM, 0, a),
        (GEMM, COMPUTE_STREAM, pb, b),
        (GEMM, COMPUTE_STREAM, pc, c),
        (NCCL, COMM_STREAM, pc + NCCL_IN, c - NCCL_IN + EXPOSED),
    ]


@dataclass(frozen=True)
class StepTruth:
    """What the ground truth says about one window step of a rank."""

    step: int
    start_ns: int
    end_ns: int
    gpu_start_ns: int
    gpu_end_ns: int
    compute_ns: int
    exposed_comm_ns: int
    idle_ns: int
    host_wait_ns: int
    work_events: int
    work_ns: int
    launch_lag_ns: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def gpu_duration_ns(self) -> int:
        return self.gpu_end_ns - self.gpu_start_ns

    @property
    def steps_behind(self) -> float:
        return self.launch_lag_ns / self.duration_ns


@dataclass(frozen=True)
class LagRank:
    """One rank's trace and its truth."""

    trace: Trace
    steps: tuple[StepTruth, ...]
    prelaunched_events: int
    prelaunched_busy_ns: int
    """Length of the union of the prelaunched kernels' intervals (worked out below)."""


def lag_rank(rank: int, lag: float, steps: int = 6, world: int = 2) -> LagRank:
    """The trace of *rank* with its GPU *lag* steps behind (module docstring)."""
    shift = round(lag * STEP_NS)
    pat = pattern(rank)
    a, b, c = durations(rank)
    busy = a + b + c + EXPOSED
    last_end = pat[-1][2] + pat[-1][3]  # the NCCL end: the pattern's length W
    assert last_end < STEP_NS
    host: list[tuple[str, str, int, int, int]] = []
    gpu: list[tuple[str, int, int, int, int]] = []
    corr = 1000
    for i in range(steps):
        c0 = T0 + i * STEP_NS
        host.append((f"ProfilerStep#{FIRST_STEP + i}", "user_annotation", c0, c0 + STEP_NS, -1))
        for name, stream, off, length in pat:
            corr += 1
            call = c0 + off + HOST_NS
            host.append(("cudaLaunchKernel", "cuda_runtime", call, call + CALL_NS, corr))
            start = call + shift + LATENCY_NS
            gpu.append((name, stream, start, start + length, corr))
    # the GPU work of the steps before the profiler started, as far as it runs after T0
    pre: list[tuple[int, int]] = []
    early = 500
    for i in range(-(math.ceil(lag) + 1), 0):
        for name, stream, off, length in pat:
            early += 1
            start = T0 + i * STEP_NS + off + HOST_NS + shift + LATENCY_NS
            if start >= T0:
                gpu.append((name, stream, start, start + length, early))
                pre.append((start, start + length))
    trace = make_trace(
        TraceMeta(
            rank=rank,
            source_format="synthetic",
            world_size=world,
            devices=[DeviceInfo(id=rank, name="NVIDIA H100 80GB HBM3", sm_count=132)],
        ),
        gpu={
            "name": [g[0] for g in gpu],
            "kind": ["kernel"] * len(gpu),
            "stream": [g[1] for g in gpu],
            "start_ns": [g[2] for g in gpu],
            "end_ns": [g[3] for g in gpu],
            "correlation": [g[4] for g in gpu],
            "device": [rank] * len(gpu),
        },
        host=host_columns(host),
        annotations=step_annotations(
            [(FIRST_STEP + i, T0 + i * STEP_NS, T0 + (i + 1) * STEP_NS) for i in range(steps)]
        ),
    )
    truths = []
    prev_end: int | None = None
    for i in range(steps - 1):  # HTA's window drops the last step
        c0 = T0 + i * STEP_NS
        first = c0 + HOST_NS + shift + LATENCY_NS
        end = first + last_end
        if prev_end is None:
            earlier = [e for s, e in pre if s < first]
            g0 = min(first, max([c0, *earlier]))
            lead = first - g0  # before the trace's first GPU event when nothing ran: no gap
            wait = (end - g0) - busy - (lead if not earlier else 0)
        else:
            g0 = prev_end
            wait = (end - g0) - busy
        prev_end = end
        truths.append(
            StepTruth(
                step=FIRST_STEP + i,
                start_ns=c0,
                end_ns=c0 + STEP_NS,
                gpu_start_ns=g0,
                gpu_end_ns=end,
                compute_ns=a + b + c,
                exposed_comm_ns=EXPOSED,
                idle_ns=(end - g0) - busy,
                host_wait_ns=wait if shift == 0 else 0,
                work_events=len(pat),
                work_ns=sum(p[3] for p in pat),
                launch_lag_ns=shift + LATENCY_NS,
            )
        )
    pre_busy = _union_by_hand(pre)
    return LagRank(trace, tuple(truths), len(pre), pre_busy)


def _union_by_hand(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def lag_run(lag: float, world: int = 2, steps: int = 6) -> list[LagRank]:
    """Every rank of a *world*-rank run whose GPUs run *lag* steps behind."""
    return [lag_rank(r, lag, steps, world) for r in range(world)]
