"""The synthetic run's layout: constants, the drawn durations of one rank's steps and GPU
work (``layout_rank``); see the package docstring for the structure of a step."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

GENERATOR_VERSION = 2
"""Bumped whenever the layout or the ground truth's definitions (and so the bytes written for
given arguments) change.  2: steps on the GPU clock (docs/metrics.md §7)."""

COMPUTE_STREAM = 7
COMM_STREAM = 20
FIRST_STEP = 10
KERNELS_PER_STEP = 6
MEMCPY_AFTER = 1
"""The memcpy runs in the gap after compute kernel ``MEMCPY_AFTER``."""
BASE_NS = 1_712_345_678_901_234
"""Trace clock origin (about 19.8 days after boot, in ns; below 2**43 µs, see kineto-reader)."""

COMPUTE_NAMES = (
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_execute_kernel",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
    "(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}, at::detail::Array<char*, 2> >"
    "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
    "::{lambda()#2}, at::detail::Array<char*, 2>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >"
    "(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4>)",
)
INIT_NAME = (
    "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
    "<float, 4>(int, at::PhiloxCudaState)"
)
NCCL_NAME = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MEMCPY_NAME = "Memcpy HtoD (Pinned -> Device)"

DEVICE_PROPERTIES = {
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85029158912,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 132,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}


@dataclass(frozen=True)
class GpuOp:
    """One device activity of the layout (integer ns)."""

    name: str
    kind: str
    """``compute`` | ``comm`` | ``memcpy``."""
    start_ns: int
    end_ns: int
    stream: int
    correlation: int
    launch_ns: int
    """Start of the runtime call that launched it."""
    external_id: int
    """``External id`` of the CPU op that launched it."""
    step: int
    """ProfilerStep number it belongs to, -1 for the initialisation kernel."""


@dataclass
class StepLayout:
    """One ProfilerStep: its host range and the by-construction GPU metrics."""

    step: int
    start_ns: int
    end_ns: int
    compute_ns: int = 0
    comm_ns: int = 0
    overlap_ns: int = 0
    memory_ns: int = 0
    gpu_first_ns: int = 0
    gpu_last_ns: int = 0

    @property
    def exposed_ns(self) -> int:
        return self.comm_ns - self.overlap_ns

    @property
    def busy_ns(self) -> int:
        return self.compute_ns + self.memory_ns + self.exposed_ns


@dataclass
class RankLayout:
    """Everything generated for one rank, before rendering to Kineto JSON."""

    rank: int
    world_size: int
    device: int
    steps: list[StepLayout] = field(default_factory=list)
    gpu: list[GpuOp] = field(default_factory=list)
    host: list[dict[str, Any]] = field(default_factory=list)
    """Kineto events of the host side (times in ns; rendered later)."""
    memory: list[tuple[int, int, int]] = field(default_factory=list)
    """``[memory]`` samples: (ts_ns, total_allocated, total_reserved)."""
    init_ns: tuple[int, int] = (0, 0)
    """The initialisation kernel's [start, end)."""


