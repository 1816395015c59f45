"""The hand-built compare case (BASE and CURRENT, every number worked out in the comments):
a builder of one-rank traces from steps, kernels, ops and annotations, the two sides, and the
``--all-events`` options they are analysed with."""

from __future__ import annotations

from typing import Any

from analyzers.options import AnalysisOptions
from collectors.model import Trace, TraceMeta, make_trace

ALL = AnalysisOptions(all_events=True)


def build(
    steps: list[tuple[int, int]],
    kernels: list[dict[str, Any]],
    ops: list[tuple[int, str, str, int, int]] = (),  # type: ignore[assignment]
    annotations: list[tuple[str, str, int, int]] = (),  # type: ignore[assignment]
    rank: int = 0,
) -> Trace:
    """A trace: ProfilerSteps #1.. over *steps*; kernels ``{name, start, end, launch, ext,
    kind, stream, comm}`` (a launch row at ``launch`` with the kernel's correlation and the
    op's external id); ops ``(ext, name, input_dims, start, end)``; annotations
    ``(name, kind, start, end)``."""
    host: dict[str, list[Any]] = {
        k: []
        for k in ("name", "cat", "start_ns", "end_ns", "correlation", "external_id", "input_dims")
    }

    def h(name: str, cat: str, s: int, e: int, corr: int = -1, ext: int = -1, dims: Any = None):
        for k, v in zip(host, (name, cat, s, e, corr, ext, dims), strict=True):
            host[k].append(v)

    for i, (s, e) in enumerate(steps):
        h(f"ProfilerStep#{i + 1}", "user_annotation", s, e)
    for ext, name, dims, s, e in ops:
        h(name, "cpu_op", s, e, ext=ext, dims=dims)
    gpu: dict[str, list[Any]] = {
        k: [] for k in ("name", "kind", "start_ns", "end_ns", "stream", "correlation", "comm_args")
    }
    for corr, k in enumerate(kernels, start=100):
        gpu["name"].append(k["name"])
        gpu["kind"].append(k.get("kind", "kernel"))
        gpu["start_ns"].append(k["start"])
        gpu["end_ns"].append(k["end"])
        gpu["stream"].append(k.get("stream", 7))
        gpu["correlation"].append(corr)
        gpu["comm_args"].append(k.get("comm"))
        if k.get("launch") is not None:
            h(
                "cudaLaunchKernel",
                "cuda_runtime",
                k["launch"],
                k["launch"] + 5,
                corr,
                k.get("ext", -1),
            )
    ann = {k: [] for k in ("name", "kind", "start_ns", "end_ns", "step")}
    for i, (s, e) in enumerate(steps):
        for k, v in zip(ann, (f"ProfilerStep#{i + 1}", "step", s, e, i + 1), strict=True):
            ann[k].append(v)
    for name, kind, s, e in annotations:
        for k, v in zip(ann, (name, kind, s, e, -1), strict=True):
            ann[k].append(v)
    meta = TraceMeta(rank=rank, source_format="kineto")
    return make_trace(meta, gpu=gpu, host=host, annotations=ann)


def k(name: str, start: int, end: int, launch: int | None, ext: int = -1, **kw: Any) -> dict:
    return {"name": name, "start": start, "end": end, "launch": launch, "ext": ext, **kw}


# BASE: steps [1000, 2000) [2000, 3000)                                   T = 2000
#   gemm  [1100,1400) launched 1050 by aten::mm [[4,4]]       step 1       300
#   gemm  [2100,2400) launched 2050 by aten::mm [[4,4]]       step 2       300
#   relu  [2500,2600) launched 2450 by aten::relu [[4]]       step 2       100
#   late  [2000,2200) launched 1950 by aten::add [[2]]        step 1 (launch), runs in step 2
#   pre   [ 500, 600) launched  450                           no step: not compared
# CURRENT: steps [1000, 2100) [2100, 3300)                                 T = 2300
#   gemm 360 twice (20 % slower), softmax 120 (new), relu gone, late and pre unchanged.
# ΔT = +300 = gemm +120 + softmax +120 + relu −100 + other 160.
BASE_OPS = [
    (1, "aten::mm", "[[4,4]]", 1040, 1060),
    (2, "aten::mm", "[[4,4]]", 2040, 2060),
    (3, "aten::relu", "[[4]]", 2440, 2460),
    (4, "aten::add", "[[2]]", 1940, 1960),
]
CUR_OPS = [
    (11, "aten::mm", "[[4,4]]", 1040, 1060),
    (12, "aten::mm", "[[4,4]]", 2140, 2160),
    (13, "aten::softmax", "[[8]]", 2570, 2590),
    (14, "aten::add", "[[2]]", 2040, 2060),
]


def scaled(trace_args: tuple[Any, ...], scale: int) -> tuple[Any, ...]:
    """The arguments of :func:`build` with every time multiplied by *scale*."""
    steps, kernels, ops, anns = trace_args
    t = {"start", "end", "launch"}
    return (
        [(s * scale, e * scale) for s, e in steps],
        [{k: v * scale if k in t and v is not None else v for k, v in x.items()} for x in kernels],
        [(x, n, d, s * scale, e * scale) for x, n, d, s, e in ops],
        [(n, kd, s * scale, e * scale) for n, kd, s, e in anns],
    )


BASE_ARGS = (
    [(1000, 2000), (2000, 3000)],
    [
        k("gemm", 1100, 1400, 1050, 1),
        k("gemm", 2100, 2400, 2050, 2),
        k("relu", 2500, 2600, 2450, 3),
        k("late", 2000, 2200, 1950, 4, stream=8),
        k("pre", 500, 600, 450),
    ],
    BASE_OPS,
    [("fwd", "user", 1010, 1500), ("fwd", "gpu_user", 1100, 1400)],
)
CUR_ARGS = (
    [(1000, 2100), (2100, 3300)],
    [
        k("gemm", 1100, 1460, 1050, 11),
        k("gemm", 2200, 2560, 2150, 12),
        k("softmax", 2600, 2720, 2580, 13),
        k("late", 2100, 2300, 2050, 14, stream=8),
        k("pre", 500, 600, 450),
    ],
    CUR_OPS,
    [("fwd", "user", 1010, 1600), ("fwd", "gpu_user", 1100, 1460)],
)


def base_trace(rank: int = 0, scale: int = 1) -> Trace:
    """BASE of the hand case; *scale* multiplies every time (for ms-sized printouts)."""
    return build(*scaled(BASE_ARGS, scale), rank=rank)


def current_trace(rank: int = 0, scale: int = 1) -> Trace:
    return build(*scaled(CUR_ARGS, scale), rank=rank)
