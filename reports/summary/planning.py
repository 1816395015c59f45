"""Planning the many-rank work: one task per input, and a pool sized from the CPUs, the
available memory (``/proc/meminfo``, the cgroup's limit) and each task's planned peak
(docs/scale.md §3)."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

WORKER_BASE_BYTES = 200 * 2**20
"""Planned memory of a worker before its task (measured: about 125 MiB with gpuscope's modules
imported; the rest is margin)."""


PARSE_BYTES_PER_JSON_BYTE = 5.0
"""Planned peak bytes of parsing + analysing per byte of uncompressed Kineto JSON.  Set for the
whole-text reader (46.9 MB generated ranks: 401 MiB, planned 6 % above); the chunked reader
peaks at 246–258 MiB on those ranks, so the plan now errs 65 % on the safe side
(docs/performance.md §C)."""


PARSE_BYTES_PER_SQLITE_BYTE = 4.0
"""The same per byte of Nsight Systems SQLite export."""


CACHED_BYTES_PER_ENTRY_BYTE = 4.0
"""Peak bytes of loading a cached entry + analysing per byte of its Arrow files."""


MEMORY_HEADROOM = 0.8
"""Share of the available memory the pool may plan to use."""


@dataclass(frozen=True)
class Unit:
    """One task: a Kineto file, or every Nsight Systems export of the run."""

    kind: str
    """``kineto`` | ``nsys``."""
    paths: tuple[Path, ...]
    reps: tuple[Path, ...] = ()

    @property
    def label(self) -> str:
        names = [p.name for p in (*self.paths, *self.reps)]
        return names[0] if len(names) == 1 else f"{len(names)} nsys exports"


def plan_units(paths: Sequence[str | Path]) -> list[Unit]:
    """One unit per Kineto file (duplicates removed), one for all Nsight Systems exports.

    Raises:
        InputError: a path does not exist, or a directory holds no trace.
    """
    from collectors.load import expand_inputs

    kineto, sqlite, reps = expand_inputs(paths)
    units = []
    seen: set[Path] = set()
    for p in kineto:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            units.append(Unit("kineto", (p,)))
    if sqlite or reps:
        units.append(Unit("nsys", tuple(sqlite), tuple(reps)))
    return units


NO_LIMIT = 1 << 62
"""A cgroup v1 limit at or above this is "no limit" (the kernel writes 2**63 rounded down to a
page)."""


def _number(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text().strip())
    return None


def _reclaimable(stat: Path, key: str) -> int:
    """The *key* line of a cgroup's ``memory.stat`` (0 when unreadable)."""
    with contextlib.suppress(OSError, ValueError, IndexError), open(stat) as f:
        for line in f:
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def cgroup_room_bytes(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """Memory this process may still use under its cgroups' limits, None when none applies.

    Each limit on the way from this process's cgroup up to the hierarchy's root applies (a
    container's namespace makes its own cgroup the root): cgroup v2 ``memory.max`` −
    ``memory.current``, v1 ``memory.limit_in_bytes`` − ``memory.usage_in_bytes``, the usage
    less its inactive file pages (``memory.stat``), which the kernel reclaims before failing
    (as ``docker stats`` counts); the least room wins."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    rooms: list[int] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and not controllers:  # v2
            base, files = root, ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):  # v1
            base = root / "memory"
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        d = base / path.strip("/")
        while True:
            limit, used = _number(d / files[0]), _number(d / files[1])
            if limit is not None and used is not None and limit < NO_LIMIT:
                rooms.append(limit - max(0, used - _reclaimable(d / "memory.stat", files[2])))
            if d == base or base not in d.parents:
                break
            d = d.parent
    return min(rooms) if rooms else None


def available_memory_bytes() -> int:
    """MemAvailable, or the room under this process's cgroup limits when that is lower
    (:func:`cgroup_room_bytes`)."""
    avail = None
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    room = cgroup_room_bytes()
    if room is not None:
        avail = room if avail is None else min(avail, room)
    if avail is None:
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return max(0, int(avail))


def _json_bytes(path: Path) -> int:
    """Uncompressed size of a Kineto file (gzip's ISIZE trailer; at least 10x the .gz)."""
    size = path.stat().st_size
    from collectors.kineto import gzip_isize

    isize = None
    with contextlib.suppress(OSError):
        isize = gzip_isize(path)
    return size if isize is None else max(isize, 10 * size)


def _cached_entry_bytes(unit: Unit, cache_root: str | None) -> int | None:
    """Bytes of the unit's cache entry when it is known without hashing anything, else None."""
    if cache_root is None or unit.reps:
        return None
    from collectors.cache import TraceCache

    cache = TraceCache(cache_root)
    digests = [cache.known_digest(p) for p in unit.paths]
    if any(d is None for d in digests):
        return None
    key = cache.key(unit.kind, list(unit.paths))
    d = cache.traces.path(key)
    if not d.is_dir():
        return None
    return sum(f.stat().st_size for f in d.iterdir() if f.is_file())


def estimate_peak_bytes(unit: Unit, cache_root: str | None) -> int:
    """Planned peak RSS of a worker running *unit* (module constants; docs/scale.md §3)."""
    try:
        cached = _cached_entry_bytes(unit, cache_root)
        if cached is not None:
            return int(WORKER_BASE_BYTES + CACHED_BYTES_PER_ENTRY_BYTE * cached)
        if unit.kind == "kineto":
            work = PARSE_BYTES_PER_JSON_BYTE * _json_bytes(unit.paths[0])
        else:
            work = PARSE_BYTES_PER_SQLITE_BYTE * sum(p.stat().st_size for p in unit.paths)
    except OSError:
        return WORKER_BASE_BYTES
    return int(WORKER_BASE_BYTES + work)


def here_on_two_cpus(units: Sequence[Unit], workers: int | None, pool: int) -> bool:
    """Whether to run the units in this process, one after the other, rather than in a pool of
    *pool* (≤ 2) spawned workers: every unit is a Kineto file large enough to be read and
    analysed on two CPUs here (a scanning thread or a second process,
    :mod:`collectors.kineto.parallel`; the sections, :mod:`reports.summary.forked`),
    so a pool would only add its workers' start and imports (about 0.5 s each) and their
    memory.  Not when ``--workers`` was given."""
    from collectors.kineto import spare_cpu
    from collectors.kineto.parallel import MIN_TEXT_BYTES

    if workers is not None or pool > 2 or not spare_cpu():
        return False
    try:
        return all(u.kind == "kineto" and _json_bytes(u.paths[0]) >= MIN_TEXT_BYTES for u in units)
    except OSError:
        return False


def pool_size(
    units: Sequence[Unit], requested: int | None, cache_root: str | None
) -> tuple[int, int, int, list[str]]:
    """(workers, planned peak per worker, available memory, notes) for the local pool."""
    notes = []
    from collectors.kineto import usable_cpus

    cpus = usable_cpus()
    peak = max((estimate_peak_bytes(u, cache_root) for u in units), default=WORKER_BASE_BYTES)
    avail = available_memory_bytes()
    by_memory = max(1, math.floor(avail * MEMORY_HEADROOM / peak))
    n = requested if requested is not None else cpus
    if n > by_memory:
        notes.append(
            f"{n} workers would need about {n * peak / 2**30:.1f} GiB; "
            f"{avail / 2**30:.1f} GiB available: using {by_memory}"
        )
        n = by_memory
    return max(1, min(n, len(units))), peak, avail, notes