class _Draw:
    """Seeded draws built on ``random.Random.random`` only (stable across Python versions)."""

    def __init__(self, seed: int, rank: int, quantum: int) -> None:
        self.rng = random.Random(f"gpuscope-synthetic:{seed}:{rank}")
        self.q = quantum

    def ns(self, lo: int, hi: int) -> int:
        """A duration in [lo, hi) ns, a multiple of the quantum (1 ns or 1000 ns)."""
        lo_q, hi_q = -(-lo // self.q), hi // self.q
        return self.q * (lo_q + int(self.rng.random() * (hi_q - lo_q)))

    def frac(self, lo: float, hi: float) -> float:
        return lo + self.rng.random() * (hi - lo)


def _x(cat: str, name: str, start: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"cat": cat, "name": name, "start_ns": start, "end_ns": end, "args": args}


def _comm_args(lay: RankLayout, k: int) -> dict[str, Any]:
    """PyTorch's collective metadata for the k-th all-reduce (torch 2.4+/2026 spelling)."""
    n = 1 << 22
    ranks = list(range(lay.world_size))
    return {
        "Collective name": "allreduce",
        "In msg nelems": n,
        "Out msg nelems": n,
        "Group size": lay.world_size,
        "dtype": "Float",
        "In split size": "[]",
        "Out split size": "[]",
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": json.dumps(ranks),
        "Seq": k,
        # a uint64 hash shared by the ranks of one collective; odd k exceed int64's range
        "Comms Id": (0x9E3779B97F4A7C15 * (k + 1)) % 2**64 | (2**63 if k % 2 else 0),
    }


def layout_rank(rank: int, world_size: int, steps: int, seed: int, *, int_us: bool) -> RankLayout:
    """Lay out one rank's trace (see the module docstring for the invariants)."""
    if steps < 1:
        raise ValueError("steps must be >= 1")
    d = _Draw(seed, rank, 1000 if int_us else 1)
    lay = RankLayout(rank=rank, world_size=world_size, device=rank % 8)
    ids = {"corr": 1000 * (rank + 1), "ext": 1}

    def next_id(kind: str) -> int:
        ids[kind] += 1
        return ids[kind]

    def launch(
        op: str, api: str, t: int, dims: list[list[int]] | None = None, op_cat: str = "cpu_op"
    ) -> tuple[int, int, int, int, int]:
        """A CPU op with one runtime call inside: (ext, corr, launch start, launch end, end)."""
        ext = next_id("ext")
        corr = next_id("corr")
        l0 = t + d.ns(1000, 2000)
        l1 = l0 + d.ns(3000, 9000)
        end = l1 + d.ns(500, 1500)
        args: dict[str, Any] = {"External id": ext, "Record function id": 0}
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = ["float"] * len(dims)
        lay.host.append(_x(op_cat, op, t, end, args))
        lay.host.append(
            _x("cuda_runtime", api, l0, l1, {"External id": ext, "cbid": 211, "correlation": corr})
        )
        return ext, corr, l0, l1, end

    cursor = BASE_NS - BASE_NS % d.q + d.ns(0, 50_000)
    # initialisation kernel, launched and run before the first step
    ext, corr, l0, l1, _ = launch("aten::normal_", "cudaLaunchKernel", cursor, [[4096, 4096]])
    s = l1 + d.ns(2000, 4000)
    e = s + d.ns(5000, 20_000)
    lay.gpu.append(GpuOp(INIT_NAME, "compute", s, e, COMPUTE_STREAM, corr, l0, ext, -1))
    lay.init_ns = (s, e)
    cursor = e + d.ns(30_000, 60_000)

    for k in range(steps):
        step_no = FIRST_STEP + k
        st = StepLayout(step=step_no, start_ns=cursor, end_ns=0)
        step_ext = next_id("ext")
        step_index = len(lay.host)
        lay.host.append(_x("python_function", f"nn.Module: Model_{k}", cursor, cursor + 1000, {}))
        lay.memory.append((cursor, 2**30 + 4096 * k + 512 * rank, 2**31))
        t = cursor + d.ns(2000, 6000)
        # (name, kind, ext, corr, launch start)
        launches: list[tuple[str, str, int, int, int]] = []
        for i in range(KERNELS_PER_STEP):
            ext, corr, l0, _, t = launch(
                "aten::mm", "cudaLaunchKernel", t, [[2048, 1024], [1024, 4096]]
            )
            launches.append((COMPUTE_NAMES[i % len(COMPUTE_NAMES)], "compute", ext, corr, l0))
            if i == MEMCPY_AFTER:
                ext, corr, l0, _, t = launch("aten::copy_", "cudaMemcpyAsync", t, [[1024, 1024]])
                launches.append((MEMCPY_NAME, "memcpy", ext, corr, l0))
        # the all-reduce: record_param_comms > nccl:all_reduce > cudaLaunchKernel
        rpc0 = t
        ann0 = rpc0 + d.ns(200, 600)
        ext, corr, l0, _, ann1 = launch(
            "nccl:all_reduce", "cudaLaunchKernel", ann0, None, op_cat="user_annotation"
        )
        rpc1 = ann1 + d.ns(200, 600)
        rpc_args = {"External id": next_id("ext"), "Record function id": 0, **_comm_args(lay, k)}
        lay.host.append(_x("cpu_op", "record_param_comms", rpc0, rpc1, rpc_args))
        launches.append((NCCL_NAME, "comm", ext, corr, l0))
        t = rpc1 + d.ns(500, 1500)

        # GPU side: everything starts after the last launch of the step
        g = t + d.ns(2000, 5000)
        st.gpu_first_ns = g
        compute = [x for x in launches if x[1] == "compute"]
        spans: list[tuple[int, int]] = []
        for i, (name, _, ext, corr, l0) in enumerate(compute):
            s, e = g, g + d.ns(15_000, 120_000)
            lay.gpu.append(GpuOp(name, "compute", s, e, COMPUTE_STREAM, corr, l0, ext, step_no))
            spans.append((s, e))
            st.compute_ns += e - s
            if i == MEMCPY_AFTER:
                _, _, mext, mcorr, ml0 = next(x for x in launches if x[1] == "memcpy")
                ms = e + d.ns(2000, 4000)
                me = ms + d.ns(5000, 12_000)
                lay.gpu.append(
                    GpuOp(MEMCPY_NAME, "memcpy", ms, me, COMPUTE_STREAM, mcorr, ml0, mext, step_no)
                )
                st.memory_ns = me - ms
                g = me + d.ns(2000, 4000)
            else:
                g = e + d.ns(1000, 8000)
        (s2, e2), (s1, e1) = spans[-2], spans[-1]
        n_s = s2 + int((e2 - s2) * d.frac(0.2, 0.8))
        n_s -= n_s % d.q
        n_e = e1 + d.ns(10_000, 60_000)
        _, _, next_, ncorr, nl0 = launches[-1]
        lay.gpu.append(GpuOp(NCCL_NAME, "comm", n_s, n_e, COMM_STREAM, ncorr, nl0, next_, step_no))
        st.comm_ns = n_e - n_s
        st.overlap_ns = (e2 - n_s) + (e1 - s1)
        st.gpu_last_ns = n_e
        st.end_ns = n_e + d.ns(5000, 20_000)
        step_args = {"External id": step_ext, "Record function id": 0}
        lay.host.insert(
            step_index, _x("cpu_op", f"ProfilerStep#{step_no}", cursor, st.end_ns, step_args)
        )
        lay.steps.append(st)
        cursor = st.end_ns + d.ns(1000, 3000)
    return lay
