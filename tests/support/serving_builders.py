"""Hand-built serving traces for tests: CPU ops, runtime calls (eager and graph launches, stream
captures), kernels and annotations, all in µs on thread 1 of process 1.

A trace is described by a list of :class:`Op` and :class:`Call` (host side) and :class:`Kernel`
(GPU side); correlations tie a call to its kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.model import Trace, TraceMeta, make_trace

US = 1000


@dataclass(frozen=True)
class Op:
    """A ``cpu_op`` from *start* to *end* µs."""

    name: str
    start: float
    end: float
    dims: str | None = None
    types: str | None = None
    """Kineto ``Input type`` (JSON text), for the op models."""


@dataclass(frozen=True)
class Call:
    """A runtime call (``hipLaunchKernel``, ``hipGraphLaunch``, ``hipStreamBeginCapture``, …)."""

    name: str
    start: float
    end: float
    correlation: int = -1


@dataclass(frozen=True)
class Kernel:
    """A GPU row (kind ``kernel`` unless *kind* says ``memcpy``/``memset``)."""

    name: str
    start: float
    end: float
    correlation: int
    stream: int = 7
    kind: str = "kernel"


@dataclass(frozen=True)
class Range:
    """An annotation (``user`` on thread 1, or ``gpu_user`` on stream 7)."""

    name: str
    start: float
    end: float
    kind: str = "user"


def _ns(us: float) -> int:
    return round(us * US)


def serving_trace(
    host: Sequence[Op | Call],
    gpu: Sequence[Kernel] = (),
    ranges: Sequence[Range] = (),
) -> Trace:
    """A rank-0 trace of these events (times in µs)."""
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [k.name for k in gpu],
            "kind": [k.kind for k in gpu],
            "stream": [k.stream for k in gpu],
            "start_ns": [_ns(k.start) for k in gpu],
            "end_ns": [_ns(k.end) for k in gpu],
            "correlation": [k.correlation for k in gpu],
        },
        host={
            "name": [h.name for h in host],
            "cat": ["cpu_op" if isinstance(h, Op) else "cuda_runtime" for h in host],
            "start_ns": [_ns(h.start) for h in host],
            "end_ns": [_ns(h.end) for h in host],
            "pid": [1] * len(host),
            "tid": [1] * len(host),
            "correlation": [h.correlation if isinstance(h, Call) else -1 for h in host],
            "input_dims": [h.dims if isinstance(h, Op) else None for h in host],
            "input_types": [h.types if isinstance(h, Op) else None for h in host],
        },
        annotations={
            "name": [r.name for r in ranges],
            "kind": [r.kind for r in ranges],
            "start_ns": [_ns(r.start) for r in ranges],
            "end_ns": [_ns(r.end) for r in ranges],
            "pid": [1 if r.kind == "user" else 0 for r in ranges],
            "tid": [1 if r.kind == "user" else 0 for r in ranges],
            "stream": [-1 if r.kind == "user" else 7 for r in ranges],
        },
    )


def launched(
    op: str, kernel: str, t: float, corr: int, dims: str | None = None, types: str | None = None
) -> list[Op | Call]:
    """An op at *t* µs (2 µs long) that launches one kernel with correlation *corr*."""
    return [Op(op, t, t + 2, dims, types), Call("hipLaunchKernel", t + 0.5, t + 1.5, corr)]


def captured_graph(start: float, body: list[Op | Call], end: float) -> list[Op | Call]:
    """*body* between a ``hipStreamBeginCapture`` at *start* and a ``hipStreamEndCapture``
    at *end* µs."""
    return [
        Call("hipStreamBeginCapture", start, start + 1),
        *body,
        Call("hipStreamEndCapture", end, end + 1),
    ]
