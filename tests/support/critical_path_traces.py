"""Synthetic multi-rank training steps with known causes, built as trace-model rows.

:func:`training_run` simulates a data-parallel loop event by event: per step, on each rank, a
``ProfilerStep#N`` range; ``n_gemm`` ``aten::mm`` ops, each launching a GEMM kernel on stream 7;
``n_small`` ``aten::add`` ops, each launching a short elementwise kernel; one
``c10d::allreduce_`` launching ``ncclDevKernel_AllReduce`` (stream 7, or stream 20 at the start
of the step when ``overlapped``); then ``cudaDeviceSynchronize`` (a ``Context Sync`` row) until
the GPU is done.  A kernel starts at ``max(launch + LAUNCH_LATENCY, stream free)``; an
all-reduce starts on each rank as above and ends on every rank ``transfer`` after the last rank
started it.  Injected causes: ``late_rank``/``delay`` lengthens that rank's first GEMM;
``small_host`` is the host time of each ``aten::add`` (launch gaps when above the kernel time).
``graph_node_ns`` generates the same step with the short kernels replayed from a CUDA graph
instead: one ``cudaGraphLaunch`` (:data:`GRAPH_LAUNCH_NS` of host time) issues them all, and
each starts ``graph_node_ns`` after the previous one ended (the first as an eager launch
would).  ``busbw_gbps`` sets the all-reduce's transfer to ``S × 2(n−1)/n / busbw`` (S =
:data:`MSG_BYTES`), nccl-tests' bus-bandwidth definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.model import Trace, TraceMeta, make_trace

US = 1000
LAUNCH_LATENCY = 5 * US
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32"
SMALL = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MSG_ELEMS = 1 << 20
MSG_BYTES = 4 * MSG_ELEMS
"""The all-reduce's message: 2²⁰ float32 elements."""
GRAPH_LAUNCH_NS = 10 * US


@dataclass
class _Rank:
    rank: int
    host: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    gpu: list[tuple[str, str, int, int, int, int, dict | None]] = field(default_factory=list)
    steps: list[tuple[int, int, int]] = field(default_factory=list)
    corr: int = 0
    t: int = 0
    free: dict[int, int] = field(default_factory=dict)

    def launch(
        self,
        op: str,
        op_ns: int,
        name: str,
        dur: int,
        stream: int,
        args: dict | None = None,
        start: int | None = None,
    ) -> int:
        """An op of *op_ns* launching *name*; returns the kernel's planned start."""
        self.corr += 1
        t0 = self.t
        self.host.append((op, "cpu_op", t0, t0 + op_ns, -1))
        self.host.append(("cudaLaunchKernel", "cuda_runtime", t0 + US, t0 + op_ns - US, self.corr))
        k0 = max(t0 + US + LAUNCH_LATENCY, self.free.get(stream, 0)) if start is None else start
        self.gpu.append((name, "kernel", k0, k0 + dur, stream, self.corr, args))
        self.free[stream] = k0 + dur
        self.t = t0 + op_ns
        return k0

    def graph_replay(self, n: int, name: str, dur: int, stream: int, node_ns: int) -> None:
        """One ``cudaGraphLaunch`` replaying *n* rows of *name*, each *node_ns* after the
        previous one ended (all with the launch's correlation, as Kineto records replays)."""
        self.corr += 1
        t0 = self.t
        self.host.append(("cudaGraphLaunch", "cuda_runtime", t0, t0 + GRAPH_LAUNCH_NS, self.corr))
        k0 = max(t0 + LAUNCH_LATENCY, self.free.get(stream, 0))
        for i in range(n):
            k = k0 if i == 0 else self.free[stream] + node_ns
            self.gpu.append((name, "kernel", k, k + dur, stream, self.corr, None))
            self.free[stream] = k + dur
        self.t = t0 + GRAPH_LAUNCH_NS


