"""Write a trace in the Kineto (PyTorch profiler) JSON format, for the torch-less backends.

The layout follows what ``torch.profiler`` writes (checked against torch 2.13 and the HTA
corpus): a top-level object with ``schemaVersion``, ``deviceProperties``, ``distributedInfo``,
``displayTimeUnit``, ``baseTimeNanoseconds`` and ``traceEvents``; complete events (``"ph": "X"``)
with ``ts``/``dur`` in microseconds **relative to** ``baseTimeNanoseconds`` (Unix epoch), with
three decimals, so integer nanoseconds survive exactly; ``cat`` one of ``user_annotation``
(``ProfilerStep#N`` and regions), ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``,
``cuda_driver``; GPU events on ``pid`` = device, ``tid`` = stream; ``ac2g`` flow events link a
runtime call to its GPU activity by correlation id.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["complete_event", "flow_events", "write_trace"]


def _us(ns: int) -> int | float:
    """Integer ns as Kineto's µs number (an int when whole, else ≤ 3 decimals)."""
    q, r = divmod(int(ns), 1000)
    return q if r == 0 else int(ns) / 1000


def complete_event(
    name: str,
    cat: str,
    start_ns: int,
    end_ns: int,
    pid: int,
    tid: int,
    base_ns: int,
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Kineto ``"ph": "X"`` event from Unix-epoch ns (``base_ns`` = baseTimeNanoseconds)."""
    ev: dict[str, Any] = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": _us(start_ns - base_ns),
        "dur": _us(end_ns - start_ns),
    }
    if args:
        ev["args"] = args
    return ev


def flow_events(correlation: int, src: dict[str, Any], dst: dict[str, Any]) -> list[dict]:
    """The ``ac2g`` start/finish pair linking a runtime call to its GPU activity."""
    common = {"id": correlation, "cat": "ac2g", "name": "ac2g"}
    return [
        {"ph": "s", "pid": src["pid"], "tid": src["tid"], "ts": src["ts"], **common},
        {"ph": "f", "pid": dst["pid"], "tid": dst["tid"], "ts": dst["ts"], "bp": "e", **common},
    ]


def write_trace(
    path: str | Path,
    events: list[dict[str, Any]],
    *,
    base_time_ns: int,
    rank: int,
    world_size: int,
    device_properties: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``events`` as a gzip'd Kineto trace, atomically (temp file, then rename)."""
    doc: dict[str, Any] = {
        "schemaVersion": 1,
        "deviceProperties": device_properties or [],
        "distributedInfo": {"rank": rank, "world_size": world_size},
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": int(base_time_ns),
        "traceName": Path(path).name,
    }
    if extra:
        doc.update(extra)
    doc["traceEvents"] = events
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".partial")
    with gzip.open(tmp, "wb", compresslevel=3) as f:
        f.write(msgspec.json.encode(doc))
    os.replace(tmp, p)
    return p
