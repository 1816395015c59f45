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
from operator import attrgetter
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
    """Exact nanosecond times of events.

    Uses the decoded numbers (:func:`us_to_ns`) and falls back, once per file, to re-reading
    all times as exact decimals when floats are too large for the float path.
    """

    def __init__(self, events: list[Event], data: bytes, path: Path) -> None:
        self.events = events
        self.data = data
        self.path = path
        self._exact: tuple[list[Any], list[Any]] | None = None

    def ns(
        self, rows: list[Event], field: str, positions: Sequence[int] | None = None
    ) -> np.ndarray:
        """Times of *rows* (a sub-list of the events, at *positions*; found when omitted)."""
        values = list(map(attrgetter(field), rows))
        try:
            return us_to_ns(values, self.path, field)
        except InexactTimes:
            if self._exact is None:
                self._exact = exact_times(self.data, self.path)
            if positions is None:
                where = {id(e): i for i, e in enumerate(self.events)}
                positions = [where[id(e)] for e in rows]
            col = self._exact[0 if field == "ts" else 1]
            return decimal_us_to_ns([col[i] for i in positions])


def _build_trace(
    doc: KinetoFile, data: bytes, path: Path, *, rank: int | None, include_python: bool
) -> Trace:
    events: list[Event] = doc.traceEvents or []
    # activity rows (HTA): ph "X" with dur and cat, cat != "Trace" (inlined: hot loop)
    acts = [
        e
        for e in events
        if e.ph == "X"
        and e.dur is not None
        and e.ts is not None
        and e.cat.__class__ is str
        and e.cat != "Trace"
    ]
    metas = [
        e
        for e in events
        if e.ph == "M" and e.name in ("process_name", "thread_name", "process_labels")
    ]
    others = [e for e in events if e.ph in ("C", "i", "I") and e.ts is not None]
    clock = _Clock(events, data, path)
    counters = _counters(others, clock)
    if not acts and not len(counters["ts_ns"]):
        raise InputError("trace holds no events (no activity or counter events)", path=path)
    start = clock.ns(acts, "ts")
    end = start + clock.ns(acts, "dur")
    del clock, events, data

    args, joined, offsets = decode_args_joined(acts, ActivityArgs, path)
    cat = _categorical([e.cat for e in acts])
    cats = [str(c) for c in cat.categories]
    cat_codes = cat.codes
    stream = _ints([a.stream for a in args])

    def cat_mask(pred: Callable[[str], bool]) -> np.ndarray:
        return np.array([pred(c) for c in cats] + [False], dtype=bool)[cat_codes]

    is_gpu = ((stream != -1) & ~cat_mask(lambda c: c in HOST_CATS)) | cat_mask(
        lambda c: c == "cuda_sync"
    )
    is_gpu_user = cat_mask(lambda c: c == "gpu_user_annotation") & ~is_gpu
    is_host = ~is_gpu & ~is_gpu_user
    if not include_python:
        is_host &= ~cat_mask(lambda c: c == "python_function")
    comms = comm_args(acts, joined, offsets)
    del joined, offsets

    cols = _Activities(acts, args, start, end, stream, comms)
    gpu = _gpu_columns(cols, np.flatnonzero(is_gpu), path)
    host = _host_columns(cols, np.flatnonzero(is_host))
    annotations = _annotation_columns(cols, host, np.flatnonzero(is_gpu_user))
    meta = _meta(doc, path, rank, metas, set(cats))
    return make_trace(meta, gpu=gpu, host=host, annotations=annotations, counters=counters)


class _Activities:
    """Columns shared by every activity row, and row selection by positions."""

    def __init__(
        self,
        acts: list[Event],
        args: list[Any],
        start: np.ndarray,
        end: np.ndarray,
        stream: np.ndarray,
        comms: dict[int, dict[str, Any]],
    ) -> None:
        self.acts = acts
        self.args = args
        self.start = start
        self.end = end
        self.stream = stream
        self.comms = comms

    def rows(self, idx: np.ndarray) -> tuple[list[Event], list[Any]]:
        acts, args = self.acts, self.args
        return [acts[i] for i in idx.tolist()], [args[i] for i in idx.tolist()]

    def comm(self, idx: np.ndarray) -> list[dict[str, Any] | None]:
        if not self.comms:
            return [None] * len(idx)
        get = self.comms.get
        return [get(i) for i in idx.tolist()]


