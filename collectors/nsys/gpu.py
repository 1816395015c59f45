"""GPU activity of an nsys export → rows of the model's ``gpu`` table (all processes at once).

Sources (each optional: nsys creates a table only when that activity was captured):

============================================  ==========  ====================================
table                                         ``kind``    ``name``
============================================  ==========  ====================================
``CUPTI_ACTIVITY_KIND_KERNEL``                kernel      ``demangledName`` via ``StringIds``
                                                          (``shortName`` when its string is
                                                          missing)
``CUPTI_ACTIVITY_KIND_MEMCPY``                memcpy      ``[CUDA memcpy <copyKind label>]``
``CUPTI_ACTIVITY_KIND_MEMSET``                memset      ``[CUDA memset]``
``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION``       sync        Kineto's name of the ``syncType``
                                                          (``Stream Sync``, ``Event Sync``...)
============================================  ==========  ====================================

Memcpy labels come from the export's ``ENUM_CUDA_MEMCPY_OPER`` where present, else from the
built-in table below (the 2022.2 export has no ENUM tables).  The result carries two columns
that are not part of the model, ``_gpid`` (``globalPid``) and ``_short`` (kernel
``shortName``); the caller splits by process and drops them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from collectors.arrays import sorted_unique
from collectors.nsys.schema import NsysDb
from collectors.nsys.strings import MISSING, categorical, concat_categoricals, lookup

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"

COMMON = ("start", "end", "deviceId", "streamId")
"""Columns every activity table must have (the reader raises InputError naming a missing one)."""

MEMCPY_KIND_CODES = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "Unified HtoD",
    12: "Unified DtoH",
    13: "Unified DtoD",
}
"""``copyKind`` (ENUM_CUDA_MEMCPY_OPER) → the model's ``copy_kind`` code (Kineto's spelling)."""

MEMCPY_KIND_LABELS = {
    0: "Unknown",
    1: "Host-to-Device",
    2: "Device-to-Host",
    3: "Host-to-Array",
    4: "Array-to-Host",
    5: "Array-to-Array",
    6: "Array-to-Device",
    7: "Device-to-Array",
    8: "Device-to-Device",
    9: "Host-to-Host",
    10: "Peer-to-Peer",
    11: "Unified Host-to-Device",
    12: "Unified Device-to-Host",
    13: "Unified Device-to-Device",
}
"""Fallback ENUM_CUDA_MEMCPY_OPER labels (as in the 2023–2025 exports)."""

SYNC_NAMES = {
    0: "Unknown Sync",
    1: "Event Sync",
    2: "Stream Wait Event",
    3: "Stream Sync",
    4: "Context Sync",
}
"""``syncType`` (ENUM_CUPTI_SYNC_TYPE) → row name: the names Kineto gives the same CUPTI
records, so HTA's name rules (``.*Sync`` is not compute, ``Event Sync`` / ``Context Sync`` count
in the window filter) treat nsys and Kineto rows alike.  Unlisted codes → ``Unknown Sync``."""

NO_DEVICE = "deviceId NULL, negative or not an integer"
COUNT_COLUMNS = (
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "bytes",
)
"""Sizes and counts: a negative value (or a cell that is not an integer) is unknown, -1."""

NO_STREAM = 0xFFFFFFFF
"""CUPTI's invalid-id value (a context sync has no stream) → the model's ``-1``."""

_COMMON_MAP = {
    "start_ns": "start",
    "end_ns": "end",
    "device": "deviceId",
    "stream": "streamId",
    "correlation": "correlationId",
    "_gpid": "globalPid",
}


Columns = dict[str, Any]
"""One table's rows as column arrays (int64 numpy arrays and pandas Categoricals)."""

CATEGORICAL = ("name", "kind", "copy_kind", "_short")


def _checked(db: NsysDb, table: str, cols: Columns) -> Columns:
    """*cols* without the rows whose times or device are unusable (counted by *db*), and with
    negative sizes and counts unknown (-1)."""
    cols = db.valid_times(table, cols, more={NO_DEVICE: cols["device"] < 0})
    for c in COUNT_COLUMNS:
        if c in cols:
            cols[c] = np.where(cols[c] < 0, -1, cols[c])
    return cols


def _rows(cols: Columns, kind: str, name: pd.Categorical[Any]) -> Columns:
    n = len(cols["start_ns"])
    stream = cols["stream"]
    cols["stream"] = np.where(stream == NO_STREAM, -1, stream)
    cols["name"] = name
    cols["kind"] = pd.Categorical.from_codes(
        np.zeros(n, dtype=np.int8), categories=pd.Index([kind])
    )
    return cols


