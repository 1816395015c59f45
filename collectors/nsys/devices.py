"""Machine and run facts of an nsys export: GPUs, session start, processes, recorded ranks.

``TARGET_INFO_GPU`` (one row per GPU of the node, used or not) → :class:`DeviceInfo`:

=============================  ==========================================================
DeviceInfo field               TARGET_INFO_GPU column
=============================  ==========================================================
id                             ``id`` (the ``deviceId`` of the activity tables)
name, sm_count                 ``name``, ``smCount``
compute_major / minor          ``computeMajor`` / ``computeMinor``
total_memory_bytes             ``totalMemory``
memory_bandwidth_bytes_per_s   ``memoryBandwidth`` (theoretical peak, B/s)
l2_cache_bytes                 ``l2CacheSize``
clock_rate_khz                 ``clockRate`` (Hz) // 1000 (max SM clock)
warp_size                      ``threadsPerWarp``
max_threads_per_block          ``maxThreadsPerBlock``
max_warps_per_sm               ``maxWarpsPerSm``
max_threads_per_sm             ``maxWarpsPerSm`` × ``threadsPerWarp``
max_blocks_per_sm              ``maxBlocksPerSm``
regs_per_block / regs_per_sm   ``maxRegistersPerBlock`` / ``maxRegistersPerSm``
smem_per_block_bytes           ``maxShmemPerBlock``
smem_per_block_optin_bytes     ``maxShmemPerBlockOptin``
smem_per_sm_bytes              ``maxShmemPerSm``
=============================  ==========================================================

A rank is *recorded by the run* when (1) a thread of the process is named ``MPI Rank N``
(nsys's MPI tracing names it so, in ``ThreadNames``), or (2) the environment of the launched
process in ``META_DATA_CAPTURE`` sets one of :data:`RANK_VARIABLES` (only for an export whose
GPU work comes from a single process, since that environment is the launched process's).
"""

from __future__ import annotations

import re
from typing import Any

from collectors.model import DeviceInfo
from collectors.nsys.schema import NsysDb

RANK_VARIABLES = (
    "RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
)
"""Launcher variables holding the global rank, in order of preference (torchrun first)."""

WORLD_SIZE_VARIABLES = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")

_MPI_RANK_THREAD = re.compile(r"^MPI Rank (\d+)$")
_ENV_ENTRY = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)="?(.*?)"?$', re.S)


MAX_ID = 2**31 - 1
"""Device ids, ranks and world sizes above this are not believed (unknown)."""


def _int(v: Any, low: int = 1) -> int | None:
    """An integer cell in [*low*, 2**63) (sizes and counts: ≥ 1), else None (unknown)."""
    return v if v.__class__ is int and low <= v < 2**63 else None


def devices(db: NsysDb) -> dict[int, DeviceInfo]:
    """``{device id: DeviceInfo}`` for every GPU of the node (empty when not recorded)."""
    table = "TARGET_INFO_GPU"
    if not db.has(table):
        return {}
    db.require(table, ("id", "name"))
    have = set(db.columns(table))
    wanted = (
        "id",
        "name",
        "computeMajor",
        "computeMinor",
        "smCount",
        "totalMemory",
        "memoryBandwidth",
        "l2CacheSize",
        "clockRate",
        "threadsPerWarp",
        "maxThreadsPerBlock",
        "maxWarpsPerSm",
        "maxBlocksPerSm",
        "maxRegistersPerBlock",
        "maxRegistersPerSm",
        "maxShmemPerBlock",
        "maxShmemPerBlockOptin",
        "maxShmemPerSm",
    )
    cols = [c for c in wanted if c in have]
    out: dict[int, DeviceInfo] = {}
    for row in db.rows(f"SELECT {', '.join(cols)} FROM {table} ORDER BY id"):
        r = dict(zip(cols, row, strict=False))
        dev_id = _int(r.get("id"), 0)
        if dev_id is None or dev_id > MAX_ID or dev_id in out:
            continue
        warps, warp = _int(r.get("maxWarpsPerSm")), _int(r.get("threadsPerWarp"))
        clock = _int(r.get("clockRate"))
        bandwidth = _int(r.get("memoryBandwidth"))
        out[dev_id] = DeviceInfo(
            id=dev_id,
            name=r.get("name") if isinstance(r.get("name"), str) else None,
            vendor="NVIDIA",
            compute_major=_int(r.get("computeMajor")),
            compute_minor=_int(r.get("computeMinor"), 0),
            sm_count=_int(r.get("smCount")),
            total_memory_bytes=_int(r.get("totalMemory")),
            memory_bandwidth_bytes_per_s=None if bandwidth is None else float(bandwidth),
            l2_cache_bytes=_int(r.get("l2CacheSize")),
            clock_rate_khz=None if clock is None else clock // 1000,
            warp_size=warp,
            max_threads_per_block=_int(r.get("maxThreadsPerBlock")),
            max_threads_per_sm=None if warps is None or warp is None else warps * warp,
            max_warps_per_sm=warps,
            max_blocks_per_sm=_int(r.get("maxBlocksPerSm")),
            regs_per_block=_int(r.get("maxRegistersPerBlock")),
            regs_per_sm=_int(r.get("maxRegistersPerSm")),
            smem_per_block_bytes=_int(r.get("maxShmemPerBlock")),
            smem_per_block_optin_bytes=_int(r.get("maxShmemPerBlockOptin")),
            smem_per_sm_bytes=_int(r.get("maxShmemPerSm")),
        )
    return out


