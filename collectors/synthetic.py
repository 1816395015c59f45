"""Deterministic synthetic multi-rank Kineto traces, with their ground truth by construction.

Each rank's trace is what ``torch.profiler`` writes for a data-parallel training loop:
``ProfilerStep#N`` ``cpu_op`` rows; per step ``K`` compute kernels on stream 7 launched by
``cudaLaunchKernel``, one ``Memcpy HtoD`` on stream 7, and one NCCL all-reduce kernel
(``ncclDevKernel_AllReduce_Sum_f32_RING_LL``) on the communication stream 20, launched under
``record_param_comms`` / ``nccl:all_reduce`` and carrying PyTorch's collective metadata.
Timing differs per rank (each rank draws its own durations).

The layout of one step's GPU work is fixed, so every metric follows from the drawn durations
without any interval arithmetic (metrics.md §2, §5, §6; ``c_i = [s_i, e_i)`` are the compute
kernels, ``m`` the memcpy, ``n = [ns, ne)`` the NCCL kernel)::

    stream 7    c_0  c_1 .. m .. c_2 ... c_{K-2}  gap  c_{K-1}
    stream 20                               [ns ................ ne)

* compute kernels are disjoint; the memcpy lies inside the gap after ``c_1``;
* the NCCL kernel starts inside ``c_{K-2}`` and ends after ``c_{K-1}``, so
  ``overlap = (e_{K-2} - ns) + d_{K-1}`` and ``exposed = (s_{K-1} - e_{K-2}) + (ne - e_{K-1})``;
* busy time of the step = Σ d_i + d_m + exposed; all of it lies inside the step's
  ``ProfilerStep`` range, and one initialisation kernel runs before the first step.

Ground truth is given for HTA's default window (kernels launched before the last step starts;
metrics.md §2) and for ``--all-events``.  Writing: ``python -m collectors.synthetic OUT_DIR
--ranks N --steps S --seed K [--int-us]``; files ``rank-<r>.json.gz`` and ``ground_truth.jsonl``
(format in ``sample_traces/README.md``).  Same arguments → byte-identical files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
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


# --------------------------------------------------------------------------------------------
# rendering


def render_kineto(lay: RankLayout, *, int_us: bool) -> dict[str, Any]:
    """The rank's trace as a Kineto JSON object."""
    pid = 4000 + lay.rank
    us = (lambda v: v // 1000) if int_us else (lambda v: v / 1000)
    events: list[dict[str, Any]] = []
    for h in lay.host:
        events.append(
            {
                "ph": "X",
                "cat": h["cat"],
                "name": h["name"],
                "pid": pid,
                "tid": pid,
                "ts": us(h["start_ns"]),
                "dur": us(h["end_ns"] - h["start_ns"]),
                "args": h["args"],
            }
        )
    comm_by_step = {
        int(h["args"]["Seq"]) + FIRST_STEP: h["args"]
        for h in lay.host
        if h["name"] == "record_param_comms"
    }
    for op in lay.gpu:
        args: dict[str, Any] = {
            "External id": op.external_id,
            "device": lay.device,
            "context": 1,
            "stream": op.stream,
            "correlation": op.correlation,
        }
        if op.kind == "memcpy":
            args["bytes"] = 4 * 1024 * 1024
            args["memory bandwidth (GB/s)"] = round(4 * 1024 * 1024 / (op.end_ns - op.start_ns), 6)
            cat = "gpu_memcpy"
        else:
            cat = "kernel"
            args.update(
                {
                    "queued": 0,
                    "registers per thread": 128 if op.kind == "compute" else 96,
                    "shared memory": 98304 if op.kind == "compute" else 87568,
                    "blocks per SM": 1.939394 if op.kind == "compute" else 0.242424,
                    "warps per SM": 15.515152 if op.kind == "compute" else 4.121212,
                    "grid": [256, 1, 1] if op.kind == "compute" else [32, 1, 1],
                    "block": [256, 1, 1] if op.kind == "compute" else [544, 1, 1],
                    "est. achieved occupancy %": 19 if op.kind == "compute" else 3,
                }
            )
            if op.kind == "comm":
                meta = dict(comm_by_step[op.step])
                for key in ("External id", "Record function id", "Global rank start"):
                    meta.pop(key, None)
                args.update(meta)
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": op.name,
                "pid": lay.device,
                "tid": op.stream,
                "ts": us(op.start_ns),
                "dur": us(op.end_ns - op.start_ns),
                "args": args,
            }
        )
        # flow events (ignored by readers, present in real traces)
        events.append(
            {
                "ph": "s",
                "id": op.correlation,
                "pid": pid,
                "tid": pid,
                "ts": us(op.launch_ns),
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        events.append(
            {
                "ph": "f",
                "id": op.correlation,
                "pid": lay.device,
                "tid": op.stream,
                "ts": us(op.start_ns),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
    for ts, alloc, reserved in lay.memory:
        events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": pid,
                "tid": pid,
                "ts": us(ts),
                "args": {
                    "Total Reserved": reserved,
                    "Total Allocated": alloc,
                    "Bytes": 4096,
                    "Addr": 139_000_000_000 + ts % 4096,
                    "Device Type": 1,
                    "Device Id": lay.device,
                },
            }
        )
    first = min(e["ts"] for e in events)
    last = max(e["ts"] + e.get("dur", 0) for e in events)
    events += [
        _meta_event("process_name", pid, 0, {"name": "python3"}, first),
        _meta_event("process_labels", pid, 0, {"labels": "CPU"}, first),
        _meta_event("thread_name", pid, pid, {"name": f"thread {pid} (python3)"}, first),
        _meta_event("process_name", lay.device, 0, {"name": "python3"}, first),
        _meta_event("process_labels", lay.device, 0, {"labels": f"GPU {lay.device}"}, first),
        _meta_event("thread_name", lay.device, COMPUTE_STREAM, {"name": "stream 7 "}, first),
        _meta_event("thread_name", lay.device, COMM_STREAM, {"name": "stream 20 "}, first),
        {
            "ph": "X",
            "cat": "Trace",
            "ts": first,
            "dur": last - first,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        },
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": last},
    ]
    ranks = list(range(lay.world_size))
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": i, **DEVICE_PROPERTIES} for i in range(8)],
        "distributedInfo": {
            "backend": "nccl",
            "rank": lay.rank,
            "world_size": lay.world_size,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "backend_config": "cuda:nccl",
                    "pg_size": lay.world_size,
                    "ranks": ranks,
                }
            ],
            "nccl_version": "2.21.5",
        },
        "record_shapes": 1,
        "traceEvents": events,
        "traceName": f"rank-{lay.rank}.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_735_689_600_000_000_000,
    }