def read_kernels(db: NsysDb) -> Columns:
    """Kernel rows: launch configuration, shared memory (static + dynamic = total)."""
    if not db.has(KERNEL):
        return {}
    db.require(KERNEL, (*COMMON, "demangledName"))
    cols = db.int_columns(
        KERNEL,
        {
            **_COMMON_MAP,
            "_demangled": "demangledName",
            "_short_id": "shortName",
            "grid_x": "gridX",
            "grid_y": "gridY",
            "grid_z": "gridZ",
            "block_x": "blockX",
            "block_y": "blockY",
            "block_z": "blockZ",
            "registers_per_thread": "registersPerThread",
            "static_smem_bytes": "staticSharedMemory",
            "dynamic_smem_bytes": "dynamicSharedMemory",
        },
    )
    cols = _checked(db, KERNEL, cols)
    name_ids = cols.pop("_demangled")
    short_ids = cols.pop("_short_id")
    strings = lookup(db, np.concatenate([name_ids, short_ids]))
    # the demangled name; the short name where the demangled string is missing
    known = np.fromiter(strings, dtype=np.int64, count=len(strings))
    best = np.where(np.isin(name_ids, known) | ~np.isin(short_ids, known), name_ids, short_ids)
    gone = sorted_unique(best[~np.isin(best, known)])
    if gone.size:  # neither string exists: the kernel is named by its demangledName id
        strings = {**strings, **{int(i): MISSING.format(int(i)) for i in gone}}
        db.missing_strings["kernel names"] = len(gone)
    static = cols["static_smem_bytes"]
    dynamic = cols["dynamic_smem_bytes"]
    cols["shared_mem_bytes"] = np.where((static >= 0) & (dynamic >= 0), static + dynamic, -1)
    out = _rows(cols, "kernel", categorical(db, best, transform=strings))
    out["_short"] = categorical(db, short_ids, transform=strings)
    return out


def read_memcpy(db: NsysDb) -> Columns:
    """Memcpy rows: ``bytes``; ``copy_kind`` code and a ``[CUDA memcpy <label>]`` name."""
    if not db.has(MEMCPY):
        return {}
    db.require(MEMCPY, (*COMMON, "bytes", "copyKind"))
    cols = db.int_columns(MEMCPY, {**_COMMON_MAP, "bytes": "bytes", "_kind": "copyKind"})
    cols = _checked(db, MEMCPY, cols)
    kinds = cols.pop("_kind")
    labels = db.enum_labels("ENUM_CUDA_MEMCPY_OPER", MEMCPY_KIND_LABELS)
    present = {int(k) for k in sorted_unique(kinds)}
    names = {k: f"[CUDA memcpy {labels.get(k, f'kind {k}')}]" for k in present}
    codes = {k: MEMCPY_KIND_CODES.get(k, labels.get(k, f"kind {k}")) for k in present}
    out = _rows(cols, "memcpy", categorical(db, kinds, transform=names))
    out["copy_kind"] = categorical(db, kinds, transform=codes)
    return out


def read_memset(db: NsysDb) -> Columns:
    """Memset rows (``bytes`` set), named ``[CUDA memset]`` as in ``nsys stats``."""
    if not db.has(MEMSET):
        return {}
    db.require(MEMSET, (*COMMON, "bytes"))
    cols = db.int_columns(MEMSET, {**_COMMON_MAP, "bytes": "bytes"})
    cols = _checked(db, MEMSET, cols)
    n = len(cols["start_ns"])
    name = pd.Categorical.from_codes(
        np.zeros(n, dtype=np.int8), categories=pd.Index(["[CUDA memset]"])
    )
    return _rows(cols, "memset", name)


def read_sync(db: NsysDb) -> Columns:
    """Synchronization rows, named by their ``syncType`` (Kineto's names)."""
    if not db.has(SYNC):
        return {}
    db.require(SYNC, ("start", "end", "deviceId", "streamId"))
    cols = db.int_columns(SYNC, {**_COMMON_MAP, "_type": "syncType"})
    cols = _checked(db, SYNC, cols)
    types = cols.pop("_type")
    names = {int(t): SYNC_NAMES.get(int(t), SYNC_NAMES[0]) for t in sorted_unique(types)}
    return _rows(cols, "sync", categorical(db, types, transform=names))


def read_gpu_activity(db: NsysDb) -> Columns:
    """All GPU rows of the export: kernels, memcpy, memset, sync, each in table (rowid) order.

    Columns are concatenated as arrays (one copy), a column a table lacks filled with ``-1`` /
    missing.  Empty dict when the export has no GPU activity table.
    """
    parts = [p for p in (read_kernels(db), read_memcpy(db), read_memset(db), read_sync(db)) if p]
    if not parts:
        return {}
    keys = list(dict.fromkeys(k for p in parts for k in p))
    sizes = [len(p["start_ns"]) for p in parts]
    out: dict[str, Any] = {}
    for k in keys:
        if k in CATEGORICAL:
            out[k] = concat_categoricals([p.get(k, n) for p, n in zip(parts, sizes, strict=True)])
        elif len(parts) == 1:
            out[k] = parts[0][k]
        else:
            out[k] = np.concatenate(
                [
                    p[k] if k in p else np.full(n, -1, np.int64)
                    for p, n in zip(parts, sizes, strict=True)
                ]
            )
    return out
