"""Kineto / PyTorch-profiler trace reader: ``*.json`` / ``*.json.gz`` → one :class:`Trace` per rank.

The mapping is HTA-compatible (reference/metrics.md §1–2) and documented in full in
``docs/kineto-reader.md``.  In short:

* activity rows are the ``ph == "X"`` events that have ``dur`` and ``cat`` and ``cat != "Trace"``;
* a row whose ``args.stream`` is an integer is a device activity (``gpu`` table), unless its
  ``cat`` is a host category (Inductor's launcher ``cpu_op`` records the stream it launches on);
  ``cuda_sync`` rows without a stream (Event/Context Sync) are ``gpu`` rows on stream -1;
* ``gpu_user_annotation`` rows go to ``annotations`` (kind ``gpu_user``);
* every other row goes to ``host`` (``python_function`` only with ``include_python=True``);
  ``ProfilerStep#N`` rows are also ``step`` annotations, other ``user_annotation`` rows ``user``;
* times are exact integer nanoseconds (:func:`collectors.kineto_decode.us_to_ns`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.kineto_decode import (
    ActivityArgs,
    Event,
    GpuArgs,
    InexactTimes,
    KinetoFile,
    MemoryArgs,
    MetaArgs,
    comm_args,
    decimal_us_to_ns,
    decode,
    decode_args,
    decode_args_joined,
    exact_times,
    read_bytes,
    us_to_ns,
)
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace

ProgressFn = Callable[[int, int, str], None]

HOST_CATS = frozenset(
    {
        "cpu_op",
        "user_annotation",
        "python_function",
        "cuda_runtime",
        "cuda_driver",
        "Runtime",
        "Operator",
        "mtia_runtime",
        "cpu_instant_event",
    }
)
"""Categories that are host-side even when their ``args`` name a stream."""

GPU_KIND_BY_CAT = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_sync": "sync",
}
"""``gpu.kind`` by Kineto category; any other category with a stream is ``other``."""

STEP_RE = re.compile(r"^ProfilerStep#(\d+)")
COPY_KIND_RE = re.compile(r"^(?:hip)?Memcpy\s*(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)")
COPY_KINDS = frozenset({"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD", "AtoH", "HtoA"})

RANK_NAME_RES = (
    re.compile(r"(?:^|[^A-Za-z])rank[-_]?(\d+)", re.IGNORECASE),
    re.compile(r"\.(\d{1,5})\.json(?:\.gz)?$", re.IGNORECASE),
)
"""Rank from a file name: ``rank-3``, ``rank_3``, ``rank3`` (any case, anywhere in the name,
``rank`` not preceded by a letter), else ``NAME.3.json[.gz]`` (1–5 digits right before
``.json``, so that PIDs and timestamps elsewhere in torch's default names never match)."""


# --------------------------------------------------------------------------------------------
# public API


def read_kineto_files(paths: Sequence[Path], *, progress: ProgressFn | None = None) -> list[Trace]:
    """Read per-rank Kineto files; one Trace per file, sorted by rank.

    The rank of each file comes from ``distributedInfo.rank``, else from its name
    (:data:`RANK_NAME_RES`), else 0.  ``progress(done, total, label)`` is called after each file.

    Raises:
        InputError: a file is unreadable or not a trace, or two files claim the same rank.
    """
    unique: list[Path] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    traces: list[Trace] = []
    owner: dict[int, Trace] = {}
    for i, p in enumerate(unique):
        trace = read_kineto(p)
        other = owner.get(trace.rank)
        if other is not None:
            raise InputError(
                f"claims rank {trace.rank} ({trace.meta.rank_source}), as does "
                f"{other.meta.source_path} ({other.meta.rank_source}); pass one file per rank "
                "or name the files rank-N",
                path=p,
            )
        owner[trace.rank] = trace
        traces.append(trace)
        if progress is not None:
            progress(i + 1, len(unique), p.name)
    return sorted(traces, key=lambda t: t.rank)


def read_kineto(
    path: str | Path, *, rank: int | None = None, include_python: bool = False
) -> Trace:
    """Read one Kineto trace file (``.json`` or gzip-compressed) into a :class:`Trace`.

    *rank* overrides the rank found in the file; ``python_function`` events are skipped
    unless *include_python*.

    Raises:
        InputError: missing file, corrupt gzip, invalid JSON, not a Kineto trace, no events.
    """
    path = Path(path)
    data = read_bytes(path)
    doc = decode(data, path)
    return _build_trace(doc, data, path, rank=rank, include_python=include_python)


def rank_from_filename(name: str) -> int | None:
    """The rank encoded in a file name (:data:`RANK_NAME_RES`), or None."""
    for rx in RANK_NAME_RES:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------------------------
# building the tables


class _Clock:
    """Exact nanosecond times of events (by index into ``traceEvents``).

    Uses the decoded numbers (:func:`us_to_ns`) and falls back, once per file, to re-reading
    all times as exact decimals when floats are too large for the float path.
    """

    def __init__(self, events: list[Event], data: bytes, path: Path) -> None:
        self.events = events
        self.data = data
        self.path = path
        self._exact: tuple[list[Any], list[Any]] | None = None

    def ns(self, idx: Sequence[int], field: str) -> np.ndarray:
        ev = self.events
        values = [getattr(ev[i], field) for i in idx]
        try:
            return us_to_ns(values, self.path, field)
        except InexactTimes:
            if self._exact is None:
                self._exact = exact_times(self.data, self.path)
            col = self._exact[0 if field == "ts" else 1]
            return decimal_us_to_ns([col[i] for i in idx])


def _build_trace(
    doc: KinetoFile, data: bytes, path: Path, *, rank: int | None, include_python: bool
) -> Trace:
    events: list[Event] = doc.traceEvents or []
    acts_idx = [
        i
        for i, e in enumerate(events)
        if e.ph == "X"
        and e.dur is not None
        and e.ts is not None
        and e.cat.__class__ is str
        and e.cat != "Trace"
    ]
    acts = [events[i] for i in acts_idx]
    metas = [e for e in events if e.ph == "M"]
    others_idx = [i for i, e in enumerate(events) if e.ph in ("C", "i", "I") and e.ts is not None]
    clock = _Clock(events, data, path)

    counters = _counters(events, others_idx, clock)
    if not acts and not len(counters["ts_ns"]):
        raise InputError("trace holds no events (no activity or counter events)", path=path)
    start = clock.ns(acts_idx, "ts")
    end = start + clock.ns(acts_idx, "dur")
    del clock, events, data

    args, joined, offsets = decode_args_joined(acts, ActivityArgs, path)
    cats = [e.cat for e in acts]
    streams = [a.stream for a in args]
    is_gpu = [
        (s.__class__ is int and c not in HOST_CATS) or c == "cuda_sync"
        for s, c in zip(streams, cats, strict=True)
    ]
    gpu_idx = [i for i, g in enumerate(is_gpu) if g]
    gpu_user_idx = [
        i for i, (g, c) in enumerate(zip(is_gpu, cats, strict=True)) if c == "gpu_user_annotation"
    ]
    host_idx = [
        i
        for i, (g, c) in enumerate(zip(is_gpu, cats, strict=True))
        if not g and c != "gpu_user_annotation" and (include_python or c != "python_function")
    ]
    comms = comm_args(acts, joined, offsets)
    del joined, offsets

    times = (start, end)
    gpu = _gpu_columns(acts, args, gpu_idx, comms, times, path)
    host = _host_columns(acts, args, host_idx, comms, times)
    annotations = _annotation_columns(acts, args, host, gpu_user_idx, times)

    meta = _meta(doc, path, rank, metas, cats)
    return make_trace(meta, gpu=gpu, host=host, annotations=annotations, counters=counters)


def _ints(values: Sequence[Any]) -> np.ndarray:
    """int64 column: integers kept (uint64 beyond int64 → -1), anything else → -1."""
    out = [v if v.__class__ is int else -1 for v in values]
    try:
        return np.array(out, dtype=np.int64)
    except OverflowError:
        return np.array([v if -(2**63) <= v < 2**63 else -1 for v in out], dtype=np.int64)


def _floats(values: Sequence[Any]) -> np.ndarray:
    """float64 column: numbers kept, anything else → NaN."""
    out = [v if v.__class__ in (int, float) else np.nan for v in values]
    return np.array(out, dtype=np.float64)


def _take(times: tuple[np.ndarray, np.ndarray], idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    sel = np.asarray(idx, dtype=np.int64)
    return times[0][sel], times[1][sel]


def _triples(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) int64 columns from ``[x, y, z]`` lists; anything else → -1."""
    out = np.full((len(values), 3), -1, dtype=np.int64)
    for i, v in enumerate(values):
        if v.__class__ is list and len(v) == 3 and all(x.__class__ is int for x in v):
            out[i] = v
    return out[:, 0], out[:, 1], out[:, 2]


def _external_ids(args: Sequence[Any]) -> np.ndarray:
    return _ints([a.external_id if a.external_id is not None else a.external_id_2022 for a in args])


def _gpu_columns(
    acts: list[Event],
    args: list[Any],
    idx: list[int],
    comms: dict[int, dict[str, Any]],
    times: tuple[np.ndarray, np.ndarray],
    path: Path,
) -> dict[str, Any]:
    rows = [acts[i] for i in idx]
    a = [args[i] for i in idx]
    ga = decode_args(rows, GpuArgs, path)
    names = pd.Categorical([e.name if e.name.__class__ is str else "" for e in rows])
    start, end = _take(times, idx)
    kinds = [GPU_KIND_BY_CAT.get(e.cat, "other") for e in rows]
    device = _ints(
        [g.device if g.device is not None else e.pid for g, e in zip(ga, rows, strict=True)]
    )
    grid = _triples([g.grid for g in ga])
    block = _triples([g.block for g in ga])
    copy_kind = _copy_kinds(names, kinds, ga)
    return {
        "name": names,
        "kind": kinds,
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": _ints([x.stream for x in a]),
        "correlation": _ints([x.correlation for x in a]),
        "external_id": _external_ids(a),
        "grid_x": grid[0],
        "grid_y": grid[1],
        "grid_z": grid[2],
        "block_x": block[0],
        "block_y": block[1],
        "block_z": block[2],
        "registers_per_thread": _ints([g.registers for g in ga]),
        "shared_mem_bytes": _ints([g.shared_memory for g in ga]),
        "bytes": _ints([g.bytes for g in ga]),
        "copy_kind": copy_kind,
        "est_achieved_occupancy": _floats([g.occupancy for g in ga]),
        "blocks_per_sm": _floats([g.blocks_per_sm for g in ga]),
        "warps_per_sm": _floats([g.warps_per_sm for g in ga]),
        "comm_args": [comms.get(i) for i in idx],
    }


def _copy_kinds(names: pd.Categorical, kinds: list[str], ga: list[Any]) -> pd.Categorical:
    """Memcpy direction from the name (``Memcpy HtoD (Pinned -> Device)`` → ``HtoD``), else
    from ``args.kind`` (ROCm writes ``"HtoD"`` there); NaN for non-memcpy rows."""
    by_name = {}
    for cat in names.categories:
        m = COPY_KIND_RE.match(cat)
        by_name[cat] = m.group(1) if m else None
    out: list[str | None] = []
    for name, kind, g in zip(names, kinds, ga, strict=True):
        if kind != "memcpy":
            out.append(None)
            continue
        ck = by_name.get(name)
        if ck is None and g.kind in COPY_KINDS:
            ck = g.kind
        out.append(ck)
    return pd.Categorical(out)


def _host_columns(
    acts: list[Event],
    args: list[Any],
    idx: list[int],
    comms: dict[int, dict[str, Any]],
    times: tuple[np.ndarray, np.ndarray],
) -> dict[str, Any]:
    rows = [acts[i] for i in idx]
    a = [args[i] for i in idx]
    names = [e.name if e.name.__class__ is str else "" for e in rows]
    start, end = _take(times, idx)
    comm = []
    for i, name in zip(idx, names, strict=True):
        c = comms.get(i)
        if c is None and (name == "record_param_comms" or name.startswith("nccl:")):
            c = {}
        comm.append(c)
    return {
        "name": pd.Categorical(names),
        "cat": pd.Categorical([e.cat for e in rows]),
        "start_ns": start,
        "end_ns": end,
        "pid": _ints([e.pid for e in rows]),
        "tid": _ints([e.tid for e in rows]),
        "correlation": _ints([x.correlation for x in a]),
        "external_id": _external_ids(a),
        "input_dims": _compact([x.input_dims for x in a]),
        "input_types": _compact([x.input_types for x in a]),
        "comm_args": comm,
    }


def _compact(raws: Sequence[msgspec.Raw]) -> list[str | None]:
    """Compact JSON text of undecoded values (``[[2048, 2048]]`` → ``[[2048,2048]]``)."""
    keys = [bytes(r) for r in raws]
    table = {
        k: msgspec.json.encode(msgspec.json.decode(k)).decode() if k else None for k in set(keys)
    }
    return [table[k] for k in keys]


def _annotation_columns(
    acts: list[Event],
    args: list[Any],
    host: dict[str, Any],
    gpu_user_idx: list[int],
    times: tuple[np.ndarray, np.ndarray],
) -> dict[str, Any]:
    """Step (``ProfilerStep#N``), user (``user_annotation``) and ``gpu_user`` annotations."""
    names: pd.Categorical = host["name"]
    step_of_cat = np.array(
        [int(m.group(1)) if (m := STEP_RE.match(c)) else -1 for c in names.categories],
        dtype=np.int64,
    )
    codes = names.codes
    host_step = np.where(codes >= 0, step_of_cat[codes] if len(step_of_cat) else -1, -1)
    is_user = (np.asarray(host["cat"]) == "user_annotation") & (host_step < 0)
    is_step = host_step >= 0
    pick = np.flatnonzero(is_step | is_user)

    gu_rows = [acts[i] for i in gpu_user_idx]
    gu_args = [args[i] for i in gpu_user_idx]
    gu_names = [e.name if e.name.__class__ is str else "" for e in gu_rows]
    gu_start, gu_end = _take(times, gpu_user_idx)
    gu_step = [int(m.group(1)) if (m := STEP_RE.match(n)) else -1 for n in gu_names]
    gu_stream = [
        x.stream if x.stream.__class__ is int else e.tid
        for x, e in zip(gu_args, gu_rows, strict=True)
    ]

    n_host = len(pick)
    kind = np.where(is_step[pick], "step", "user").tolist() + ["gpu_user"] * len(gu_rows)
    return {
        "name": np.asarray(names)[pick].tolist() + gu_names,
        "kind": kind,
        "start_ns": np.concatenate([host["start_ns"][pick], gu_start]),
        "end_ns": np.concatenate([host["end_ns"][pick], gu_end]),
        "step": np.concatenate([host_step[pick], np.array(gu_step, dtype=np.int64)]),
        "pid": np.concatenate([host["pid"][pick], _ints([e.pid for e in gu_rows])]),
        "tid": np.concatenate([host["tid"][pick], _ints([e.tid for e in gu_rows])]),
        "stream": np.concatenate([np.full(n_host, -1, np.int64), _ints(gu_stream)]),
    }


def _counters(events: list[Event], idx: list[int], clock: _Clock) -> dict[str, Any]:
    """``ph == "C"`` counter series and the ``[memory]`` instant events of ``profile_memory``.

    A ``C`` event yields one row per numeric ``args`` entry, named after the event when it has
    one entry and ``"<event>.<key>"`` otherwise (device -1).  A ``[memory]`` event yields
    ``Total Allocated`` and ``Total Reserved`` rows on its ``Device Id`` (-1 = CPU).
    """
    names: list[str] = []
    at: list[int] = []
    values: list[float] = []
    devices: list[int] = []
    for i in idx:
        e = events[i]
        if e.ph != "C" or not e.args:
            continue
        try:
            a = msgspec.json.decode(e.args)
        except msgspec.DecodeError:
            continue
        if not isinstance(a, dict):
            continue
        nums = {k: v for k, v in a.items() if v.__class__ in (int, float)}
        base = e.name if e.name.__class__ is str else "counter"
        for k, v in nums.items():
            names.append(base if len(nums) == 1 else f"{base}.{k}")
            at.append(i)
            values.append(float(v))
            devices.append(-1)
    mem_idx = [i for i in idx if events[i].name == "[memory]" and events[i].ph in ("i", "I")]
    mem_args = decode_args([events[i] for i in mem_idx], MemoryArgs, clock.path)
    for i, m in zip(mem_idx, mem_args, strict=True):
        dev = m.device_id if m.device_id.__class__ is int else -1
        for label, v in (
            ("Total Allocated", m.total_allocated),
            ("Total Reserved", m.total_reserved),
        ):
            if v.__class__ in (int, float):
                names.append(label)
                at.append(i)
                values.append(float(v))
                devices.append(dev)
    return {
        "name": names,
        "ts_ns": clock.ns(at, "ts"),
        "value": np.array(values, dtype=np.float64),
        "device": np.array(devices, dtype=np.int64),
    }


# --------------------------------------------------------------------------------------------
# metadata


def _meta(
    doc: KinetoFile, path: Path, rank: int | None, metas: list[Event], cats: list[str]
) -> TraceMeta:
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None
    info_rank = _as_int(info.get("rank")) if info else None
    name_rank = rank_from_filename(path.name)
    if rank is not None:
        the_rank, source = int(rank), "argument"
    elif info_rank is not None:
        the_rank, source = info_rank, "distributedInfo"
    elif name_rank is not None:
        the_rank, source = name_rank, "filename"
    else:
        the_rank, source = 0, "default"

    extra: dict[str, Any] = {}
    if info is not None:
        extra["distributedInfo"] = info
    for key in (
        "traceName",
        "displayTimeUnit",
        "record_shapes",
        "trace_id",
        "cupti_version",
        "cuda_runtime_version",
        "cuda_driver_version",
    ):
        value = getattr(doc, key)
        if value is not None:
            extra[key] = value
    extra.update(_process_thread_names(metas, path))

    base = doc.baseTimeNanoseconds
    return TraceMeta(
        rank=the_rank,
        source_format="kineto",
        source_path=str(path),
        source_version=None if doc.schemaVersion is None else str(doc.schemaVersion),
        world_size=_as_int(info.get("world_size")) if info else None,
        rank_source=source,
        hostname=doc.host_name if isinstance(doc.host_name, str) else None,
        base_time_ns=base if base.__class__ is int else None,
        devices=_devices(doc.deviceProperties, set(cats)),
        extra=extra,
    )


def _as_int(v: Any) -> int | None:
    if v.__class__ is int:
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def _process_thread_names(metas: list[Event], path: Path) -> dict[str, Any]:
    """``process_names`` {pid: name}, ``process_labels`` {pid: labels}, ``thread_names``
    {pid: {tid: name}} from the ``M`` events (the last one wins)."""
    unique = {(e.name, e.pid, e.tid): e for e in metas}
    wanted = ("process_name", "thread_name", "process_labels")
    rows = [e for key, e in unique.items() if key[0] in wanted]
    procs: dict[Any, str] = {}
    labels: dict[Any, str] = {}
    threads: dict[Any, dict[Any, str]] = {}
    for e, a in zip(rows, decode_args(rows, MetaArgs, path), strict=True):
        if e.name == "process_name" and isinstance(a.name, str):
            procs[e.pid] = a.name
        elif e.name == "process_labels" and isinstance(a.labels, str):
            labels[e.pid] = a.labels
        elif e.name == "thread_name" and isinstance(a.name, str):
            threads.setdefault(e.pid, {})[e.tid] = a.name
    return {"process_names": procs, "process_labels": labels, "thread_names": threads}


_DEVICE_FIELDS = {
    "computeMajor": "compute_major",
    "computeMinor": "compute_minor",
    "numSms": "sm_count",
    "totalGlobalMem": "total_memory_bytes",
    "maxThreadsPerBlock": "max_threads_per_block",
    "maxThreadsPerMultiprocessor": "max_threads_per_sm",
    "regsPerBlock": "regs_per_block",
    "regsPerMultiprocessor": "regs_per_sm",
    "warpSize": "warp_size",
    "sharedMemPerBlock": "smem_per_block_bytes",
    "sharedMemPerBlockOptin": "smem_per_block_optin_bytes",
    "sharedMemPerMultiprocessor": "smem_per_sm_bytes",
    "maxSharedMemoryPerMultiProcessor": "smem_per_sm_bytes",
    "l2CacheSize": "l2_cache_bytes",
    "clockRate": "clock_rate_khz",
}
"""Kineto ``deviceProperties`` key → :class:`DeviceInfo` field (ROCm spells the per-SM
shared memory ``maxSharedMemoryPerMultiProcessor``)."""

_AMD_RE = re.compile(r"AMD|Radeon|Instinct|\bMI\d{3}", re.IGNORECASE)
_MTIA_RE = re.compile(r"MTIA|ARTEMIS|FREYA", re.IGNORECASE)


def _vendor(name: str | None, cats: set[str]) -> str | None:
    """``AMD`` / ``MTIA`` / ``NVIDIA`` from the device name, else from the trace's categories."""
    if name and _AMD_RE.search(name):
        return "AMD"
    if (name and _MTIA_RE.search(name)) or any(c.startswith("mtia") for c in cats):
        return "MTIA"
    if name and re.search(r"NVIDIA|Tesla|Quadro|GeForce|RTX", name):
        return "NVIDIA"
    if cats & {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"}:
        return "NVIDIA"
    return None


def _devices(props: Any, cats: set[str]) -> list[DeviceInfo]:
    if not isinstance(props, list):
        return []
    out = []
    for p in props:
        if not isinstance(p, dict) or _as_int(p.get("id")) is None:
            continue
        name = p.get("name") if isinstance(p.get("name"), str) else None
        fields = {f: p[k] for k, f in _DEVICE_FIELDS.items() if k in p and p[k].__class__ is int}
        out.append(DeviceInfo(id=_as_int(p["id"]), name=name, vendor=_vendor(name, cats), **fields))
    return out
