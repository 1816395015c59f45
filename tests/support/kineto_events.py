"""Hand-written Kineto events for reader tests: one builder per kind of event, and the file.

Times are in µs as Kineto writes them.  Each builder returns a plain dict (so that a test can
then break one field on purpose); :func:`write_trace` writes ``{"traceEvents": [...]}`` with
the stdlib ``json`` module, which (unlike msgspec) also writes what a broken producer would:
``NaN``, integers beyond 64 bits.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

Event = dict[str, Any]


def kernel(
    name: str,
    ts: Any,
    dur: Any,
    *,
    correlation: int = 1,
    stream: Any = 7,
    device: int = 0,
    **args: Any,
) -> Event:
    """A ``kernel`` activity on *stream* of *device* (pid = device, tid = stream)."""
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"stream": stream, "correlation": correlation, "device": device, **args},
    }


def runtime(
    name: str,
    ts: Any,
    dur: Any,
    *,
    correlation: int = 1,
    kernel_name: Any = None,
    cat: str = "cuda_runtime",
    pid: int = 100,
    tid: int = 100,
    **args: Any,
) -> Event:
    """A runtime/driver API call; *kernel_name* becomes ``args.kernel`` (launch calls)."""
    a: dict[str, Any] = {"correlation": correlation, **args}
    if kernel_name is not None:
        a["kernel"] = kernel_name
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": a,
    }


def cpu_op(name: str, ts: Any, dur: Any, *, pid: Any = 100, tid: Any = 100, **args: Any) -> Event:
    """A ``cpu_op`` activity."""
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": dict(args),
    }


def step(n: Any, ts: Any, dur: Any, *, pid: int = 100, tid: int = 100) -> Event:
    """A ``ProfilerStep#n`` user annotation."""
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{n}",
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {},
    }


def cuda_sync(
    name: str,
    ts: Any,
    dur: Any,
    *,
    stream: int = -1,
    correlation: int = 1,
    wait_on_stream: Any = None,
    wait_on_event: Any = None,
    device: int = 0,
) -> Event:
    """A ``cuda_sync`` row (``Event Sync``, ``Stream Wait Event``, ``Context Sync``...)."""
    a: dict[str, Any] = {"stream": stream, "correlation": correlation, "device": device}
    if wait_on_stream is not None:
        a["wait_on_stream"] = wait_on_stream
    if wait_on_event is not None:
        a["wait_on_cuda_event_record_corr_id"] = wait_on_event
    return {
        "ph": "X",
        "cat": "cuda_sync",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": a,
    }


def process_name(pid: int, name: str) -> Event:
    """An ``M`` event naming process *pid*."""
    return {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}


def counter(name: str, ts: Any, value: Any, *, pid: int = 100) -> Event:
    """A ``C`` counter event with one value."""
    return {"ph": "C", "name": name, "pid": pid, "ts": ts, "args": {name: value}}


def launched(
    op: str, kernel_name: str, ts: float, *, correlation: int, stream: int = 7, gpu_at: float = 5
) -> list[Event]:
    """An op of 10 µs that launches *kernel_name* (3 µs, *gpu_at* µs after the op starts)."""
    return [
        cpu_op(op, ts, 10),
        runtime("cudaLaunchKernel", ts + 1, 4, correlation=correlation, kernel_name=kernel_name),
        kernel(kernel_name, ts + gpu_at, 3, correlation=correlation, stream=stream),
    ]


def small_training_step(n: int = 1, t0: float = 0.0) -> list[Event]:
    """One ProfilerStep of 100 µs with two launched kernels."""
    return [
        step(n, t0, 100),
        *launched("aten::mm", "gemm_kernel", t0 + 10, correlation=10 * n + 1),
        *launched("aten::add", "add_kernel", t0 + 40, correlation=10 * n + 2),
    ]


def trace_doc(events: list[Event], **top: Any) -> dict[str, Any]:
    """The file's top-level object."""
    return {"schemaVersion": 1, "traceEvents": events, **top}


def write_trace(
    path: Path, events: list[Event] | dict[str, Any], *, gz: bool | None = None
) -> Path:
    """Write *events* (or a whole document) to *path* (gzip when the name ends in ``.gz``)."""
    doc = events if isinstance(events, dict) else trace_doc(events)
    data = json.dumps(doc).encode()
    if gz if gz is not None else path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path