def session_start_utc_ns(db: NsysDb) -> int | None:
    """``TARGET_INFO_SESSION_START_TIME.utcEpochNs``: Unix-epoch ns of the capture's time 0."""
    table = "TARGET_INFO_SESSION_START_TIME"
    if not db.has(table) or "utcEpochNs" not in db.columns(table):
        return None
    rows = db.rows(f"SELECT utcEpochNs FROM {table} LIMIT 1")
    return _int(rows[0][0], 0) if rows else None


def process_names(db: NsysDb) -> dict[int, tuple[int, str | None]]:
    """``{globalPid: (pid, process name)}`` from ``PROCESSES``."""
    if not db.has("PROCESSES") or not {"globalPid", "pid"} <= set(db.columns("PROCESSES")):
        return {}
    name = "name" if "name" in db.columns("PROCESSES") else "NULL"
    out: dict[int, tuple[int, str | None]] = {}
    for gpid, pid, pname in db.rows(f"SELECT globalPid, pid, {name} FROM PROCESSES"):
        if gpid.__class__ is int and pid.__class__ is int:
            out.setdefault(gpid, (pid, pname if isinstance(pname, str) else None))
    return out


def capture_host(db: NsysDb) -> str | None:
    """Host the capture ran on: ``META_DATA_CAPTURE`` ``DEVICE_DISPLAY_NAME`` (schema ≥ 3.4).

    ``EXPORT_HOST`` is not used: it names the machine that ran ``nsys export``, which can differ
    (the 2022.2 export was captured on a compute node and exported on ``login03``).
    """
    if not db.has("META_DATA_CAPTURE"):
        return None
    rows = db.rows("SELECT value FROM META_DATA_CAPTURE WHERE name = 'DEVICE_DISPLAY_NAME'")
    return str(rows[0][0]) if rows and rows[0][0] else None


def launched_env(db: NsysDb, names: tuple[str, ...]) -> dict[str, str]:
    """The variables *names* from the launched process's environment (``META_DATA_CAPTURE``).

    Only these names are kept: the captured environment can hold secrets.
    """
    if not db.has("META_DATA_CAPTURE"):
        return {}
    out: dict[str, str] = {}
    for (value,) in db.rows(
        "SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE'"
    ):
        m = _ENV_ENTRY.match(str(value or ""))
        if m and m.group(1) in names:
            out.setdefault(m.group(1), m.group(2))
    return out


def mpi_rank_threads(threads: dict[int, dict[int, str]]) -> dict[int, int]:
    """``{globalPid: rank}`` for processes with a thread named ``MPI Rank N``."""
    out: dict[int, int] = {}
    for gpid, names in threads.items():
        for name in names.values():
            m = _MPI_RANK_THREAD.match(name)
            if m and int(m.group(1)) <= MAX_ID:
                out[gpid] = int(m.group(1))
                break
    return out


def env_rank(env: dict[str, str]) -> tuple[int | None, int | None]:
    """``(rank, world size)`` from launcher variables (None where absent or not an integer)."""

    def first(names: tuple[str, ...]) -> int | None:
        for n in names:
            v = env.get(n, "").strip()
            if v.isdigit() and int(v) <= MAX_ID:
                return int(v)
        return None

    return first(RANK_VARIABLES), first(WORLD_SIZE_VARIABLES)
