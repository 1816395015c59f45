"""Typed decoding of Kineto (PyTorch-profiler) Chrome-trace JSON: the Structs every stage passes on.

Only the fields the trace model needs are decoded (msgspec Structs; unknown keys are skipped
without building dicts).  Events decode into a union tagged by ``ph`` (:data:`EVENTS`): ``X``
events with their ``args`` in a Struct (:class:`XArgs`), ``M`` events with ``args`` undecoded,
counters, instants, and an empty Struct for every other phase.  Values whose type differs
between producers (``args.stream`` is an int on CUDA and the string ``"0x0"`` on ROCm; ``grid``
is a list on kernels and a string on Inductor's launcher ops) are typed ``Any`` and normalized
column by column afterwards.  Files that do not fit the typed union (unknown ``ph``, ``args``
that are not objects) are decoded with the generic :class:`Event` instead.  Times that floats
cannot hold exactly are decoded again as decimals (:func:`exact_times`).  Only
:mod:`collectors.kineto.stream` calls the decoders.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from decimal import Decimal
from functools import reduce
from pathlib import Path
from types import GenericAlias
from typing import Any, Protocol

import msgspec
import numpy as np

from collectors.errors import InputError

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

COMM_MARKERS = tuple(f'"{k}"'.encode() for k in COMM_MARKER_KEYS)
"""The marker keys as they appear in JSON text."""


_NO_RAW = msgspec.Raw(b"")
"""Default of undecoded (``Raw``) fields: empty, i.e. falsy."""


NAN = float("nan")


def _named(default: Any, key: str) -> Any:
    return msgspec.field(default=default, name=key)


class XArgs(msgspec.Struct, gc=False):
    """What activity (``ph == "X"``) rows need from ``args``: every row's ids and shapes, and the
    launch attributes of device rows.  Integers default to -1 and floats to NaN, so that whole
    columns usually convert to numpy without a Python pass."""

    stream: Any = -1
    correlation: Any = -1
    external_id: Any = _named(-1, "External id")
    external_id_2022: Any = _named(-1, "external id")
    input_dims: msgspec.Raw = _named(_NO_RAW, "Input Dims")
    input_types: msgspec.Raw = _named(_NO_RAW, "Input type")
    concrete_inputs: msgspec.Raw = _named(_NO_RAW, "Concrete Inputs")
    input_strides: msgspec.Raw = _named(_NO_RAW, "Input Strides")
    device: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = _named(-1, "registers per thread")
    shared_memory: Any = _named(-1, "shared memory")
    bytes: Any = -1
    occupancy: Any = _named(NAN, "est. achieved occupancy %")
    blocks_per_sm: Any = _named(NAN, "blocks per SM")
    warps_per_sm: Any = _named(NAN, "warps per SM")
    kind: Any = None
    kernel: Any = None
    """The kernel a launch call launches (runtime/driver rows)."""
    wait_on_stream: Any = -1
    wait_on_event: Any = _named(-1, "wait_on_cuda_event_record_corr_id")
    """``cuda_sync`` rows: the stream / the correlation of the ``cudaEventRecord`` waited on."""


class XArgsComm(XArgs, gc=False):
    """:class:`XArgs` plus the collective metadata (:data:`COMM_KEYS`, undecoded), for chunks
    whose text names a collective key (a bigger Struct decodes a little more slowly)."""

    collective_name: msgspec.Raw = _named(_NO_RAW, "Collective name")
    in_msg_nelems: msgspec.Raw = _named(_NO_RAW, "In msg nelems")
    out_msg_nelems: msgspec.Raw = _named(_NO_RAW, "Out msg nelems")
    group_size: msgspec.Raw = _named(_NO_RAW, "Group size")
    dtype: msgspec.Raw = _named(_NO_RAW, "dtype")
    in_split_size: msgspec.Raw = _named(_NO_RAW, "In split size")
    out_split_size: msgspec.Raw = _named(_NO_RAW, "Out split size")
    global_rank_start: msgspec.Raw = _named(_NO_RAW, "Global rank start")
    global_rank_stride: msgspec.Raw = _named(_NO_RAW, "Global rank stride")
    pg_id: msgspec.Raw = _named(_NO_RAW, "Process Group ID")
    pg_name: msgspec.Raw = _named(_NO_RAW, "Process Group Name")
    pg_description: msgspec.Raw = _named(_NO_RAW, "Process Group Description")
    pg_ranks: msgspec.Raw = _named(_NO_RAW, "Process Group Ranks")
    src_rank: msgspec.Raw = _named(_NO_RAW, "Src Rank")
    dst_rank: msgspec.Raw = _named(_NO_RAW, "Dst Rank")
    input_tensors_start: msgspec.Raw = _named(_NO_RAW, "Input Tensors start")
    output_tensors_start: msgspec.Raw = _named(_NO_RAW, "Output Tensors start")
    seq: msgspec.Raw = _named(_NO_RAW, "Seq")
    comms_id: msgspec.Raw = _named(_NO_RAW, "Comms Id")
    rank: msgspec.Raw = _named(_NO_RAW, "Rank")


COMM_FIELDS: tuple[str, ...] = XArgsComm.__struct_fields__[len(XArgs.__struct_fields__) :]
"""Attribute of :class:`XArgsComm` holding each :data:`COMM_KEYS` value."""

COMM_SCAN: tuple[bytes, ...] = (
    b'"Collective name"',
    b'"Comms Id"',
    b'"In msg nelems"',
    b'"Process Group ',
)
"""Text counted in each chunk: it holds a :data:`COMM_MARKERS` key when this occurs (one scan
finds the four ``Process Group ...`` keys; :func:`collectors.kineto.stream.comm_scan`)."""


class MetaArgs(msgspec.Struct, gc=False):
    """``args`` of ``ph == "M"`` metadata events (process/thread names and labels)."""

    name: Any = None
    labels: Any = None


class MemoryArgs(msgspec.Struct, gc=False):
    """``args`` of the ``[memory]`` instant events written with ``profile_memory=True``."""

    total_allocated: Any = _named(None, "Total Allocated")
    total_reserved: Any = _named(None, "Total Reserved")
    device_id: Any = _named(None, "Device Id")


class XEvent(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete (``ph == "X"``) event: a candidate activity row."""

    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: XArgs = msgspec.field(default_factory=XArgs)