def _meta_event(name: str, pid: int, tid: int, args: dict[str, Any], ts: Any) -> dict[str, Any]:
    return {"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args}


# --------------------------------------------------------------------------------------------
# ground truth


def ground_truth(lay: RankLayout) -> dict[str, Any]:
    """The rank's metrics by construction, for the default window and ``--all-events``."""
    kept_default = lay.steps[:-1] if len(lay.steps) >= 2 else lay.steps
    return {
        "rank": lay.rank,
        "file": f"rank-{lay.rank}.json.gz",
        "device": lay.device,
        "windows": {
            "default": _window_truth(lay, kept_default, listed=kept_default),
            "all_events": _window_truth(lay, lay.steps, listed=lay.steps),
        },
        "memory_counters": [
            {"ts_ns": ts, "total_allocated": a, "total_reserved": r, "device": lay.device}
            for ts, a, r in lay.memory
        ],
    }


def _window_truth(
    lay: RankLayout, kept: list[StepLayout], listed: list[StepLayout]
) -> dict[str, Any]:
    init_s, init_e = lay.init_ns
    init_d = init_e - init_s
    span = kept[-1].gpu_last_ns - init_s
    compute = init_d + sum(s.compute_ns for s in kept)
    busy = init_d + sum(s.busy_ns for s in kept)
    idle = span - busy
    comm = sum(s.comm_ns for s in kept)
    overlap = sum(s.overlap_ns for s in kept)
    kept_steps = {s.step for s in kept} | {-1}
    totals: dict[str, dict[str, dict[str, int]]] = {"kernel": {}, "memcpy": {}}
    for op in lay.gpu:
        if op.step not in kept_steps:
            continue
        table = totals["memcpy" if op.kind == "memcpy" else "kernel"]
        k = table.setdefault(op.name, {"count": 0, "total_ns": 0, "min_ns": 2**62, "max_ns": 0})
        dur = op.end_ns - op.start_ns
        k["count"] += 1
        k["total_ns"] += dur
        k["min_ns"] = min(k["min_ns"], dur)
        k["max_ns"] = max(k["max_ns"], dur)
    return {
        "steps_in_window": [s.step for s in listed],
        "temporal": {
            "span_ns": span,
            "idle_ns": idle,
            "compute_ns": compute,
            "non_compute_ns": span - compute - idle,
        },
        "overlap": {
            "comm_ns": comm,
            "compute_ns": compute,
            "overlap_ns": overlap,
            "exposed_comm_ns": comm - overlap,
        },
        "steps": _steps_truth(lay, listed),
        "kernels": dict(sorted(totals["kernel"].items())),
        "memcpy": dict(sorted(totals["memcpy"].items())),
    }


def _steps_truth(lay: RankLayout, listed: list[StepLayout]) -> list[dict[str, Any]]:
    """The steps on the GPU clock (metrics.md §7), by construction: every step's work lies in
    its own ProfilerStep range after the initialisation kernel, so step N runs on the GPU from
    the previous listed step's last GPU end (the first: from its host start, the GPU being idle
    since the initialisation kernel) to its own last GPU end, and nothing else runs then."""
    out = []
    prev_end: int | None = None
    for s in listed:
        ops = [op for op in lay.gpu if op.step == s.step]
        g = s.start_ns if prev_end is None else prev_end
        if prev_end is None:  # the GPU was idle since the initialisation kernel ended
            g = min(s.gpu_first_ns, max(s.start_ns, lay.init_ns[1]))
        lag = round(median(op.start_ns - op.launch_ns for op in ops))
        duration = s.end_ns - s.start_ns
        out.append(
            {
                "step": s.step,
                "start_ns": s.start_ns,
                "end_ns": s.end_ns,
                "duration_ns": duration,
                "gpu_start_ns": g,
                "gpu_end_ns": s.gpu_last_ns,
                "gpu_duration_ns": s.gpu_last_ns - g,
                "compute_ns": s.compute_ns,
                "exposed_comm_ns": s.exposed_ns,
                "idle_ns": (s.gpu_last_ns - g) - s.busy_ns,
                "work_events": len(ops),
                "work_ns": sum(op.end_ns - op.start_ns for op in ops),
                "launch_lag_ns": lag,
                "steps_behind": lag / duration,
            }
        )
        prev_end = s.gpu_last_ns
    return out


# --------------------------------------------------------------------------------------------
# writing


def generate(
    ranks: int = 2, steps: int = 4, seed: int = 0, *, int_us: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-rank Kineto JSON objects and per-rank ground-truth records (README format)."""
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    layouts = [layout_rank(r, ranks, steps, seed, int_us=int_us) for r in range(ranks)]
    header = {
        "format": "gpuscope-synthetic-ground-truth",
        "generator_version": GENERATOR_VERSION,
        "arguments": {"ranks": ranks, "steps": steps, "seed": seed, "int_us": int_us},
        "timestamps": "integer µs" if int_us else "float µs with ns precision",
        "definitions": "reference/metrics.md §2 (window), §5 (temporal), §6 (overlap, "
        "exposed communication); steps on the GPU clock (docs/metrics.md §7)",
    }
    truth = [{**header, **ground_truth(lay)} for lay in layouts]
    return [render_kineto(lay, int_us=int_us) for lay in layouts], truth


GROUND_TRUTH_FILE = "ground_truth.jsonl"
"""One JSON object per line, one line per rank.  Not ``*.json``, so that ``gpuscope analyze
OUT_DIR`` reads only the traces."""


def read_ground_truth(folder: str | Path) -> list[dict[str, Any]]:
    """The per-rank ground-truth records written by :func:`write_samples`, by rank."""
    text = (Path(folder) / GROUND_TRUTH_FILE).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_samples(
    out_dir: str | Path, ranks: int = 2, steps: int = 4, seed: int = 0, *, int_us: bool = False
) -> list[Path]:
    """Write ``rank-<r>.json.gz`` files and :data:`GROUND_TRUTH_FILE` into *out_dir*."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces, truth = generate(ranks, steps, seed, int_us=int_us)
    written = []
    for r, trace in enumerate(traces):
        p = out / f"rank-{r}.json.gz"
        text = json.dumps(trace, separators=(",", ":")).encode()
        p.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        written.append(p)
    gt = out / GROUND_TRUTH_FILE
    lines = [json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in truth]
    gt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.append(gt)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m collectors.synthetic OUT_DIR --ranks N --steps S --seed K [--int-us]``."""
    ap = argparse.ArgumentParser(
        prog="python -m collectors.synthetic",
        description="Write deterministic synthetic Kineto traces and their ground truth.",
    )
    ap.add_argument("out_dir", type=Path, help="folder to write rank-<r>.json.gz into")
    ap.add_argument("--ranks", type=int, default=2, help="number of ranks (default 2)")
    ap.add_argument("--steps", type=int, default=4, help="ProfilerSteps per rank (default 4)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument(
        "--int-us", action="store_true", help="integer-µs timestamps (default: ns-precision floats)"
    )
    a = ap.parse_args(argv)
    if a.ranks < 1 or a.steps < 1:
        ap.error("--ranks and --steps must be >= 1")
    for p in write_samples(a.out_dir, a.ranks, a.steps, a.seed, int_us=a.int_us):
        print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
