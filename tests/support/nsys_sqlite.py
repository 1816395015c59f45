"""Write a synthetic Nsight Systems SQLite export with the real table layout.

The layout (:data:`LAYOUT`) is the column set of export schema 3.16.1 (nsys 2024.6.2.25, the
Fuser export in ``../shared/data/nsys``), plus ``CUDA_GPU_MEMORY_USAGE_EVENTS`` of schema 2.9.1.
The tests build small hand-made exports with :func:`create_tables` / :func:`insert`;
``benchmarks/bench_nsys_kernel_summary.py`` writes 1,000,000 kernels with
:func:`write_synthetic_export` (through ``benchmarks/nsys_synthetic_export.py``):

    python benchmarks/nsys_synthetic_export.py OUT.sqlite [--kernels N] [--seed S]

The synthetic run: one process on GPU 0, kernels on 4 streams with one ``cudaLaunchKernel``
call each (same correlation id) on the main thread, one NVTX push/pop range per 100 launches,
one host-to-device memcpy per 1,000 kernels.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

LAYOUT: dict[str, str] = {
    "META_DATA_EXPORT": "name:TEXT!, value:TEXT",
    "META_DATA_CAPTURE": "name:TEXT!, value:TEXT",
    "StringIds": "id!, value:TEXT!",
    "TARGET_INFO_GPU": (
        "vmId!, id!, name:TEXT, busLocation:TEXT, isDiscrete, l2CacheSize, totalMemory, "
        "memoryBandwidth, clockRate, smCount, pwGpuId, uuid:TEXT, luid, chipName:TEXT, cuDevice, "
        "ctxswDevPath:TEXT, ctrlDevPath:TEXT, revision, nodeMask, constantMemory, maxIPC, "
        "maxRegistersPerBlock, maxShmemPerBlock, maxShmemPerBlockOptin, maxShmemPerSm, "
        "maxRegistersPerSm, threadsPerWarp, asyncEngines, maxWarpsPerSm, maxBlocksPerSm, "
        "maxThreadsPerBlock, maxBlockDimX, maxBlockDimY, maxBlockDimZ, maxGridDimX, maxGridDimY, "
        "maxGridDimZ, computeMajor, computeMinor, smMajor, smMinor"
    ),
    "TARGET_INFO_SESSION_START_TIME": "utcEpochNs, utcTime:TEXT, localTime:TEXT",
    "PROCESSES": "globalPid, pid, name:TEXT",
    "ThreadNames": "nameId!, priority, globalTid",
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start!, end!, deviceId!, contextId!, greenContextId, streamId!, correlationId, "
        "globalPid, demangledName!, shortName!, mangledName, launchType, cacheConfig, "
        "registersPerThread!, gridX!, gridY!, gridZ!, blockX!, blockY!, blockZ!, "
        "staticSharedMemory!, dynamicSharedMemory!, localMemoryPerThread!, localMemoryTotal!, "
        "gridId!, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig"
    ),
    "CUPTI_ACTIVITY_KIND_MEMCPY": (
        "start!, end!, deviceId!, contextId!, greenContextId, streamId!, correlationId, "
        "globalPid, bytes!, copyKind!, deprecatedSrcId, srcKind, dstKind, srcDeviceId, "
        "srcContextId, dstDeviceId, dstContextId, migrationCause, graphNodeId, virtualAddress"
    ),
    "CUPTI_ACTIVITY_KIND_MEMSET": (
        "start!, end!, deviceId!, contextId!, greenContextId, streamId!, correlationId, "
        "globalPid, value!, bytes!, graphNodeId, memKind"
    ),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": (
        "start!, end!, deviceId!, contextId!, greenContextId, streamId!, correlationId, "
        "globalPid, syncType!, eventId!"
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (
        "start!, end!, eventClass!, globalTid, correlationId, nameId!, returnValue!, callchainId"
    ),
    "NVTX_EVENTS": (
        "start!, end, eventType!, rangeId, category, color, text:TEXT, globalTid, endGlobalTid, "
        "textId, domainId, uint64Value, int64Value, doubleValue:REAL, uint32Value, int32Value, "
        "floatValue:REAL, jsonTextId, jsonText:TEXT, binaryData:TEXT"
    ),
    "ENUM_CUDA_MEMCPY_OPER": "id!, name:TEXT, label:TEXT",
    "CUDA_GPU_MEMORY_USAGE_EVENTS": (
        "start!, globalPid!, deviceId!, contextId!, address!, pc!, bytes!, memKind!, "
        "memoryOperationType!, name:TEXT, correlationId"
    ),
}
"""Table → ``column[:TYPE][!]`` (type INTEGER unless given; ``!`` = NOT NULL)."""


def columns(table: str) -> list[tuple[str, str, bool]]:
    """``(name, type, not null)`` of a :data:`LAYOUT` table."""
    out = []
    for spec in LAYOUT[table].split(","):
        spec = spec.strip()
        not_null = spec.endswith("!")
        name, _, typ = spec.rstrip("!").partition(":")
        out.append((name, typ or "INTEGER", not_null))
    return out


def create_tables(con: sqlite3.Connection, tables: Iterable[str] | None = None) -> None:
    """Create the :data:`LAYOUT` tables (all, or *tables*); nsys creates no indexes."""
    for table in tables or LAYOUT:
        body = ", ".join(
            f"{n} {t}{' NOT NULL' if nn else ''}"
            + (" PRIMARY KEY" if (table, n) == ("StringIds", "id") else "")
            for n, t, nn in columns(table)
        )
        con.execute(f"CREATE TABLE {table} ({body})")


def insert(con: sqlite3.Connection, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert dict rows; absent columns are NULL, absent NOT NULL integer columns 0."""
    cols = columns(table)
    names = ", ".join(n for n, _, _ in cols)
    marks = ", ".join("?" for _ in cols)
    defaults = {n: (0 if nn and t == "INTEGER" else None) for n, t, nn in cols}
    con.executemany(
        f"INSERT INTO {table} ({names}) VALUES ({marks})",
        ([r.get(n, defaults[n]) for n, _, _ in cols] for r in rows),
    )


