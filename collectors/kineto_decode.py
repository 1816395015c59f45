"""Typed decoding of Kineto (PyTorch-profiler) Chrome-trace JSON and exact µs → ns conversion.

Only the fields the trace model needs are decoded (msgspec Structs; unknown keys are skipped
without building dicts).  Values whose type differs between producers (``args.stream`` is an
int on CUDA and the string ``"0x0"`` on ROCm; ``grid`` is a list on kernels and a string on
Inductor's launcher ops) are typed ``Any`` and normalized column by column afterwards.
"""

from __future__ import annotations

import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from collectors.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"

COMM_KEYS: tuple[str, ...] = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "In split size",
    "Out split size",
    "Global rank start",
    "Global rank stride",
    "Process Group ID",
    "Process Group Name",
    "Process Group Description",
    "Process Group Ranks",
    "Src Rank",
    "Dst Rank",
    "Input Tensors start",
    "Output Tensors start",
    "Seq",
    "Comms Id",
    "Rank",
)
"""Collective metadata that PyTorch writes on ``record_param_comms`` and NCCL kernels
(reference/nccl.md §4, every torch era).  ``comm_args`` holds exactly these keys."""

COMM_MARKER_KEYS: tuple[str, ...] = (
    "Collective name",
    "Comms Id",
    "In msg nelems",
    "Process Group Name",
    "Process Group ID",
)
"""An event carries collective metadata when its ``args`` has one of these keys: every torch
era that records metadata writes ``Collective name`` (2.1+) or ``Comms Id`` (2026+); the others
are kept for partial writers.  (``dtype``/``Rank`` alone also occur on non-collective ops.)"""

_COMM_MARKERS = tuple(f'"{k}"'.encode() for k in COMM_MARKER_KEYS)


_NO_RAW = msgspec.Raw(b"")
"""Default of undecoded (``Raw``) fields: empty, i.e. falsy."""


NAN = float("nan")


def _args_struct(
    name: str, fields: dict[str, tuple[str, Any]], raw: dict[str, str] | None = None
) -> type:
    """A Struct for an ``args`` object: attribute -> (JSON key, default when absent).

    Values are typed ``Any`` (producers disagree on types); integer fields default to -1 and
    float fields to NaN, so that whole columns usually convert to numpy without a Python pass.
    *raw* fields are kept as undecoded JSON text (``msgspec.Raw``).
    """
    raw = raw or {}
    return msgspec.defstruct(
        name,
        [(attr, Any, default) for attr, (_, default) in fields.items()]
        + [(attr, msgspec.Raw, _NO_RAW) for attr in raw],
        rename={**{attr: key for attr, (key, _) in fields.items()}, **raw},
        gc=False,
    )


ActivityArgs = _args_struct(
    "ActivityArgs",
    {
        "stream": ("stream", -1),
        "correlation": ("correlation", -1),
        "external_id": ("External id", -1),
        "external_id_2022": ("external id", -1),
    },
    raw={"input_dims": "Input Dims", "input_types": "Input type"},
)
"""What every activity (``ph == "X"``) row needs from ``args``."""

GpuArgs = _args_struct(
    "GpuArgs",
    {
        "device": ("device", None),
        "grid": ("grid", None),
        "block": ("block", None),
        "registers": ("registers per thread", -1),
        "shared_memory": ("shared memory", -1),
        "bytes": ("bytes", -1),
        "occupancy": ("est. achieved occupancy %", NAN),
        "blocks_per_sm": ("blocks per SM", NAN),
        "warps_per_sm": ("warps per SM", NAN),
        "kind": ("kind", None),
    },
)
"""Launch attributes of device activities (decoded only for ``gpu`` rows)."""

MetaArgs = _args_struct("MetaArgs", {"name": ("name", None), "labels": ("labels", None)})
"""``args`` of ``ph == "M"`` metadata events (process/thread names and labels)."""

MemoryArgs = _args_struct(
    "MemoryArgs",
    {
        "total_allocated": ("Total Allocated", None),
        "total_reserved": ("Total Reserved", None),
        "device_id": ("Device Id", None),
    },
)
"""``args`` of the ``[memory]`` instant events written with ``profile_memory=True``."""


