"""A private, minimal reader of raw Kineto JSON for tests: the independent side of comparisons.

:func:`document` is the file's JSON document as the standard library reads it (floats, or
:class:`decimal.Decimal` with ``exact=True``); :func:`events` decodes with msgspec (floats as
``Decimal``, so times convert to integer nanoseconds exactly).  Neither calls gpuscope's
reader.  It also exposes what the trace model does not hold yet: ``args.kernel`` of the
runtime calls that launch kernels.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec


def document(path: Path, *, exact: bool = False) -> Any:
    """The JSON document of a ``.json`` or ``.json.gz`` file (``json`` module; floats as
    ``Decimal`` when *exact*).  A fresh object per call: callers may edit it."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal) if exact else json.loads(raw)


def trace_events(path: Path, *, exact: bool = False) -> list[dict[str, Any]]:
    """Every entry of the file's ``traceEvents`` (see :func:`document`)."""
    return list(document(path, exact=exact)["traceEvents"])


@lru_cache(maxsize=8)
def events(path: Path) -> tuple[dict[str, Any], ...]:
    """The ``ph == "X"`` events of *path*, with ``ts_ns`` / ``end_ns`` added (exact ints)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = msgspec.json.Decoder(float_hook=Decimal).decode(raw)
    out = []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        ts = int(Decimal(e["ts"]) * 1000)
        e["ts_ns"], e["end_ns"] = ts, ts + int(Decimal(e["dur"]) * 1000)
        out.append(e)
    return tuple(out)


def launch_kernel_names(path: Path) -> dict[int, str]:
    """Correlation → ``args.kernel`` of every runtime/driver call that names a kernel."""
    out = {}
    for e in events(Path(path)):
        a = e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "kernel" in a:
            out[int(a["correlation"])] = str(a["kernel"])
    return out


def capture_links(path: Path) -> dict[int, tuple[str, str | None, Any]]:
    """The capture trace's own op → kernel links: per launch call with ``args.kernel``, its
    correlation → (kernel name, name of the ``cpu_op`` with the call's ``External id``, that
    op's ``Input Dims``); the op is None when no ``cpu_op`` has that id."""
    evs = events(Path(path))
    ops: dict[int, dict[str, Any]] = {}
    for e in evs:
        a = e.get("args") or {}
        if e.get("cat") == "cpu_op" and "External id" in a:
            ops.setdefault(int(a["External id"]), e)
    out: dict[int, tuple[str, str | None, Any]] = {}
    for e in evs:
        a = e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "kernel" in a:
            op = ops.get(int(a.get("External id", -1)))
            dims = (op.get("args") or {}).get("Input Dims") if op else None
            out[int(a["correlation"])] = (str(a["kernel"]), op["name"] if op else None, dims)
    return out


def has_stream_capture(path: Path) -> bool:
    """True when a runtime/driver event named ``*StreamBeginCapture`` is in the file."""
    return any(
        e.get("cat") in ("cuda_runtime", "cuda_driver") and "StreamBeginCapture" in e["name"]
        for e in events(Path(path))
    )