H100 = {
    "vmId": 1 << 48,
    "name": "NVIDIA H100 80GB HBM3",
    "l2CacheSize": 52428800,
    "totalMemory": 85520809984,
    "memoryBandwidth": 3352320000000,
    "clockRate": 1980000000,
    "smCount": 132,
    "maxRegistersPerBlock": 65536,
    "maxShmemPerBlock": 49152,
    "maxShmemPerBlockOptin": 232448,
    "maxShmemPerSm": 233472,
    "maxRegistersPerSm": 65536,
    "threadsPerWarp": 32,
    "maxWarpsPerSm": 64,
    "maxBlocksPerSm": 32,
    "maxThreadsPerBlock": 1024,
    "computeMajor": 9,
    "computeMinor": 0,
}
"""TARGET_INFO_GPU values of the H100 row in ``TARGET_INFO_GPU_observed.csv``."""


def global_pid(pid: int, vm: int = 1) -> int:
    """nsys's serialized process id: ``vm << 48 | pid << 24``."""
    return (vm << 48) | (pid << 24)


def write_base(con: sqlite3.Connection, *, schema: str = "3.16.1", gpus: int = 1) -> None:
    """Metadata, session start and GPU rows every export has."""
    insert(
        con,
        "META_DATA_EXPORT",
        [
            {"name": "EXPORT_PRODUCT_VERSION", "value": "2024.6.2.25"},
            {"name": "EXPORT_SCHEMA_VERSION", "value": schema},
        ],
    )
    insert(con, "TARGET_INFO_SESSION_START_TIME", [{"utcEpochNs": 1_733_861_216_912_637_995}])
    insert(con, "TARGET_INFO_GPU", [{**H100, "id": i} for i in range(gpus)])
    insert(
        con,
        "ENUM_CUDA_MEMCPY_OPER",
        [
            {"id": 1, "name": "CUDA_MEMCPY_KIND_HTOD", "label": "Host-to-Device"},
            {"id": 2, "name": "CUDA_MEMCPY_KIND_DTOH", "label": "Device-to-Host"},
        ],
    )


