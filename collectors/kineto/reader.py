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
* times are exact integer nanoseconds (:func:`collectors.kineto.decode.us_to_ns`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.kineto import parallel as kineto_parallel
from collectors.kineto.decode import (
    KinetoFile,
    MetaArgs,
    MEvent,
    decode_args,
)
from collectors.kineto.rows import KINDS, Rows
from collectors.kineto.stream import Chunk, Fallback, stream_chunks, whole_chunks
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace

ProgressFn = Callable[[int, int, str], None]

STEP_RE = re.compile(r"^ProfilerStep#(\d+)")

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
    path: str | Path,
    *,
    rank: int | None = None,
    include_python: bool = False,
    parallel: bool | None = None,
) -> Trace:
    """Read one Kineto trace file (``.json`` or gzip-compressed) into a :class:`Trace`.

    *rank* overrides the rank found in the file; ``python_function`` events are skipped
    unless *include_python*.  *parallel*: read with a helper process
    (:mod:`collectors.kineto.parallel`; None: when that pays off); the Trace is the same.

    Raises:
        InputError: missing file, corrupt gzip, invalid JSON, not a Kineto trace, no events.
    """
    path = Path(path)
    if parallel or (parallel is None and kineto_parallel.wanted(path)):
        try:
            rows, top = kineto_parallel.read_rows(path, include_python)
        except Fallback:
            pass  # read serially: it reports what is wrong
        else:
            return finish(rows, top, rank)
    try:
        return _read(stream_chunks(path), path, rank, include_python, streaming=True)
    except Fallback:
        return _read(whole_chunks(path), path, rank, include_python, streaming=False)


def rank_from_filename(name: str) -> int | None:
    """The rank encoded in a file name (:data:`RANK_NAME_RES`), or None."""
    for rx in RANK_NAME_RES:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------------------------
# building the tables


def _read(
    chunks: Iterator[Chunk | None],
    path: Path,
    rank: int | None,
    include_python: bool,
    *,
    streaming: bool,
) -> Trace:
    """Tables from *chunks*; when *streaming*, an InputError means: read the file whole."""
    rows = Rows(path, include_python)
    top: KinetoFile | None = None
    try:
        for index, chunk in enumerate(chunks):
            assert chunk is not None  # every chunk is decoded (no owned= filter)
            rows.add(chunk, index)
            if chunk.top is not None:
                top = chunk.top
            del chunk  # not alive while the next one decodes
    except InputError:
        if streaming:
            raise Fallback from None
        raise
    assert top is not None
    return finish(rows, top, rank)


def finish(rows: Rows, top: KinetoFile, rank: int | None) -> Trace:
    """The Trace of all of a file's *rows* and its top-level keys *top*.

    Raises:
        InputError: no activity or counter rows; malformed ``args`` of a metadata event.
    """
    parts = rows.ordered("counters") + rows.ordered("memory")
    counters = {
        "name": [n for p in parts for n in p[0]],
        "ts_ns": np.concatenate([p[1] for p in parts]) if parts else _EMPTY_INTS,
        "value": np.array([v for p in parts for v in p[2]], dtype=np.float64),
        "device": np.array([d for p in parts for d in p[3]], dtype=np.int64),
    }
    if not rows.n_acts and not parts:
        raise InputError("trace holds no events (no activity or counter events)", path=rows.path)
    names = np.array(list(rows.names), dtype=object)
    cats = np.array(list(rows.cats), dtype=object)
    gpu = _concat(rows.ordered("gpu") or [rows.empty_part("gpu")])
    rows.gpu.clear()
    gpu["name"] = _categorical(gpu["name"], names)
    gpu["kind"] = _categorical(gpu["kind"], np.array(KINDS, dtype=object))
    gpu["copy_kind"] = pd.Categorical(gpu["copy_kind"])
    host = _concat(rows.ordered("host") or [rows.empty_part("host")])
    rows.host.clear()
    host["name"] = _categorical(host["name"], names)
    host["cat"] = _categorical(host["cat"], cats)
    _mark_collectives(host)
    gpu_user = _concat(rows.ordered("gpu_user") or [rows.empty_part("gpu_user")])
    gpu_user["name"] = names[gpu_user["name"]].tolist()
    annotations = _annotation_columns(host, gpu_user)
    last: dict[Any, MEvent] = {}
    for chunk_metas in rows.ordered("metas"):
        last.update(chunk_metas)
    meta = _meta(top, rows.path, rank, list(last.values()), set(rows.cats))
    return make_trace(meta, gpu=gpu, host=host, annotations=annotations, counters=counters)