class Event(msgspec.Struct, gc=False):
    """One entry of ``traceEvents``; ``args`` stays undecoded until its row kind is known."""

    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = _NO_RAW


class KinetoFile(msgspec.Struct):
    """Top level of a Kineto trace file."""

    traceEvents: list[Event] | None = None
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None
    record_shapes: Any = None
    host_name: Any = None
    trace_id: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None


_DECODER = msgspec.json.Decoder(KinetoFile)
_BATCH_DECODERS: dict[type, msgspec.json.Decoder] = {}


def decode_args(events: list[Event], struct: type, path: Path) -> list[Any]:
    """Decode the ``args`` of *events* into *struct* instances with one decoder call.

    Raises:
        InputError: an ``args`` value is not a JSON object.
    """
    return decode_args_joined(events, struct, path)[0]


def decode_args_joined(
    events: list[Event], struct: type, path: Path
) -> tuple[list[Any], bytes, np.ndarray]:
    """:func:`decode_args`, also returning the joined ``args`` text and each event's offset in it
    (for :func:`comm_args`)."""
    if not events:
        return [], b"[]", np.zeros(0, dtype=np.int64)
    dec = _BATCH_DECODERS.get(struct)
    if dec is None:
        dec = _BATCH_DECODERS[struct] = msgspec.json.Decoder(list[struct])
    parts = [e.args or b"{}" for e in events]
    joined = b"[" + b",".join(parts) + b"]"
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    offsets = np.concatenate([[1], 1 + np.cumsum(lengths[:-1] + 1)])
    try:
        return dec.decode(joined), joined, offsets
    except msgspec.DecodeError as e:
        raise InputError(
            f"not a Kineto trace: an event's 'args' is malformed ({e})", path=path
        ) from None


def comm_args(events: list[Event], joined: bytes, offsets: np.ndarray) -> dict[int, dict[str, Any]]:
    """``{index: {key: value}}`` for the events whose ``args`` carry collective metadata.

    *joined*/*offsets* come from :func:`decode_args_joined` over the same *events*.  An event
    qualifies when its ``args`` contain a :data:`COMM_MARKER_KEYS` key; the dict holds exactly
    the :data:`COMM_KEYS` present.  Integers keep their full range (``Comms Id`` is a uint64).
    """
    hits: set[int] = set()
    for marker in _COMM_MARKERS:
        pos = joined.find(marker)
        while pos >= 0:
            hits.add(int(np.searchsorted(offsets, pos, side="right")) - 1)
            pos = joined.find(marker, pos + 1)
    out: dict[int, dict[str, Any]] = {}
    for i in sorted(hits):
        args = msgspec.json.decode(events[i].args)
        if isinstance(args, dict):
            out[i] = {k: args[k] for k in COMM_KEYS if k in args}
    return out


