"""Bandwidth of each collective: ``algbw = S / duration``, ``busbw = algbw × factor(collective,
group size)`` (nccl-tests' definitions, :mod:`collectors.nccl_formulas`) in GB/s, and
``busbw_link_pct = 100 × busbw / link peak`` where the device's per-direction peak interconnect
bandwidth is known (:data:`LINK_PEAKS`; docs/communication.md §1–2)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from collectors.nccl_formulas import bus_factors

if TYPE_CHECKING:
    from collectors.model import Trace

LINK_PEAKS: tuple[tuple[str, float, str], ...] = (
    (r"GB200|B200|B100", 900.0, "NVLink 5"),
    (r"H100.*PCIe|H100 PCIe", 300.0, "NVLink bridge (2 GPUs)"),
    (r"H100|H200|GH200", 450.0, "NVLink 4"),
    (r"A100.*PCIe", math.nan, ""),
    (r"A100", 300.0, "NVLink 3"),
    (r"V100.*SXM|V100-SXM", 150.0, "NVLink 2"),
    (r"P100.*SXM", 80.0, "NVLink 1"),
    (r"L40S|RTX 4090", 32.0, "PCIe 4.0 x16"),
)
"""(device-name regex, per-direction GB/s, link): reference/gpus.md "NVLink / interconnect".

First match wins; NaN = deliberately unknown (A100 PCIe: NVLink bridge optional).  busbw is a
per-direction figure, so it is compared with the per-direction peak; NVLS / SHARP collectives can
exceed it, and groups spanning nodes are bounded by the network, not by this link."""


def link_peak(device_name: str | None) -> tuple[float, str] | None:
    """(per-direction GB/s, link name) of a device name, or None when not in :data:`LINK_PEAKS`."""
    if not device_name:
        return None
    for pattern, gbps, link in LINK_PEAKS:
        if re.search(pattern, device_name, re.IGNORECASE):
            return (gbps, link) if not math.isnan(gbps) else None
    return None


def add_bandwidth(df: pd.DataFrame, trace: Trace) -> None:
    """Set ``algbw_gbps``, ``busbw_gbps``, ``link_peak_gbps`` and ``busbw_link_pct`` (in place;
    NaN where undefined: unknown size, zero duration, unknown group size or link peak)."""
    n = df["group_size"].to_numpy()
    dur = df["duration_ns"].to_numpy().astype(np.float64)
    size = df["message_bytes"].to_numpy().astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg = np.where((size >= 0) & (dur > 0), size / dur, np.nan)
    df["algbw_gbps"] = alg
    df["busbw_gbps"] = alg * bus_factors(df["collective"], df["group_size"].where(n > 0))
    peak_of: dict[int, float] = {}  # per device id (-1: the rank's device), looked up once
    peaks = []
    for d in df["device"].to_numpy().tolist():
        key = int(d) if d >= 0 else -1
        if key not in peak_of:
            dev = trace.meta.device(key) if key >= 0 else trace.gpu_device
            lp = link_peak(dev.name if dev is not None else None)
            peak_of[key] = lp[0] if lp else math.nan
        peaks.append(peak_of[key])
    df["link_peak_gbps"] = np.array(peaks, dtype=np.float64)
    df["busbw_link_pct"] = 100.0 * df["busbw_gbps"] / df["link_peak_gbps"]
