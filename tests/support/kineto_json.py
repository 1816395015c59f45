"""Kineto JSON builders: the events and documents ``torch.profiler`` writes, for hand-made traces.

Each builder returns the plain ``dict`` Kineto writes (keys in Kineto's order), with the times
given in µs exactly as the test writes them (nothing is rounded or converted), so that a test
states its trace in one line per event and reads its expected values off those lines::

    doc = trace([step(1, 0, 100), runtime("cudaLaunchKernel", 5, 2, 1), kernel("k", 10, 20, 1)])
    write(tmp_path / "rank-0.json", doc)

Positional parameters are positional-only, so any ``args`` key (``name``, ``stream``) can be
given as a keyword.  Deliberately malformed input (bad JSON, wrong types) is not built here: a
test that checks an error writes those bytes itself.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

Event = dict[str, Any]


def event(
    name: str,
    cat: str,
    ts: float,
    dur: float,
    *,
    pid: int = 1,
    tid: int = 1,
    args: dict[str, Any] | None = None,
) -> Event:
    """A complete (``ph: "X"``) event; ``args`` is left out when None."""
    ev: Event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        ev["args"] = args
    return ev


def op(name: str, ts: float, dur: float, /, *, pid: int = 1, tid: int = 1, **args: Any) -> Event:
    """A ``cpu_op`` (an ATen operator, ``record_param_comms``) with *args* (``{}`` when none)."""
    return event(name, "cpu_op", ts, dur, pid=pid, tid=tid, args=args)


def step(
    n: int, ts: float, dur: float, *, cat: str = "user_annotation", pid: int = 1, tid: int = 1
) -> Event:
    """The ``ProfilerStep#n`` range, with empty ``args``."""
    return event(f"ProfilerStep#{n}", cat, ts, dur, pid=pid, tid=tid, args={})


def runtime(
    name: str,
    ts: float,
    dur: float,
    correlation: int,
    /,
    *,
    cat: str = "cuda_runtime",
    pid: int = 1,
    tid: int = 1,
    **args: Any,
) -> Event:
    """A runtime call (``cudaLaunchKernel``, ``cudaGraphLaunch``, ...): *args* then
    ``correlation``."""
    return event(name, cat, ts, dur, pid=pid, tid=tid, args={**args, "correlation": correlation})


def kernel(
    name: str,
    ts: float,
    dur: float,
    correlation: int,
    /,
    *,
    stream: int = 7,
    device: int | None = None,
    cat: str = "kernel",
    pid: int = 0,
    tid: int | None = None,
    **args: Any,
) -> Event:
    """A GPU activity on *stream* (``tid`` defaults to the stream): ``args`` holds ``stream``,
    ``correlation``, ``device`` (when given) and then *args*."""
    a: dict[str, Any] = {"stream": stream, "correlation": correlation}
    if device is not None:
        a["device"] = device
    a.update(args)
    return event(name, cat, ts, dur, pid=pid, tid=stream if tid is None else tid, args=a)


def counter(name: str, ts: float, /, *, pid: int = 1, **values: Any) -> Event:
    """A counter sample (``ph: "C"``): one value per series in ``args``."""
    return {"ph": "C", "name": name, "pid": pid, "ts": ts, "args": values}


def instant(
    name: str, cat: str, ts: float, /, *, pid: int = 1, tid: int = 1, scope: str = "t", **args: Any
) -> Event:
    """An instant event (``ph: "i"``), e.g. the ``[memory]`` allocator records."""
    return {"ph": "i", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "s": scope,
            "args": args}  # fmt: skip


def metadata(name: str, /, *, pid: int, tid: int = 0, **args: Any) -> Event:
    """A metadata event (``ph: "M"``): ``process_name``, ``thread_name``, ..."""
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def flow(
    ph: str,
    id: int,
    ts: float,
    *,
    pid: int = 1,
    tid: int = 1,
    cat: str = "ac2g",
    name: str = "ac2g",
) -> Event:
    """One end of a flow arrow (``ph`` ``"s"`` or ``"f"``)."""
    return {"ph": ph, "id": id, "pid": pid, "tid": tid, "ts": ts, "cat": cat, "name": name}


def trace(
    events: Iterable[Event],
    *,
    rank: int | None = None,
    world_size: int | None = None,
    schema_version: int | None = None,
) -> dict[str, Any]:
    """The trace document: ``schemaVersion``, ``distributedInfo`` (when a rank or world size is
    given) and ``traceEvents``."""
    doc: dict[str, Any] = {}
    if schema_version is not None:
        doc["schemaVersion"] = schema_version
    info = {k: v for k, v in (("rank", rank), ("world_size", world_size)) if v is not None}
    if info:
        doc["distributedInfo"] = info
    doc["traceEvents"] = list(events)
    return doc


def dumps(doc: dict[str, Any]) -> bytes:
    """The document's JSON text (``json.dumps`` defaults), UTF-8."""
    return json.dumps(doc).encode()


def write(path: Path, doc: dict[str, Any]) -> Path:
    """Write *doc* to *path*: gzip (``mtime=0``, so the bytes repeat) when the name ends in
    ``.gz``, plain JSON otherwise."""
    data = dumps(doc)
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path
