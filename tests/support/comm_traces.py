"""The hand-built two-rank trace with known timings of the communication tests.

Timeline (ns).  Three ProfilerSteps [0,1000), [1000,2000), [2000,3000); the window keeps the
work launched before step 3 starts.  Process group "0" = ranks (0, 1).

    step 1   rank 0: gemm [100,400)   all_reduce [300,700)    (launched at 260)
             rank 1: gemm [100,600)   all_reduce [550,700)
    step 2   rank 0: gemm [1200,1500) all_gather [1250,1300)  (launched at 1060)
             rank 1: gemm [1000,1250) all_gather [1100,1300)
    step 3   both:   broadcast [2100,2200)                     (launched in the last step)
"""

from __future__ import annotations

from typing import Any

from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace

PG = {
    "Process Group Name": "0",
    "Process Group Description": "default_pg",
    "Process Group Ranks": "[0, 1]",
    "Group size": 2,
}

# per rank: (gemm start, end), collective (name, start, end), ... for steps 1, 2, 3
TIMES = {
    0: {"gemm": [(100, 400), (1200, 1500)], "ar": (300, 700), "ag": (1250, 1300)},
    1: {"gemm": [(100, 600), (1000, 1250)], "ar": (550, 700), "ag": (1100, 1300)},
}


def build_rank(rank: int, extra: dict[str, Any] | None = None) -> Trace:
    """The trace of one rank (see the module docstring)."""
    t = TIMES[rank]
    gpu: dict[str, list[Any]] = {
        k: []
        for k in (
            "name",
            "kind",
            "start_ns",
            "end_ns",
            "stream",
            "correlation",
            "device",
            "comm_args",
        )
    }
    host: dict[str, list[Any]] = {
        k: []
        for k in ("name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation", "comm_args")
    }

    def kernel(name: str, s: int, e: int, corr: int, launch: int, stream: int) -> None:
        for k, v in zip(
            ("name", "kind", "start_ns", "end_ns", "stream", "correlation", "device", "comm_args"),
            (name, "kernel", s, e, stream, corr, 0, None),
            strict=True,
        ):
            gpu[k].append(v)
        hrow("cudaLaunchKernel", "cuda_runtime", launch, launch + 5, corr)

    def hrow(name: str, cat: str, s: int, e: int, corr: int = -1, args: Any = None) -> None:
        for k, v in zip(
            ("name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation", "comm_args"),
            (name, cat, s, e, 1, 1, corr, args),
            strict=True,
        ):
            host[k].append(v)

    for i in range(3):
        hrow(f"ProfilerStep#{i + 1}", "user_annotation", i * 1000, (i + 1) * 1000)
    (g1, g2) = t["gemm"]
    kernel("void gemm_kernel<float>(...)", *g1, corr=1, launch=50, stream=7)
    kernel("void gemm_kernel<float>(...)", *g2, corr=3, launch=1050, stream=7)
    hrow(
        "record_param_comms",
        "cpu_op",
        250,
        280,
        args={
            "Collective name": "allreduce",
            "In msg nelems": 2500,
            "Out msg nelems": 2500,
            "dtype": "Float",
            **PG,
            **(extra or {}).get("ar", {}),
        },
    )
    kernel(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        *t["ar"],
        corr=2,
        launch=260,
        stream=40,
    )
    hrow(
        "record_param_comms",
        "cpu_op",
        1055,
        1080,
        args={
            "Collective name": "_allgather_base",
            "In msg nelems": 1000,
            "Out msg nelems": 2000,
            "dtype": "Float",
            **PG,
            **(extra or {}).get("ag", {}),
        },
    )
    kernel(
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        *t["ag"],
        corr=4,
        launch=1060,
        stream=40,
    )
    hrow(
        "record_param_comms",
        "cpu_op",
        2050,
        2080,
        args={
            "Collective name": "broadcast",
            "In msg nelems": 10,
            "Out msg nelems": 10,
            "dtype": "Float",
            **PG,
        },
    )
    kernel(
        "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        2100,
        2200,
        corr=5,
        launch=2060,
        stream=40,
    )
    steps = {
        "name": [f"ProfilerStep#{i + 1}" for i in range(3)],
        "kind": ["step"] * 3,
        "start_ns": [0, 1000, 2000],
        "end_ns": [1000, 2000, 3000],
        "step": [1, 2, 3],
    }
    meta = TraceMeta(
        rank=rank,
        source_format="synthetic",
        world_size=2,
        devices=[DeviceInfo(id=0, name="NVIDIA H100 80GB HBM3")],
    )
    return make_trace(meta, gpu=gpu, host=host, annotations=steps)