class XEventComm(XEvent, tag="X", gc=False):
    """:class:`XEvent` with collective metadata (:class:`XArgsComm`)."""

    args: XArgsComm = msgspec.field(default_factory=XArgsComm)


class MEvent(msgspec.Struct, tag_field="ph", tag="M", gc=False):
    """A metadata event (process/thread names and labels, sort indices...); ``args`` stays
    undecoded until the last event of each (name, pid, tid) is known (:class:`MetaArgs`)."""

    name: Any = None
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = _NO_RAW


class CEvent(msgspec.Struct, tag_field="ph", tag="C", gc=False):
    """A counter event; ``args`` decoded as plain JSON."""

    name: Any = None
    ts: Any = None
    args: Any = None


class IEvent(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    """An instant event (``ph`` ``i`` or ``I``); ``args`` as in ``[memory]`` events."""

    name: Any = None
    ts: Any = None
    args: MemoryArgs = msgspec.field(default_factory=MemoryArgs)


class _IEventUpper(IEvent, tag="I", gc=False):
    pass


SKIPPED_PHASES = tuple("BEbnestfPONDVvRc()STpF")
"""Chrome-trace phases the model does not use (their events decode to empty Structs)."""

_SKIP_TYPES = tuple(
    msgspec.defstruct(f"_Skip{i}", [], tag_field="ph", tag=ph, gc=False)
    for i, ph in enumerate(SKIPPED_PHASES)
)
SKIP = _SKIP_TYPES[0]()
"""Stands for an event the model does not use (keeps chunk positions aligned)."""

I_TYPES = (IEvent, _IEventUpper)


def _union(x: type) -> Any:
    return reduce(operator.or_, (x, MEvent, CEvent, IEvent, _IEventUpper, *_SKIP_TYPES))


def _list_of(item: Any) -> Any:
    """``list[item]`` for an item type built at run time."""
    return GenericAlias(list, (item,))


EVENTS = msgspec.json.Decoder(_list_of(_union(XEvent)))
"""Decodes a JSON array of events into typed Structs by ``ph`` (unknown ``ph``, a missing
``ph`` or an ``args`` of the wrong shape raise ``ValidationError``: use :data:`GENERIC_EVENTS`)."""
EVENTS_COMM = msgspec.json.Decoder(_list_of(_union(XEventComm)))


class Event(msgspec.Struct, gc=False):
    """One entry of ``traceEvents``, any ``ph``; ``args`` stays undecoded (the generic path)."""

    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = _NO_RAW


GENERIC_EVENTS = msgspec.json.Decoder(list[Event])


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


TOP_FIELDS = tuple(f for f in KinetoFile.__struct_fields__ if f != "traceEvents")
"""The top-level keys the model keeps."""

_Top = msgspec.defstruct("_Top", [(f, Any, msgspec.UNSET) for f in TOP_FIELDS])


def _top_with(events: Any) -> msgspec.json.Decoder:
    struct = msgspec.defstruct(
        "_TopEvents", [("traceEvents", events, msgspec.field(default_factory=list))], bases=(_Top,)
    )
    return msgspec.json.Decoder(struct)


HEAD = _top_with(Any)
"""The keys before ``traceEvents`` (decoded from that text + ``"traceEvents":[]}``)."""
TAIL = _top_with(_list_of(_union(XEvent)))
"""The last events and the keys after ``traceEvents`` (``{"traceEvents":[`` + the rest)."""
TAIL_COMM = _top_with(_list_of(_union(XEventComm)))
TAIL_GENERIC = _top_with(list[Event])


def merge_top(head: Any, tail: Any) -> KinetoFile:
    """The top-level keys of the whole file from its head and tail (the later key wins)."""
    values = {}
    for f in TOP_FIELDS:
        v = getattr(tail, f)
        if v is msgspec.UNSET:
            v = getattr(head, f)
        values[f] = None if v is msgspec.UNSET else v
    return KinetoFile(traceEvents=[], **values)


class RawArgsEvent(Protocol):
    """An event whose ``args`` are still undecoded (:class:`Event`, :class:`MEvent`)."""

    args: msgspec.Raw


_DECODER = msgspec.json.Decoder(KinetoFile)
_BATCH_DECODERS: dict[type, msgspec.json.Decoder] = {}


def decode_args(events: Sequence[RawArgsEvent], struct: type, path: Path) -> list[Any]:
    """Decode the ``args`` of *events* into *struct* instances with one decoder call.

    Raises:
        InputError: an ``args`` value is not a JSON object.
    """
    return decode_args_joined(events, struct, path)[0]


def decode_args_joined(
    events: Sequence[RawArgsEvent], struct: type, path: Path
) -> tuple[list[Any], bytes, np.ndarray]:
    """:func:`decode_args`, also returning the joined ``args`` text and each event's offset in it
    (for :func:`comm_args`)."""
    if not events:
        return [], b"[]", np.zeros(0, dtype=np.int64)
    dec = _BATCH_DECODERS.get(struct)
    if dec is None:
        dec = _BATCH_DECODERS[struct] = msgspec.json.Decoder(_list_of(struct))
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
    for marker in COMM_MARKERS:
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


class ExactEvent(msgspec.Struct, gc=False):
    """An event's times as exact decimals (floats as :class:`~decimal.Decimal`, integers as
    ``int``, anything else as decoded: :func:`collectors.kineto.columns.decimal_us_to_ns`
    rejects it), and what decides whether it is an activity row."""

    ph: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None


class _ExactFile(msgspec.Struct):
    traceEvents: list[ExactEvent] | None = None


_EXACT_DECODER = msgspec.json.Decoder(_ExactFile, float_hook=Decimal)
_EXACT_LIST_DECODER = msgspec.json.Decoder(list[ExactEvent], float_hook=Decimal)


def exact_times(data: bytes, path: Path, *, array: bool = False) -> list[ExactEvent]:
    """Every event's ``ts`` and ``dur`` as exact decimals (a second, slower decode) from a whole
    file's text, or from a JSON array of events when *array*.

    Raises:
        InputError: the text does not decode (it did the first time: not expected).
    """
    try:
        if array:
            return _EXACT_LIST_DECODER.decode(data)
        return _EXACT_DECODER.decode(data).traceEvents or []
    except msgspec.DecodeError as e:
        raise InputError(f"event times do not decode ({e})", path=path) from None


def comm_scan(args: list[Any]) -> tuple[list[int], int]:
    """Positions of the :class:`XArgsComm` that have a key :data:`COMM_SCAN` counts, and how
    many such keys they have in all."""
    some = [
        i
        for i, a in enumerate(args)
        if a.collective_name
        or a.comms_id
        or a.in_msg_nelems
        or a.pg_id
        or a.pg_name
        or a.pg_description
        or a.pg_ranks
    ]
    found = 0
    for i in some:
        a = args[i]
        keys = (a.collective_name, a.comms_id, a.in_msg_nelems, a.pg_id, a.pg_name)
        found += sum(map(bool, (*keys, a.pg_description, a.pg_ranks)))
    return some, found


def has_comm_marker(a: Any) -> bool:
    """Whether an :class:`XArgsComm` has a :data:`COMM_MARKER_KEYS` key."""
    return bool(a.collective_name or a.comms_id or a.in_msg_nelems or a.pg_id or a.pg_name)


def _check_comm_fields() -> None:
    """The fields :func:`comm_scan` and :func:`has_comm_marker` name (spelled out: attribute
    access by name is several times faster) are those of the keys they stand for."""
    key = dict(zip(XArgsComm.__struct_fields__, XArgsComm.__struct_encode_fields__, strict=True))
    scan: tuple[str, ...] = ("collective_name", "comms_id", "in_msg_nelems", "pg_id", "pg_name")
    scan += ("pg_description", "pg_ranks")
    scanned = {k for k in COMM_KEYS if any(f'"{k}"'.encode().startswith(n) for n in COMM_SCAN)}
    if {key[f] for f in scan} != scanned or {key[f] for f in scan[:5]} != set(COMM_MARKER_KEYS):
        raise RuntimeError("comm_scan/has_comm_marker out of step with COMM_SCAN/COMM_MARKER_KEYS")


_check_comm_fields()
