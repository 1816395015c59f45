"""Hand-built traces for tests: kernels, host calls and ProfilerSteps given in µs; devices."""

from __future__ import annotations

from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace

US = 1000


def trace_us(gpu: list[tuple], host: list[tuple], steps: list[tuple], pid: int = 1) -> Trace:
    """A rank-0 trace.  gpu: (name, stream, start, end, correlation) kernels; host: (name, cat,
    start, end, tid, correlation) calls of process *pid*; steps: (number, start, end), added as
    ``ProfilerStep#N`` host annotations on thread 1 and as step annotations.  Times in µs."""
    host = list(host) + [(f"ProfilerStep#{n}", "user_annotation", s, e, 1, -1) for n, s, e in steps]
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [g[0] for g in gpu],
            "kind": ["kernel"] * len(gpu),
            "stream": [g[1] for g in gpu],
            "start_ns": [g[2] * US for g in gpu],
            "end_ns": [g[3] * US for g in gpu],
            "correlation": [g[4] for g in gpu],
        },
        host={
            "name": [h[0] for h in host],
            "cat": [h[1] for h in host],
            "start_ns": [h[2] * US for h in host],
            "end_ns": [h[3] * US for h in host],
            "pid": [pid] * len(host),
            "tid": [h[4] for h in host],
            "correlation": [h[5] for h in host],
        },
        annotations={
            "name": [f"ProfilerStep#{n}" for n, _, _ in steps],
            "kind": ["step"] * len(steps),
            "start_ns": [s * US for _, s, _ in steps],
            "end_ns": [e * US for _, _, e in steps],
            "step": [n for n, _, _ in steps],
        },
    )


def h100(rank: int) -> DeviceInfo:
    """The H100 SXM (sm_90, 132 SMs) of *rank*."""
    return DeviceInfo(
        id=rank,
        name="NVIDIA H100 80GB HBM3",
        compute_major=9,
        compute_minor=0,
        sm_count=132,
    )


def host_columns(host: list[tuple]) -> dict[str, list]:
    """Host columns of (name, cat, start_ns, end_ns, correlation) calls on thread 1 of
    process 1."""
    return {
        "name": [h[0] for h in host],
        "cat": [h[1] for h in host],
        "start_ns": [h[2] for h in host],
        "end_ns": [h[3] for h in host],
        "pid": [1] * len(host),
        "tid": [1] * len(host),
        "correlation": [h[4] for h in host],
    }


def step_annotations(steps: list[tuple[int, int, int]]) -> dict[str, list]:
    """Annotation columns of ``ProfilerStep#N`` steps given as (N, start_ns, end_ns)."""
    return {
        "name": [f"ProfilerStep#{k}" for k, _, _ in steps],
        "kind": ["step"] * len(steps),
        "start_ns": [s for _, s, _ in steps],
        "end_ns": [e for _, _, e in steps],
        "step": [k for k, _, _ in steps],
    }