def _categorical(values: list[Any]) -> pd.Categorical:
    """Strings → categorical (interned names), categories in order of first appearance."""
    codes, uniques = pd.factorize(np.array(values, dtype=object))
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object).astype(str))


def _names(rows: list[Event]) -> pd.Categorical:
    return _categorical([e.name if e.name.__class__ is str else "" for e in rows])


def _ints(values: list[Any]) -> np.ndarray:
    """int64 column: integers kept (uint64 beyond int64 → -1), anything else → -1."""
    arr = np.array(values) if values else np.empty(0, dtype=np.int64)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    out = [v if v.__class__ is int and -(2**63) <= v < 2**63 else -1 for v in values]
    return np.array(out, dtype=np.int64)


def _floats(values: list[Any]) -> np.ndarray:
    """float64 column: numbers kept, anything else → NaN."""
    arr = np.array(values) if values else np.empty(0, dtype=np.float64)
    if arr.dtype.kind in "if":
        return arr.astype(np.float64, copy=False)
    out = [v if v.__class__ in (int, float) else np.nan for v in values]
    return np.array(out, dtype=np.float64)


def _triples(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) int64 columns from ``[x, y, z]`` lists; anything else → -1."""
    out = np.full((len(values), 3), -1, dtype=np.int64)
    has = [i for i, v in enumerate(values) if v.__class__ is list]
    if has:
        try:
            arr = np.array([values[i] for i in has])
        except ValueError:
            arr = np.empty(0)
        if arr.dtype.kind == "i" and arr.ndim == 2 and arr.shape[1] == 3:
            out[has] = arr
        else:
            for i in has:
                v = values[i]
                if len(v) == 3 and all(x.__class__ is int for x in v):
                    out[i] = v
    return out[:, 0], out[:, 1], out[:, 2]


def _external_ids(args: list[Any]) -> np.ndarray:
    """``External id`` (2022 traces: ``external id``), -1 when absent."""
    ext = _ints([a.external_id for a in args])
    if (ext == -1).any():
        old = _ints([a.external_id_2022 for a in args])
        ext = np.where(ext == -1, old, ext)
    return ext


def _gpu_columns(cols: _Activities, idx: np.ndarray, path: Path) -> dict[str, Any]:
    rows, a = cols.rows(idx)
    ga = decode_args(rows, GpuArgs, path)
    names = _names(rows)
    kinds = _categorical([GPU_KIND_BY_CAT.get(e.cat, "other") for e in rows])
    device = _ints(
        [g.device if g.device is not None else e.pid for g, e in zip(ga, rows, strict=True)]
    )
    grid = _triples([g.grid for g in ga])
    block = _triples([g.block for g in ga])
    return {
        "name": names,
        "kind": kinds,
        "start_ns": cols.start[idx],
        "end_ns": cols.end[idx],
        "device": device,
        "stream": cols.stream[idx],
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
        "copy_kind": _copy_kinds(names, kinds, ga),
        "est_achieved_occupancy": _floats([g.occupancy for g in ga]),
        "blocks_per_sm": _floats([g.blocks_per_sm for g in ga]),
        "warps_per_sm": _floats([g.warps_per_sm for g in ga]),
        "comm_args": cols.comm(idx),
    }


def _copy_kinds(names: pd.Categorical, kinds: pd.Categorical, ga: list[Any]) -> pd.Categorical:
    """Memcpy direction from the name (``Memcpy HtoD (Pinned -> Device)`` → ``HtoD``), else
    from ``args.kind`` (ROCm writes ``"HtoD"`` there); NaN for non-memcpy rows."""
    by_name = [m.group(1) if (m := COPY_KIND_RE.match(c)) else None for c in names.categories]
    out: list[str | None] = [None] * len(names)
    memcpy = np.flatnonzero(np.asarray(kinds) == "memcpy")
    codes = names.codes
    for i in memcpy.tolist():
        ck = by_name[codes[i]]
        if ck is None and ga[i].kind in COPY_KINDS:
            ck = ga[i].kind
        out[i] = ck
    return pd.Categorical(out)


def _host_columns(cols: _Activities, idx: np.ndarray) -> dict[str, Any]:
    rows, a = cols.rows(idx)
    names = _names(rows)
    # record_param_comms and nccl:* ranges are collectives even without metadata ({})
    is_coll = np.array(
        [c == "record_param_comms" or c.startswith("nccl:") for c in names.categories] + [False],
        dtype=bool,
    )[names.codes]
    comm = cols.comm(idx)
    for i in np.flatnonzero(is_coll).tolist():
        if comm[i] is None:
            comm[i] = {}
    return {
        "name": names,
        "cat": _categorical([e.cat for e in rows]),
        "start_ns": cols.start[idx],
        "end_ns": cols.end[idx],
        "pid": _ints([e.pid for e in rows]),
        "tid": _ints([e.tid for e in rows]),
        "correlation": _ints([x.correlation for x in a]),
        "external_id": _external_ids(a),
        "input_dims": _compact([x.input_dims for x in a]),
        "input_types": _compact([x.input_types for x in a]),
        "comm_args": comm,
    }


def _compact(raws: list[msgspec.Raw]) -> list[str | None]:
    """Compact JSON text of undecoded values (``[[2048, 2048]]`` → ``[[2048,2048]]``)."""
    keys = [bytes(r) for r in raws]
    table = {
        k: msgspec.json.encode(msgspec.json.decode(k)).decode() if k else None for k in set(keys)
    }
    return [table[k] for k in keys]


def _annotation_columns(
    cols: _Activities, host: dict[str, Any], gu_idx: np.ndarray
) -> dict[str, Any]:
    """Step (``ProfilerStep#N``), user (``user_annotation``) and ``gpu_user`` annotations."""
    names: pd.Categorical = host["name"]
    step_of_cat = np.array(
        [int(m.group(1)) if (m := STEP_RE.match(c)) else -1 for c in names.categories] + [-1],
        dtype=np.int64,
    )
    host_step = step_of_cat[names.codes]
    is_step = host_step >= 0
    is_user = (np.asarray(host["cat"]) == "user_annotation") & ~is_step
    pick = np.flatnonzero(is_step | is_user)

    gu_rows, _ = cols.rows(gu_idx)
    gu_names = [e.name if e.name.__class__ is str else "" for e in gu_rows]
    gu_step = [int(m.group(1)) if (m := STEP_RE.match(n)) else -1 for n in gu_names]
    gu_stream = np.where(
        cols.stream[gu_idx] != -1, cols.stream[gu_idx], _ints([e.tid for e in gu_rows])
    )
    kind = np.where(is_step[pick], "step", "user").tolist() + ["gpu_user"] * len(gu_rows)
    return {
        "name": np.asarray(names)[pick].tolist() + gu_names,
        "kind": kind,
        "start_ns": np.concatenate([host["start_ns"][pick], cols.start[gu_idx]]),
        "end_ns": np.concatenate([host["end_ns"][pick], cols.end[gu_idx]]),
        "step": np.concatenate([host_step[pick], np.array(gu_step, dtype=np.int64)]),
        "pid": np.concatenate([host["pid"][pick], _ints([e.pid for e in gu_rows])]),
        "tid": np.concatenate([host["tid"][pick], _ints([e.tid for e in gu_rows])]),
        "stream": np.concatenate([np.full(len(pick), -1, np.int64), gu_stream]),
    }


def _counters(others: list[Event], clock: _Clock) -> dict[str, Any]:
    """``ph == "C"`` counter series and the ``[memory]`` instant events of ``profile_memory``.

    A ``C`` event yields one row per numeric ``args`` entry, named after the event when it has
    one entry and ``"<event>.<key>"`` otherwise (device -1).  A ``[memory]`` event yields
    ``Total Allocated`` and ``Total Reserved`` rows on its ``Device Id`` (-1 = CPU).
    """
    names: list[str] = []
    at: list[Event] = []
    values: list[float] = []
    devices: list[int] = []
    for e in others:
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
            at.append(e)
            values.append(float(v))
            devices.append(-1)
    mem = [e for e in others if e.name == "[memory]" and e.ph in ("i", "I")]
    for e, m in zip(mem, decode_args(mem, MemoryArgs, clock.path), strict=True):
        dev = m.device_id if m.device_id.__class__ is int else -1
        for label, v in (
            ("Total Allocated", m.total_allocated),
            ("Total Reserved", m.total_reserved),
        ):
            if v.__class__ in (int, float):
                names.append(label)
                at.append(e)
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
    doc: KinetoFile, path: Path, rank: int | None, metas: list[Event], cats: set[str]
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
        devices=_devices(doc.deviceProperties, cats),
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
    rows = list({(e.name, e.pid, e.tid): e for e in metas}.values())
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