def read_bytes(path: Path) -> bytes:
    """The file's JSON text, gunzipped when it starts with the gzip magic bytes.

    Raises:
        InputError: missing/unreadable file, truncated or corrupt gzip data.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a Kineto trace file", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", path=path) from None
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(data, path)
    return data


def _gunzip(data: bytes, path: Path) -> bytes:
    """Decompress (possibly multi-member) gzip data; zlib checks each member's CRC and size.

    Raises:
        InputError: truncated or corrupt data.
    """
    parts = []
    rest = data
    while rest[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(wbits=31)
        try:
            parts.append(d.decompress(rest))
        except zlib.error as e:
            raise InputError(f"corrupt gzip data: {e}", path=path) from None
        if not d.eof:
            raise InputError("truncated gzip data (file cut short?)", path=path)
        rest = d.unused_data
    if rest.strip(b"\0"):
        raise InputError("corrupt gzip data: trailing bytes after the last member", path=path)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def decode(data: bytes, path: Path) -> KinetoFile:
    """Decode the JSON text into a :class:`KinetoFile`.

    Raises:
        InputError: invalid JSON, or JSON that is not a Kineto trace.
    """
    try:
        doc = _DECODER.decode(data)
    except msgspec.ValidationError as e:
        what = _describe(data)
        if what:
            raise InputError(f"not a Kineto trace ({what})", path=path) from None
        raise InputError(f"not a Kineto trace: {e}", path=path) from None
    except msgspec.DecodeError as e:
        raise InputError(f"invalid JSON: {e}", path=path) from None
    if doc.traceEvents is None:
        raise InputError(f"not a Kineto trace ({_describe(data) or 'no traceEvents'})", path=path)
    return doc


def _describe(data: bytes) -> str:
    """What the JSON is instead of a trace, or '' when its top level looks like one."""
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return ""
    if isinstance(obj, list):
        return "top-level JSON array, expected an object with 'traceEvents'"
    if isinstance(obj, dict):
        if isinstance(obj.get("traceEvents"), list):
            return ""
        keys = ", ".join(sorted(map(str, obj))[:6])
        return f"JSON object without a 'traceEvents' list; keys: {keys}"
    return f"top-level JSON {type(obj).__name__}, expected an object with 'traceEvents'"


EXACT_FLOAT_LIMIT_US = 2.0**43
"""Below this magnitude a double resolves 2**-10 µs, so a decimal with at most 3 decimals is
recovered exactly by :func:`us_to_ns`'s float path."""


class InexactTimes(Exception):
    """Float microsecond values too large for the float path to recover their decimal text."""


def us_to_ns(values: list[Any], path: Path, what: str) -> NDArray[np.int64]:
    """Exact integer nanoseconds from Kineto microsecond values (as decoded by msgspec).

    Integers are multiplied by 1000 exactly.  Floats are split into their integer part
    (``np.floor``; the subtraction ``x - floor(x)`` is exact in binary floating point) and the
    fraction, which is rounded to the nearest nanosecond.  This reproduces the decimal text
    exactly whenever it has at most 3 decimals and ``|x| < 2**43`` µs (about 102 days; Kineto's
    ns-resolution traces use a clock that starts at boot).  Larger non-integral floats (epoch
    microseconds with decimals) raise :class:`InexactTimes`; the caller then re-reads the
    values as exact decimals (:func:`exact_times`).

    Raises:
        InputError: a value is not a number.
        InexactTimes: see above.
    """
    if not values:
        return np.empty(0, dtype=np.int64)
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        arr = np.asarray(values, dtype=object)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64) * 1000
    if arr.dtype.kind == "f":
        whole = np.floor(arr)
        if not np.isfinite(arr).all():
            raise InputError(f"event '{what}' holds a non-finite number", path=path)
        if np.abs(arr).max() >= EXACT_FLOAT_LIMIT_US and (arr != whole).any():
            raise InexactTimes(what)
        frac_ns = np.rint((arr - whole) * 1000.0).astype(np.int64)
        return whole.astype(np.int64) * 1000 + frac_ns
    bad = next((v for v in values if type(v) not in (int, float)), None)
    raise InputError(f"event '{what}' holds a non-numeric value {bad!r}", path=path)


class _ExactEvent(msgspec.Struct, gc=False):
    ts: Decimal | None = None
    dur: Decimal | None = None


class _ExactFile(msgspec.Struct):
    traceEvents: list[_ExactEvent] | None = None


_EXACT_DECODER = msgspec.json.Decoder(_ExactFile)


def exact_times(data: bytes, path: Path) -> tuple[list[Decimal | None], list[Decimal | None]]:
    """``ts`` and ``dur`` of every event as exact decimals (a second, slower decode).

    Raises:
        InputError: a ``ts``/``dur`` that is not a number.
    """
    try:
        events = _EXACT_DECODER.decode(data).traceEvents or []
    except msgspec.DecodeError as e:
        raise InputError(f"event time is not a number ({e})", path=path) from None
    return [e.ts for e in events], [e.dur for e in events]


def decimal_us_to_ns(values: list[Decimal | None]) -> NDArray[np.int64]:
    """Nanoseconds from exact decimal microseconds, rounded half-even to 1 ns."""
    k = Decimal(1000)
    return np.array([int((v * k).to_integral_value()) for v in values], dtype=np.int64)
