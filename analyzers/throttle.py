"""Clock throttling from the NVML ``clock_event_reasons`` samples: the bands a GPU was slowed.

A band is a maximal run of consecutive samples of one GPU with a throttle bit set
(:data:`THROTTLE_REASONS`); it starts at the first such sample and ends at the next sample of
the GPU without one (or at its last sample); its ``reasons`` are the bits seen in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

THROTTLE_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}
"""Bits of ``clock_event_reasons`` that slow the clocks down (idle 0x1, application clocks 0x2
and display clocks 0x100 are settings, not throttling)."""
THROTTLE_MASK = sum(THROTTLE_REASONS)


@dataclass(frozen=True)
class ThrottleBand:
    """One band (module docstring); times are the counters' ``ts_ns`` (Unix-epoch ns)."""

    device: int
    start_ns: int
    end_ns: int
    reasons: tuple[str, ...]
    """Names of the bits seen in the band, in :data:`THROTTLE_REASONS` order."""


def throttle_bands(counters: pd.DataFrame) -> list[ThrottleBand]:
    """The throttle bands of every GPU in *counters* (a ``counters`` table), by device then
    time."""
    bands = []
    rows = counters[(counters["name"] == "clock_event_reasons") & (counters["device"] >= 0)]
    for _, g in rows.groupby("device", sort=True, observed=True):
        g = g.sort_values("ts_ns", kind="stable")
        dev = int(g["device"].to_numpy(dtype=np.int64)[0])
        ts = g["ts_ns"].to_numpy(dtype=np.int64)
        masks = np.nan_to_num(g["value"].to_numpy(dtype=np.float64)).astype(np.int64)
        on = (masks & THROTTLE_MASK) != 0
        i = 0
        while i < len(ts):
            if not on[i]:
                i += 1
                continue
            j = i
            union = 0
            while j < len(ts) and on[j]:
                union |= int(masks[j])
                j += 1
            end = ts[j] if j < len(ts) else ts[j - 1]
            reasons = tuple(n for b, n in THROTTLE_REASONS.items() if union & b)
            bands.append(ThrottleBand(dev, int(ts[i]), int(end), reasons))
            i = j
    return bands
