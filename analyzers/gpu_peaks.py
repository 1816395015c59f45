"""Which entry of the GPU peak table (:mod:`collectors.peak_table`) a device uses.

The table is loaded by the collectors (built-in, or overridden by a user file); here it is only
looked up: by a traced device (:func:`peaks_for_device`: the roofline's default ceilings for
that device, or the reason there are none), by a device name (:func:`find_peaks`) or by a name
the user gave (:func:`peaks_named`).

Matching a traced device: its name against each entry's ``match`` substrings (longest wins; on
a tie a user-file entry wins over a built-in one; when several entries match and the device
reports its SM/CU count, the entries with that count are preferred).  An AMD device whose name
does not say which GPU it is (ROCm reports ``AMD Radeon Graphics`` or an empty name on some
systems) is matched by its LLVM target (``gfx`` key) and compute-unit count, then its memory
size; no match gives the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzers.arch import amd_gfx, is_amd
from collectors.errors import UsageError
from collectors.model import DeviceInfo
from collectors.peak_table import NUMERIC_KEYS, GpuPeaks, PeakTable

__all__ = ["PeakMatch", "by_architecture", "find_peaks", "peaks_for_device", "peaks_named"]


def find_peaks(
    table: PeakTable, device_name: str | None, cu_count: int | None = None
) -> GpuPeaks | None:
    """The entry named *device_name* (any case), else the one whose longest ``match``
    substring occurs in it (a user-file entry wins a tie; *cu_count* picks among several
    matching entries); None when none does."""
    if not device_name:
        return None
    low = device_name.lower()
    found: list[tuple[int, bool, GpuPeaks]] = []
    for g in table.gpus:
        if g.name.lower() == low:
            return g
        lengths = [len(m) for m in g.match if m.lower() in low]
        if lengths:
            found.append((max(lengths), g.origin != "built-in", g))
    if cu_count is not None and len(found) > 1:
        same = [f for f in found if f[2].values.get("sm_count") == cu_count]
        found = same or found
    if not found:
        return None
    best = found[0]
    for f in found[1:]:
        if (f[0], f[1]) > (best[0], best[1]):
            best = f
    return best[2]


def by_architecture(
    table: PeakTable, gfx: str, cu_count: int | None, memory_bytes: int | None = None
) -> list[GpuPeaks]:
    """Entries of LLVM target *gfx* with *cu_count* compute units, narrowed by memory size
    (within 2 %) when that leaves at least one."""
    hits = [
        g
        for g in table.gpus
        if g.text.get("gfx") == gfx and (cu_count is None or g.values.get("sm_count") == cu_count)
    ]
    if memory_bytes and len(hits) > 1:
        gib = memory_bytes / 2**30
        near = [g for g in hits if abs(g.values.get("memory_gib", 0) - gib) <= 0.02 * gib]
        hits = near or hits
    return hits


def peaks_named(table: PeakTable, name: str) -> GpuPeaks:
    """The entry for a user-given GPU name (a table name or a device name, as
    :func:`find_peaks`).

    Raises:
        UsageError: no entry matches.
    """
    g = find_peaks(table, name)
    if g is None:
        raise UsageError(
            f"unknown GPU {name!r}: known are {'; '.join(table.names())} "
            "(add it with --peaks FILE.toml)"
        )
    return g


@dataclass(frozen=True)
class PeakMatch:
    """The peak-table entry of a traced device, how it was found, or why none was."""

    peaks: GpuPeaks | None
    how: str | None = None
    """``device name`` or ``architecture gfx942, 304 CUs``; None without a match."""
    reason: str | None = None
    """Why no entry applies (unknown device name ...); None with a match."""


def _same_peaks(a: GpuPeaks, b: GpuPeaks) -> bool:
    """Equal ceilings (FLOP/s keys and bandwidth within 1 %: datasheet rounding)."""
    keys = [k for k in NUMERIC_KEYS if k.endswith(("_tflops", "_tops")) or k == "mem_bw_gbs"]
    for k in keys:
        x, y = a.values.get(k), b.values.get(k)
        if (x is None) != (y is None) or (
            x is not None and y is not None and abs(x - y) > 0.01 * y
        ):
            return False
    return True


def peaks_for_device(table: PeakTable, device: DeviceInfo | None) -> PeakMatch:
    """The entry of *device* (module docstring), or the reason there is none."""
    if device is None:
        return PeakMatch(None, reason="the trace records no device properties")
    amd = is_amd(device)
    g = find_peaks(table, device.name, device.sm_count if amd else None)
    cus = g.values.get("sm_count") if g is not None else None
    if g is not None and amd and device.sm_count and cus and cus != device.sm_count:
        return PeakMatch(
            None,
            reason=f"device {device.name!r} reports {device.sm_count} CUs, the {g.name} entry "
            f"is for {cus:g} (a compute partition?): its peaks do not apply",
        )
    if g is not None:
        return PeakMatch(g, how="device name")
    gfx = amd_gfx(device) if amd else None
    if gfx is not None:
        hits = by_architecture(table, gfx, device.sm_count, device.total_memory_bytes)
        if hits and all(_same_peaks(h, hits[0]) for h in hits):
            names = " or ".join(h.name for h in hits)
            return PeakMatch(hits[0], how=f"architecture {gfx}, {device.sm_count} CUs: {names}")
        if hits:
            names = ", ".join(h.name for h in hits)
            return PeakMatch(
                None,
                reason=f"device {device.name or '(no name)'!r} ({gfx}, {device.sm_count} CUs) "
                f"could be any of {names}: add a peak file entry matching its name",
            )
    what = f"device name {device.name!r}" if device.name else "an empty device name"
    arch = f" ({gfx}, {device.sm_count} CUs)" if gfx else ""
    return PeakMatch(
        None,
        reason=f"unknown {what}{arch}: not in the GPU peak table (add it with a peak file)",
    )
