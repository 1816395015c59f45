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

from profiler.backends.cupti import complete_event, flow_events

__all__ = ["complete_event", "flow_events", "write_trace"]


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
