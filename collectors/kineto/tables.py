"""The tables stage of the Kineto reader: a file's rows (:class:`RowParts`) → one Trace.

The mapping is HTA-compatible (reference/metrics.md §1–2) and documented in full in
``docs/kineto-reader.md``.  In short:

* activity rows are the ``ph == "X"`` events that have ``dur`` and ``cat`` and ``cat != "Trace"``;
* a row whose ``args.stream`` is an integer is a device activity (``gpu`` table), unless its
  ``cat`` is a host category (Inductor's launcher ``cpu_op`` records the stream it launches on);
  ``cuda_sync`` rows without a stream (Event/Context Sync) are ``gpu`` rows on stream -1;
* ``gpu_user_annotation`` rows go to ``annotations`` (kind ``gpu_user``);
* every other row goes to ``host`` (``python_function`` only with ``include_python=True``);
  ``ProfilerStep#N`` rows are also ``step`` annotations, other ``user_annotation`` rows ``user``;
* times are exact integer nanoseconds (:func:`collectors.kineto.columns.us_to_ns`).

The rows are split into tables chunk by chunk (:mod:`collectors.kineto.rows`); here each table's
parts are concatenated, names become categoricals, annotations are derived from the host rows,
and the metadata (rank, devices, process names) is read from the file's top-level keys.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from collectors.heap import release_freed_memory
from collectors.kineto.rows import RowParts
from collectors.model import GPU_KINDS, DeviceInfo, Trace, TraceMeta, make_trace

STEP_RE = re.compile(r"^ProfilerStep#(\d+)")
MAX_STEP_DIGITS = 18
"""A ``ProfilerStep#N`` with more digits is not a step (N would not fit int64): noted."""

RANK_NAME_RES = (
    re.compile(r"(?:^|[^A-Za-z])rank[-_]?(\d+)", re.IGNORECASE),
    re.compile(r"\.(\d{1,5})\.json(?:\.gz)?$", re.IGNORECASE),
)
"""Rank from a file name: ``rank-3``, ``rank_3``, ``rank3`` (any case, anywhere in the name,
``rank`` not preceded by a letter), else ``NAME.3.json[.gz]`` (1–5 digits right before
``.json``, so that PIDs and timestamps elsewhere in torch's default names never match)."""


def rank_from_filename(name: str) -> int | None:
    """The rank encoded in a file name (:data:`RANK_NAME_RES`), or None."""
    for rx in RANK_NAME_RES:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------------------------
# building the tables


def build_trace(parts: RowParts, rank: int | None) -> Trace:
    """The Trace of a file's rows (*parts*, whose part lists it consumes); *rank* overrides the
    rank the file records."""
    counters = {
        "name": [n for p in parts.counters for n in p[0]],
        "ts_ns": np.concatenate([p[1] for p in parts.counters]) if parts.counters else _EMPTY_INTS,
        "value": np.array([v for p in parts.counters for v in p[2]], dtype=np.float64),
        "device": np.array([d for p in parts.counters for d in p[3]], dtype=np.int64),
    }
    names = np.array(parts.names, dtype=object)
    cats = np.array(parts.cats, dtype=object)
    gpu = _concat(parts.gpu)
    parts.gpu.clear()  # not alive while the next table is built
    gpu["name"] = _categorical(gpu["name"], names)
    gpu["kind"] = _categorical(gpu["kind"], np.array(GPU_KINDS, dtype=object))
    gpu["copy_kind"] = pd.Categorical(gpu["copy_kind"])
    host = _concat(parts.host)
    parts.host.clear()
    host["name"] = _categorical(host["name"], names)
    host["cat"] = _categorical(host["cat"], cats)
    host["launch_kernel"] = _categorical(host["launch_kernel"], names, missing=True)
    _mark_collectives(host)
    gpu_user = _concat(parts.gpu_user)
    gpu_user["name"] = names[gpu_user["name"]].tolist()
    notes = list(parts.notes)
    annotations = _annotation_columns(host, gpu_user, notes)
    meta = _meta(parts, rank, notes)
    release_freed_memory()  # the parts' pages, once: per column they were faulted in again
    return make_trace(
        meta, gpu=gpu, host=host, annotations=annotations, counters=counters, owned=True
    )