_EMPTY_INTS = np.zeros(0, dtype=np.int64)


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's columns from its chunks' (numpy arrays or lists)."""
    out: dict[str, Any] = {}
    for key, first in parts[0].items():
        if isinstance(first, np.ndarray):
            out[key] = np.concatenate([p[key] for p in parts]) if len(parts) > 1 else first
        else:
            out[key] = list(chain.from_iterable(p[key] for p in parts))
    return out


def _categorical(ids: np.ndarray, strings: np.ndarray) -> pd.Categorical:
    """Categorical of ``strings[ids]``, categories in order of first appearance (interned)."""
    codes, uniques = pd.factorize(ids)
    return pd.Categorical.from_codes(
        codes, categories=pd.Index(strings[uniques], dtype=object).astype(str)
    )


def _mark_collectives(host: dict[str, Any]) -> None:
    """``record_param_comms`` and ``nccl:*`` rows are collectives even without metadata: ``{}``."""
    names: pd.Categorical = host["name"]
    is_coll = np.array(
        [c == "record_param_comms" or c.startswith("nccl:") for c in names.categories] + [False],
        dtype=bool,
    )[names.codes]
    comm = host["comm_args"]
    for i in np.flatnonzero(is_coll).tolist():
        if comm[i] is None:
            comm[i] = {}


def _annotation_columns(host: dict[str, Any], gpu_user: dict[str, Any]) -> dict[str, Any]:
    """Step (``ProfilerStep#N``), user (``user_annotation``) and ``gpu_user`` annotations."""
    names: pd.Categorical = host["name"]
    step_of_cat = np.array(
        [int(m.group(1)) if (m := STEP_RE.match(c)) else -1 for c in names.categories] + [-1],
        dtype=np.int64,
    )
    host_step = step_of_cat[names.codes]
    is_step = host_step >= 0
    cats: pd.Categorical = host["cat"]
    user_cat = np.append(np.asarray(cats.categories) == "user_annotation", False)
    is_user = user_cat[cats.codes] & ~is_step
    pick = np.flatnonzero(is_step | is_user)

    gu_names: list[str] = gpu_user["name"]
    gu_step = [int(m.group(1)) if (m := STEP_RE.match(n)) else -1 for n in gu_names]
    kind = np.where(is_step[pick], "step", "user").tolist() + ["gpu_user"] * len(gu_names)
    return {
        "name": np.asarray(names.categories, dtype=object)[names.codes[pick]].tolist() + gu_names,
        "kind": kind,
        "start_ns": np.concatenate([host["start_ns"][pick], gpu_user["start_ns"]]),
        "end_ns": np.concatenate([host["end_ns"][pick], gpu_user["end_ns"]]),
        "step": np.concatenate([host_step[pick], np.array(gu_step, dtype=np.int64)]),
        "pid": np.concatenate([host["pid"][pick], gpu_user["pid"]]),
        "tid": np.concatenate([host["tid"][pick], gpu_user["tid"]]),
        "stream": np.concatenate([np.full(len(pick), -1, np.int64), gpu_user["stream"]]),
    }


# --------------------------------------------------------------------------------------------
# metadata


def _meta(
    doc: KinetoFile, path: Path, rank: int | None, metas: list[MEvent], cats: set[str]
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


def _process_thread_names(rows: list[MEvent], path: Path) -> dict[str, Any]:
    """``process_names`` {pid: name}, ``process_labels`` {pid: labels}, ``thread_names``
    {pid: {tid: name}} from the last ``M`` event of each (name, pid, tid)."""
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
