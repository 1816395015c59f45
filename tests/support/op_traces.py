"""Hand-built traces of CPU ops that each launch one GPU kernel, for op-model and roofline
tests: every op runs on thread 1, launches through ``cudaLaunchKernel`` and its kernel runs
for the given time; kernels run back to back on stream 7."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace


@dataclass(frozen=True)
class Op:
    """One CPU op and the kernel it launches."""

    name: str
    dims: list | None
    types: list | None
    kernel_ns: int
    concrete: list | None = None
    kernel: str = "kernel"
    strides: list | None = field(default=None)


def op_trace(ops: list[Op], device: str = "NVIDIA H100 80GB HBM3") -> Trace:
    """A rank-0 trace of *ops* (CPU op i spans [1000·i, 1000·i + 500) ns, its launch starts
    10 ns in; the kernels follow each other from t = 1 ms)."""
    host: dict[str, list] = {
        k: []
        for k in (
            "name",
            "cat",
            "start_ns",
            "end_ns",
            "pid",
            "tid",
            "correlation",
            "external_id",
            "input_dims",
            "input_types",
            "concrete_inputs",
            "input_strides",
        )
    }
    gpu: dict[str, list] = {
        k: [] for k in ("name", "kind", "start_ns", "end_ns", "correlation", "device", "stream")
    }

    def text(v: list | None) -> str | None:
        return None if v is None else json.dumps(v)

    t = 1_000_000
    for i, op in enumerate(ops):
        rows = (
            (op.name, "cpu_op", 1000 * i, 1000 * i + 500, -1, text(op.dims), text(op.types)),
            ("cudaLaunchKernel", "cuda_runtime", 1000 * i + 10, 1000 * i + 20, i, None, None),
        )
        for name, cat, s, e, corr, dims, types in rows:
            host["name"].append(name)
            host["cat"].append(cat)
            host["start_ns"].append(s)
            host["end_ns"].append(e)
            host["pid"].append(1)
            host["tid"].append(1)
            host["correlation"].append(corr)
            host["external_id"].append(i)
            host["input_dims"].append(dims)
            host["input_types"].append(types)
            host["concrete_inputs"].append(text(op.concrete) if cat == "cpu_op" else None)
            host["input_strides"].append(text(op.strides) if cat == "cpu_op" else None)
        gpu["name"].append(op.kernel)
        gpu["kind"].append("kernel")
        gpu["start_ns"].append(t)
        gpu["end_ns"].append(t + op.kernel_ns)
        gpu["correlation"].append(i)
        gpu["device"].append(0)
        gpu["stream"].append(7)
        t += op.kernel_ns
    meta = TraceMeta(
        rank=0,
        source_format="synthetic",
        devices=[DeviceInfo(id=0, name=device, compute_major=9, compute_minor=0, sm_count=132)],
    )
    return make_trace(meta, gpu=gpu, host=host)