def training_run(
    world: int = 2,
    steps: int = 3,
    n_gemm: int = 4,
    gemm_ns: int = 300 * US,
    n_small: int = 0,
    small_ns: int = 3 * US,
    small_host: int = 4 * US,
    transfer: int = 400 * US,
    overlapped: bool = False,
    late_rank: int = -1,
    delay: int = 0,
    graph_node_ns: int | None = None,
    busbw_gbps: float | None = None,
) -> list[Trace]:
    """One trace per rank (module docstring)."""
    if busbw_gbps is not None:
        transfer = round(MSG_BYTES * 2 * (world - 1) / world / busbw_gbps)
    ranks = [_Rank(r, t=1_000_000 * US) for r in range(world)]
    for k in range(steps):
        s0 = max(max(r.t, *r.free.values()) if r.free else r.t for r in ranks)
        starts: dict[int, int] = {}
        for r in ranks:
            r.t = s0
            r.step_start = s0  # type: ignore[attr-defined]
            if overlapped:
                r.corr += 1
            for i in range(n_gemm):
                extra = delay if (r.rank == late_rank and i == 0) else 0
                r.launch("aten::mm", 10 * US, GEMM, gemm_ns + extra, 7)
            if graph_node_ns is not None and n_small:
                r.graph_replay(n_small, SMALL, small_ns, 7, graph_node_ns)
            else:
                for _ in range(n_small):
                    r.launch("aten::add", small_host, SMALL, small_ns, 7)
        for r in ranks:  # all-reduce: planned starts, then a common end
            stream = 20 if overlapped else 7
            t_launch = s0 if overlapped else r.t
            starts[r.rank] = max(
                t_launch + US + LAUNCH_LATENCY, r.free.get(stream, 0) if not overlapped else 0
            )
        end = max(starts.values()) + transfer
        for r in ranks:
            stream = 20 if overlapped else 7
            args = {
                "Collective name": "allreduce",
                "Process Group Name": "0",
                "Seq": k,
                "Group size": world,
                "In msg nelems": MSG_ELEMS,
                "Out msg nelems": MSG_ELEMS,
                "dtype": "Float",
            }
            save_t = r.t
            if overlapped:
                r.t = s0
            r.corr += 1
            t0 = r.t
            r.host.append(("c10d::allreduce_", "cpu_op", t0, t0 + 10 * US, -1))
            r.host.append(("cudaLaunchKernel", "cuda_runtime", t0 + US, t0 + 9 * US, r.corr))
            r.gpu.append((NCCL, "kernel", starts[r.rank], end, stream, r.corr, args))
            r.free[stream] = end
            r.t = save_t if overlapped else t0 + 10 * US
            gpu_done = max(r.free.values())
            r.corr += 1
            t0 = r.t
            r.host.append(
                ("cudaDeviceSynchronize", "cuda_runtime", t0, max(t0, gpu_done) + 6 * US, r.corr)
            )
            r.gpu.append(
                (
                    "Context Sync",
                    "sync",
                    max(t0, gpu_done),
                    max(t0, gpu_done) + 5 * US,
                    -1,
                    r.corr,
                    None,
                )
            )
            r.t = max(t0, gpu_done) + 6 * US + 2 * US
            r.steps.append((10 + k, r.step_start, r.t))  # type: ignore[attr-defined]
            r.t += 20 * US
    return [_trace(r, world) for r in ranks]


def _trace(r: _Rank, world: int) -> Trace:
    host = r.host + [(f"ProfilerStep#{n}", "user_annotation", s, e, -1) for n, s, e in r.steps]
    return make_trace(
        TraceMeta(rank=r.rank, source_format="synthetic", world_size=world),
        gpu={
            "name": [g[0] for g in r.gpu],
            "kind": [g[1] for g in r.gpu],
            "start_ns": [g[2] for g in r.gpu],
            "end_ns": [g[3] for g in r.gpu],
            "stream": [g[4] for g in r.gpu],
            "correlation": [g[5] for g in r.gpu],
            "device": [r.rank] * len(r.gpu),
            "comm_args": [g[6] for g in r.gpu],
        },
        host={
            "name": [h[0] for h in host],
            "cat": [h[1] for h in host],
            "start_ns": [h[2] for h in host],
            "end_ns": [h[3] for h in host],
            "pid": [100 + r.rank] * len(host),
            "tid": [1] * len(host),
            "correlation": [h[4] for h in host],
        },
        annotations={
            "name": [f"ProfilerStep#{n}" for n, _, _ in r.steps],
            "kind": ["step"] * len(r.steps),
            "start_ns": [s for _, s, _ in r.steps],
            "end_ns": [e for _, _, e in r.steps],
            "step": [n for n, _, _ in r.steps],
        },
    )


def step_times(traces: list[Trace]) -> dict[int, int]:
    """Measured job step time: per step, the slowest rank's ProfilerStep duration (every
    step's GPU work ends inside it, before the synchronize returns)."""
    out: dict[int, int] = {}
    for t in traces:
        for row in t.steps().itertuples(index=False):
            d = int(row.end_ns - row.start_ns)
            out[int(row.step)] = max(out.get(int(row.step), d), d)
    return out
