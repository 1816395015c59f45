"""Small hand-made Nsight Systems exports with the real table layout, for reader tests.

The layout and the base rows come from :mod:`tests.support.nsys_sqlite` (export schema
3.16.1); :func:`small_export` writes one process on GPU 0 with a few kernels and their launch
calls, NVTX ranges and memory events, and :func:`sql` breaks it afterwards on purpose (SQLite
stores any value in any column: text in ``start``, NULL in a NOT NULL column after a
``PRAGMA writable_schema`` edit is not needed, since the layout's NOT NULL columns can simply be
updated by a table without the constraint — see :func:`relax`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support import nsys_sqlite

REPO = Path(__file__).resolve().parents[2]

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
MEMORY = "CUDA_GPU_MEMORY_USAGE_EVENTS"
STRINGS = ["gemm(float*)", "gemm", "cudaLaunchKernel_v7000", "step"]
SID = {s: i for i, s in enumerate(STRINGS, start=1)}
PID = 4242


GEN = nsys_sqlite


def kernel_row(corr: int, start: int, dur: int, *, stream: int = 7) -> dict[str, Any]:
    return {
        "start": start,
        "end": start + dur,
        "deviceId": 0,
        "contextId": 1,
        "streamId": stream,
        "correlationId": corr,
        "globalPid": GEN.global_pid(PID),
        "demangledName": SID["gemm(float*)"],
        "shortName": SID["gemm"],
        "registersPerThread": 32,
        "gridX": 4,
        "gridY": 2,
        "gridZ": 1,
        "blockX": 256,
        "blockY": 1,
        "blockZ": 1,
        "staticSharedMemory": 1024,
        "dynamicSharedMemory": 4096,
        "localMemoryPerThread": 0,
        "localMemoryTotal": 0,
        "gridId": corr,
    }


def call_row(corr: int, start: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": start + 5,
        "eventClass": 0,
        "globalTid": GEN.global_pid(PID) | PID,
        "correlationId": corr,
        "nameId": SID["cudaLaunchKernel_v7000"],
        "returnValue": 0,
    }


def nvtx_row(start: int, end: int) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "eventType": 59,
        "text": "step",
        "globalTid": GEN.global_pid(PID) | PID,
        "domainId": 0,
    }


def memory_row(start: int, nbytes: int, op: int = 0) -> dict[str, Any]:
    return {
        "start": start,
        "globalPid": GEN.global_pid(PID),
        "deviceId": 0,
        "contextId": 1,
        "address": 4096,
        "pc": 0,
        "bytes": nbytes,
        "memKind": 0,
        "memoryOperationType": op,
    }


def export(path: Path, tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """An export at *path* with the base rows and *tables*' rows."""
    con = sqlite3.connect(path)
    GEN.create_tables(con)
    GEN.write_base(con, gpus=1)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in SID.items()])
    for table, rows in tables.items():
        GEN.insert(con, table, rows)
    con.commit()
    con.close()
    return path


def small_export(path: Path, kernels: int = 4) -> Path:
    """*kernels* gemm kernels of 10 µs, 100 µs apart, each with its launch call, one NVTX range
    around them, and two memory events."""
    return export(
        path,
        {
            KERNEL: [kernel_row(i + 1, 1_000 + 100_000 * i, 10_000) for i in range(kernels)],
            RUNTIME: [call_row(i + 1, 500 + 100_000 * i) for i in range(kernels)],
            NVTX: [nvtx_row(0, 100_000 * kernels)],
            MEMORY: [memory_row(100, 1 << 20), memory_row(200_000, 1 << 20, 1)],
        },
    )


def sql(path: Path, *statements: str) -> Path:
    """Run *statements* on the export at *path* and commit."""
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()
    return path


def relax(path: Path, table: str) -> Path:
    """Recreate *table* without its NOT NULL constraints (same columns and rows), so that a
    test can store NULL where nsys never does."""
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
    con.execute(f"ALTER TABLE {table} RENAME TO _old")
    con.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
    con.execute(f"INSERT INTO {table} SELECT * FROM _old")
    con.execute("DROP TABLE _old")
    con.commit()
    con.close()
    return path
