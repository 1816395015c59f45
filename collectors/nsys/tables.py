"""The tables stage of the Nsight Systems reader: one SQLite export → its tables and run facts.

:func:`read_export` opens the export read-only (:class:`collectors.nsys.schema.NsysDb`) and
reads, each with its own module, the GPU activity (:mod:`collectors.nsys.gpu`), the CUDA API
calls and NVTX ranges (:mod:`collectors.nsys.host`), the memory counters
(:mod:`collectors.nsys.counters`) and the devices, processes and captured environment
(:mod:`collectors.nsys.devices`).  Rows of every process are still together (helper columns
``_gpid``, ``_short`` ...); :mod:`collectors.nsys.traces` splits them into traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from collectors.errors import InputError
from collectors.model import DeviceInfo
from collectors.nsys.counters import read_counters
from collectors.nsys.devices import (
    RANK_VARIABLES,
    WORLD_SIZE_VARIABLES,
    capture_host,
    devices,
    env_rank,
    launched_env,
    mpi_rank_threads,
    process_names,
    session_start_utc_ns,
)
from collectors.nsys.gpu import KERNEL, read_gpu_activity
from collectors.nsys.host import read_api_calls, read_nvtx_ranges, thread_names
from collectors.nsys.schema import NsysDb

Columns = dict[str, Any]
"""A table as column arrays (int64 numpy arrays, pandas Categoricals, object arrays)."""


@dataclass
class ExportTables:
    """What one export holds, before it is split by process and device."""

    path: Path
    gpu: Columns
    """Kernels, copies, memsets, synchronizations (:func:`read_gpu_activity`)."""
    host: Columns
    """CUDA runtime/driver calls (:func:`read_api_calls`)."""
    nvtx: Columns
    """NVTX ranges (:func:`read_nvtx_ranges`)."""
    counters: Columns
    """GPU memory counters (:func:`read_counters`)."""
    gpus: dict[int, DeviceInfo]
    procs: dict[int, tuple[int, str | None]]
    """``{globalPid: (pid, name)}``."""
    threads: dict[int, dict[int, str]]
    """``{globalPid: {tid: name}}``."""
    mpi_ranks: dict[int, int]
    """``{globalPid: rank}`` from ``MPI Rank N`` threads."""
    env_rank: int | None
    env_world: int | None
    """The rank and world size the launcher's environment records."""
    has_kernels: bool
    base: dict[str, Any]
    """``source_version``, ``hostname``, ``base_time_ns``, ``nsys_version``."""
    notes: list[str]
    """Rows rejected, names missing (:meth:`NsysDb.notes`)."""


def read_export(path: Path) -> ExportTables:
    """Every table and run fact of one export.

    Rows whose times cannot be true are rejected and counted (:attr:`ExportTables.notes`).

    Raises:
        InputError: unreadable, not SQLite, truncated, locked, corrupt, not an nsys export, a
            required table/column is missing (the message names it), or every row was
            rejected.
    """
    with NsysDb(path) as db, db.errors():
        gpu = read_gpu_activity(db)
        host = _as_columns(read_api_calls(db))
        nvtx = _as_columns(read_nvtx_ranges(db))
        counters = _as_columns(read_counters(db))
        gpus = devices(db)
        procs = process_names(db)
        threads = thread_names(db)
        env = launched_env(db, RANK_VARIABLES + WORLD_SIZE_VARIABLES)
        has_kernels = db.has(KERNEL) and bool(db.rows(f"SELECT 1 FROM {KERNEL} LIMIT 1"))
        base = {
            "source_version": db.schema_version,
            "hostname": capture_host(db),
            "base_time_ns": session_start_utc_ns(db),
            "nsys_version": db.product_version,
        }
        notes = db.notes()
        if db.rejected and not any(_rows(t) for t in (gpu, host, nvtx, counters)):
            raise InputError(f"no usable rows: {'; '.join(notes)}", path=path)
    env_r, env_world = env_rank(env)
    return ExportTables(
        path=path,
        gpu=gpu,
        host=host,
        nvtx=nvtx,
        counters=counters,
        gpus=gpus,
        procs=procs,
        threads=threads,
        mpi_ranks=mpi_rank_threads(threads),
        env_rank=env_r,
        env_world=env_world,
        has_kernels=has_kernels,
        base=base,
        notes=notes,
    )


def _rows(cols: Columns) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def _as_columns(table: pd.DataFrame | Columns) -> Columns:
    """Column arrays of a table, keeping categoricals as Categorical (no re-interning)."""
    if isinstance(table, dict):
        return table
    return {
        c: table[c].array
        if isinstance(table[c].dtype, pd.CategoricalDtype)
        else table[c].to_numpy()
        for c in table.columns
    }
