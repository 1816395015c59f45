"""GPU memory over time from the trace's memory counters: timeline, peaks, peak per step.

Counters read (``counters.name`` → series label):

    ================================  ================  ===========================================
    ``Total Allocated``               ``allocated``     Kineto ``[memory]`` events (PyTorch caching
                                                        allocator, ``profile_memory=True``): bytes
                                                        in live tensors
    ``Total Reserved``                ``reserved``      same events: bytes the allocator holds
    ``cuda_memory_allocated_bytes``   ``cuda_malloc``   nsys ``--cuda-memory-usage=true``: bytes
                                                        held through CUDA allocation calls since
                                                        capture start
    ================================  ================  ===========================================

Definitions (``docs/idle-and-launch.md``):

- a *sample* is one counter row; samples of one (device, series) are taken in time order,
  rows at the same time in table order (an allocation and a free in the same microsecond are
  two samples, so the transient peak between them is kept);
- peak = max over samples; its time is the first sample reaching it; *the op that reached it*
  is :func:`op_at` that time;
- per step (the window's ProfilerSteps): the level at step start (last sample before the
  start), the peak among samples in ``[start, end)`` with its time and op, and the level at
  step end (last sample before the end); None where there is no such sample.

Samples with a negative device id (host memory) are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzers.idle import STEP_MARKER
from analyzers.memo import TraceMemo
from analyzers.options import AnalysisOptions
from analyzers.window import window
from collectors.model import LAUNCH_CATS, Trace, names_matching

SERIES = {
    "Total Allocated": "allocated",
    "Total Reserved": "reserved",
    "cuda_memory_allocated_bytes": "cuda_malloc",
}
"""Counter name → series label (see the module docstring)."""

NOTE_NO_MEMORY = (
    "no GPU memory counters in the trace (Kineto: profile with profile_memory=True; "
    "nsys: --cuda-memory-usage=true): memory timeline not available"
)


def memory_timeline(trace: Trace) -> pd.DataFrame:
    """One row per sample: device, series, ts_ns, bytes (int64).

    Sorted by device, series, then time (stable: rows at one time keep table order).  Built
    once per Trace (each call returns its own shallow copy).
    """
    return _timeline(trace).copy(deep=False)


@TraceMemo
def _timeline(trace: Trace) -> pd.DataFrame:
    c = trace.counters
    c = c[c["name"].isin(list(SERIES)) & (c["device"] >= 0)]
    out = pd.DataFrame(
        {
            "device": c["device"].to_numpy(dtype=np.int64),
            "series": c["name"].astype(str).map(SERIES).to_numpy(dtype=object),
            "ts_ns": c["ts_ns"].to_numpy(dtype=np.int64),
            "bytes": c["value"].to_numpy(dtype=np.float64).astype(np.int64),
        }
    )
    return out.sort_values(["device", "series", "ts_ns"], kind="stable").reset_index(drop=True)


def op_at(trace: Trace, ts: int) -> str | None:
    """The innermost named activity running at *ts* (``start ≤ ts ≤ end``), or None.

    Looked up in this order, the first kind that has one winning: host operators (Kineto
    ``cpu_op``); other host events that are neither API calls nor step markers (user
    annotations); annotation ranges other than steps (NVTX, user ranges); runtime/driver API
    calls (``cudaMalloc``...).  Innermost = latest start, then shortest.
    """
    h = trace.host
    s = h["start_ns"].to_numpy()
    e = h["end_ns"].to_numpy()
    inside = (s <= ts) & (ts <= e)
    api = np.asarray(h["cat"].isin(LAUNCH_CATS), dtype=bool)
    step = names_matching(h["name"], STEP_MARKER.search)
    is_op = np.asarray(h["cat"] == "cpu_op", dtype=bool)
    a = trace.annotations
    a_in = (
        (a["start_ns"].to_numpy() <= ts)
        & (ts <= a["end_ns"].to_numpy())
        & np.asarray(a["kind"] != "step", dtype=bool)
    )
    candidates = (
        (h, inside & is_op),
        (h, inside & ~api & ~step),
        (a, a_in),
        (h, inside & api),
    )
    for table, mask in candidates:
        idx = np.flatnonzero(mask)
        if idx.size:
            ts_s = table["start_ns"].to_numpy()[idx]
            ts_e = table["end_ns"].to_numpy()[idx]
            best = idx[np.lexsort((ts_e - ts_s, -ts_s))[0]]
            return str(table["name"].iloc[best])
    return None


@dataclass(frozen=True)
class SeriesPeak:
    """Peak of one memory series of one device over the whole trace."""

    device: int
    series: str
    samples: int
    peak_bytes: int
    peak_ts_ns: int
    peak_op: str | None
    first_bytes: int
    last_bytes: int


def _first_max(b: np.ndarray) -> int:
    return int(np.argmax(b))  # numpy returns the first occurrence


def peaks(trace: Trace) -> list[SeriesPeak]:
    """Whole-trace peak per (device, series), by device then series."""
    tl = memory_timeline(trace)
    out = []
    dev: Any
    for (dev, series), grp in tl.groupby(["device", "series"], sort=True):
        b = grp["bytes"].to_numpy()
        t = grp["ts_ns"].to_numpy()
        i = _first_max(b)
        out.append(
            SeriesPeak(
                int(dev),
                str(series),
                len(b),
                int(b[i]),
                int(t[i]),
                op_at(trace, int(t[i])),
                int(b[0]),
                int(b[-1]),
            )
        )
    return out


STEP_PEAK_COLUMNS = (
    "device",
    "series",
    "step",
    "start_ns",
    "end_ns",
    "at_start_bytes",
    "peak_bytes",
    "peak_ts_ns",
    "peak_op",
    "at_end_bytes",
)


_NULLABLE_INT = ("at_start_bytes", "peak_bytes", "peak_ts_ns", "at_end_bytes")
"""Exact integers with ``<NA>`` where there is no sample (float64 would round epoch ns)."""


def step_peaks(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Per (device, series, window step): columns :data:`STEP_PEAK_COLUMNS` (``<NA>`` / None
    where there is no sample)."""
    options = options or AnalysisOptions()
    tl = memory_timeline(trace)
    steps = trace.steps() if len(tl) else pd.DataFrame(columns=["step", "start_ns", "end_ns"])
    if len(tl):
        steps = steps[steps["step"].isin(set(window(trace, options).steps))]
    rows = []
    dev: Any
    for (dev, series), grp in tl.groupby(["device", "series"], sort=True):
        t = grp["ts_ns"].to_numpy()
        b = grp["bytes"].to_numpy()
        for step, lo, hi in steps[["step", "start_ns", "end_ns"]].itertuples(index=False):
            first = int(np.searchsorted(t, lo, side="left"))
            stop = int(np.searchsorted(t, hi, side="left"))
            peak_b = peak_t = peak_op = None
            if stop > first:
                i = first + _first_max(b[first:stop])
                peak_b, peak_t = int(b[i]), int(t[i])
                peak_op = op_at(trace, peak_t)
            rows.append(
                {
                    "device": int(dev),
                    "series": str(series),
                    "step": int(step),
                    "start_ns": int(lo),
                    "end_ns": int(hi),
                    "at_start_bytes": int(b[first - 1]) if first > 0 else None,
                    "peak_bytes": peak_b,
                    "peak_ts_ns": peak_t,
                    "peak_op": peak_op,
                    "at_end_bytes": int(b[stop - 1]) if stop > 0 else None,
                }
            )
    out = pd.DataFrame(rows, columns=list(STEP_PEAK_COLUMNS))
    for col in _NULLABLE_INT:
        out[col] = pd.array(out[col].tolist(), dtype="Int64")
    return out


@dataclass(frozen=True)
class MemoryResult:
    """Memory views of one rank."""

    peaks: tuple[SeriesPeak, ...]
    steps: pd.DataFrame
    """:func:`step_peaks`."""
    timeline: pd.DataFrame
    """:func:`memory_timeline`."""
    notes: tuple[str, ...]


def memory_analysis(trace: Trace, options: AnalysisOptions | None = None) -> MemoryResult:
    """Peaks per device and per step, the timeline, and a note when there are no samples."""
    options = options or AnalysisOptions()
    tl = memory_timeline(trace)
    notes = () if len(tl) else (NOTE_NO_MEMORY,)
    return MemoryResult(tuple(peaks(trace)), step_peaks(trace, options), tl, notes)