def write_synthetic_export(
    path: str | Path, n_kernels: int = 1_000_000, *, n_names: int = 200, seed: int = 0
) -> Path:
    """Write the synthetic run described in the module docstring to *path* (overwritten)."""
    p = Path(path)
    p.unlink(missing_ok=True)
    rng = np.random.default_rng(seed)
    pid = 4242
    gpid = global_pid(pid)
    gtid = gpid | pid
    con = sqlite3.connect(p)
    try:
        create_tables(con)
        write_base(con)
        insert(con, "PROCESSES", [{"globalPid": gpid, "pid": pid, "name": "python"}])
        names = [f"void synthetic::kernel_{i}<float, {i % 7}>(float *)" for i in range(n_names)]
        short = [f"kernel_{i}" for i in range(n_names)]
        strings = [*names, *short, "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "main"]
        con.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(strings, start=1))
        launch_id = 2 * n_names + 1
        memcpy_api_id = launch_id + 1
        insert(con, "ThreadNames", [{"nameId": memcpy_api_id + 1, "globalTid": gtid}])

        # host: launches 2-6 µs apart; GPU: each kernel starts after its launch and after the
        # previous kernel of its stream
        api_start = np.cumsum(rng.integers(2_000, 6_000, n_kernels)).astype(np.int64)
        api_end = api_start + rng.integers(1_500, 2_000, n_kernels)
        dur = rng.lognormal(9.0, 1.0, n_kernels).astype(np.int64) + 1_000
        stream = rng.integers(0, 4, n_kernels) + 7
        start = api_end + rng.integers(1_000, 10_000, n_kernels)
        for s in range(7, 11):
            idx = np.flatnonzero(stream == s)
            st, du = start[idx], dur[idx]
            # a stream runs its kernels one at a time, in launch order
            ends = np.maximum.accumulate(st + du)
            st[1:] = np.maximum(st[1:], ends[:-1])
            start[idx] = st
        end = start + dur
        name = rng.integers(1, n_names + 1, n_kernels)
        corr = np.arange(1, n_kernels + 1)
        grid = rng.choice([1, 108, 132, 264, 1024], n_kernels)
        block = rng.choice([128, 256, 512], n_kernels)
        regs = rng.choice([32, 40, 64, 128], n_kernels)
        smem = rng.choice([0, 1024, 16384], n_kernels)
        dyn = rng.choice([0, 0, 49152], n_kernels)
        kcols = [c for c, _, _ in columns("CUPTI_ACTIVITY_KIND_KERNEL")]
        values = {
            "start": start,
            "end": end,
            "deviceId": np.zeros(n_kernels, np.int64),
            "contextId": np.ones(n_kernels, np.int64),
            "streamId": stream,
            "correlationId": corr,
            "globalPid": np.full(n_kernels, gpid),
            "demangledName": name,
            "shortName": name + n_names,
            "launchType": np.zeros(n_kernels, np.int64),
            "cacheConfig": np.zeros(n_kernels, np.int64),
            "registersPerThread": regs,
            "gridX": grid,
            "gridY": np.ones(n_kernels, np.int64),
            "gridZ": np.ones(n_kernels, np.int64),
            "blockX": block,
            "blockY": np.ones(n_kernels, np.int64),
            "blockZ": np.ones(n_kernels, np.int64),
            "staticSharedMemory": smem,
            "dynamicSharedMemory": dyn,
            "localMemoryPerThread": np.zeros(n_kernels, np.int64),
            "localMemoryTotal": np.zeros(n_kernels, np.int64),
            "gridId": corr,
            "sharedMemoryExecuted": np.full(n_kernels, 65536),
            "sharedMemoryLimitConfig": np.zeros(n_kernels, np.int64),
        }
        _bulk(con, "CUPTI_ACTIVITY_KIND_KERNEL", kcols, values, n_kernels)
        rcols = [c for c, _, _ in columns("CUPTI_ACTIVITY_KIND_RUNTIME")]
        rvalues = {
            "start": api_start,
            "end": api_end,
            "eventClass": np.zeros(n_kernels, np.int64),
            "globalTid": np.full(n_kernels, gtid),
            "correlationId": corr,
            "nameId": np.full(n_kernels, launch_id),
            "returnValue": np.zeros(n_kernels, np.int64),
        }
        _bulk(con, "CUPTI_ACTIVITY_KIND_RUNTIME", rcols, rvalues, n_kernels)
        first = np.arange(0, n_kernels, 100)
        last = np.minimum(first + 99, n_kernels - 1)
        insert(
            con,
            "NVTX_EVENTS",
            (
                {
                    "start": int(api_start[a]) - 500,
                    "end": int(api_end[b]) + 500,
                    "eventType": 59,
                    "text": f"step {i}",
                    "globalTid": gtid,
                    "domainId": 0,
                }
                for i, (a, b) in enumerate(zip(first, last, strict=True))
            ),
        )
        m = np.arange(0, n_kernels, 1000)
        insert(
            con,
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            (
                {
                    "start": int(start[i]) - 3_000,
                    "end": int(start[i]) - 1_000,
                    "deviceId": 0,
                    "contextId": 1,
                    "streamId": 7,
                    "correlationId": n_kernels + 1 + j,
                    "globalPid": gpid,
                    "bytes": 1 << 20,
                    "copyKind": 1,
                }
                for j, i in enumerate(m)
            ),
        )
        con.commit()
    finally:
        con.close()
    return p


def _bulk(
    con: sqlite3.Connection,
    table: str,
    cols: Sequence[str],
    values: Mapping[str, np.ndarray],
    n: int,
) -> None:
    lists = [values[c].tolist() if c in values else [None] * n for c in cols]
    marks = ", ".join("?" for _ in cols)
    sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})"
    con.executemany(sql, zip(*lists, strict=True))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    write_synthetic_export(args.out, args.kernels, seed=args.seed)
    print(f"wrote {args.out} ({args.kernels} kernels) in {time.perf_counter() - t0:.1f} s")