_EMPTY_INTS = np.zeros(0, dtype=np.int64)


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's columns from its chunks' (numpy arrays, or lists or object arrays of Python
    values), which it consumes column by column (each column's pieces are freed once it is
    whole, for the next column to reuse; their pages go back to the system once every table
    is built, :func:`release_freed_memory`).  A column of lists only stays a list; one with an
    object array (the native path's) becomes one object array."""
    out: dict[str, Any] = {}
    for key, first in list(parts[0].items()):
        pieces = [p.pop(key) for p in parts]
        if all(isinstance(x, list) for x in pieces):
            out[key] = list(chain.from_iterable(pieces))
        elif all(isinstance(x, np.ndarray) and x.dtype != object for x in pieces):
            out[key] = np.concatenate(pieces) if len(pieces) > 1 else first
        else:
            out[key] = _objects(pieces)
        del first, pieces
    return out


def _objects(pieces: list[Any]) -> np.ndarray:
    """One object array of the values of *pieces* (object arrays or lists), each value as it is
    (strings, None, dicts: none is a sequence numpy would unpack)."""
    out = np.empty(sum(map(len, pieces)), dtype=object)
    at = 0
    for x in pieces:
        out[at : at + len(x)] = x
        at += len(x)
    return out


def _categorical(ids: np.ndarray, strings: np.ndarray, *, missing: bool = False) -> pd.Categorical:
    """Categorical of ``strings[ids]``, categories in order of first appearance (interned);
    with *missing*, an id of -1 is a missing value."""
    codes, uniques = pd.factorize(ids)
    if missing and (uniques < 0).any():
        gone = int(np.flatnonzero(uniques < 0)[0])
        codes = np.where(codes == gone, -1, codes - (codes > gone))
        uniques = np.delete(uniques, gone)
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


def _step_number(name: str, huge: list[str]) -> int:
    """N of ``ProfilerStep#N``, else -1; an N beyond :data:`MAX_STEP_DIGITS` is -1 and *name*
    goes to *huge*."""
    m = STEP_RE.match(name)
    if not m:
        return -1
    if len(m.group(1)) > MAX_STEP_DIGITS:
        huge.append(name)
        return -1
    return int(m.group(1))


def _annotation_columns(
    host: dict[str, Any], gpu_user: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """Step (``ProfilerStep#N``), user (``user_annotation``) and ``gpu_user`` annotations."""
    names: pd.Categorical = host["name"]
    huge: list[str] = []
    step_of_cat = np.array([_step_number(c, huge) for c in names.categories] + [-1], dtype=np.int64)
    host_step = step_of_cat[names.codes]
    is_step = host_step >= 0
    cats: pd.Categorical = host["cat"]
    user_cat = np.append(np.asarray(cats.categories) == "user_annotation", False)
    is_user = user_cat[cats.codes] & ~is_step
    pick = np.flatnonzero(is_step | is_user)

    gu_names: list[str] = gpu_user["name"]
    gu_step = [_step_number(n, huge) for n in gu_names]
    if huge:
        notes.append(
            f"{len(huge)} ProfilerStep names with a step number beyond {MAX_STEP_DIGITS} digits "
            "are not steps"
        )
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


def _meta(parts: RowParts, rank: int | None, notes: list[str]) -> TraceMeta:
    doc, path = parts.top, parts.path
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None
    info_rank = _as_count(info.get("rank"), MAX_RANK) if info else None
    if info and info.get("rank") is not None and info_rank is None:
        notes.append(f"distributedInfo.rank {_short(info.get('rank'))} is not a rank: ignored")
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
    extra.update(parts.processes)
    if notes:
        extra["notes"] = notes

    base = doc.baseTimeNanoseconds
    return TraceMeta(
        rank=the_rank,
        source_format="kineto",
        source_path=str(path),
        source_version=None if doc.schemaVersion is None else str(doc.schemaVersion),
        world_size=_world_size(info),
        rank_source=source,
        hostname=doc.host_name if isinstance(doc.host_name, str) else None,
        base_time_ns=base if base.__class__ is int and 0 <= base < 2**63 else None,
        devices=_devices(doc.deviceProperties, set(parts.cats)),
        extra=extra,
    )


MAX_RANK = 2**31 - 1
"""Ranks, world sizes and device ids above this are not believed (ignored)."""


def _as_count(v: Any, high: int) -> int | None:
    """*v* (an integer, or its decimal text) when it lies in [0, *high*], else None."""
    if v.__class__ is int:
        return v if 0 <= v <= high else None
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= 19:
        x = int(v)
        return x if x <= high else None
    return None


def _world_size(info: dict[str, Any] | None) -> int | None:
    n = _as_count(info.get("world_size"), MAX_RANK + 1) if info else None
    return n if n else None


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


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
        dev_id = _as_count(p.get("id"), MAX_RANK) if isinstance(p, dict) else None
        if dev_id is None:
            continue
        name = p.get("name") if isinstance(p.get("name"), str) else None
        fields = {
            f: p[k]
            for k, f in _DEVICE_FIELDS.items()
            if k in p and p[k].__class__ is int and (k != "computeMinor") <= p[k] < 2**63
        }
        out.append(DeviceInfo(id=dev_id, name=name, vendor=_vendor(name, cats), **fields))
    return out
