"""Which entry of the GPU peak table (:mod:`collectors.peaks`) a device uses.

The table is loaded by the collectors (built-in, or overridden by a user file); here it is only
looked up: by a traced device's name (:func:`find_peaks`: the roofline's default ceilings for
that device) or by a name the user gave (:func:`peaks_named`).
"""

from __future__ import annotations

from collectors.errors import UsageError
from collectors.peaks import GpuPeaks, PeakTable

__all__ = ["find_peaks", "peaks_named"]


def find_peaks(table: PeakTable, device_name: str | None) -> GpuPeaks | None:
    """The entry named *device_name* (any case), else the one with the longest ``match``
    substring that occurs in it; None when none does."""
    if not device_name:
        return None
    low = device_name.lower()
    best: tuple[int, GpuPeaks] | None = None
    for g in table.gpus:
        if g.name.lower() == low:
            return g
        for m in g.match:
            if m.lower() in low and (best is None or len(m) > best[0]):
                best = (len(m), g)
    return best[1] if best else None


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
