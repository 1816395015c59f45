"""Where the GPU waits: per-stream idle breakdown (HTA) and the GPU-wide idle view (gpuscope).

Definitions are in ``docs/idle-and-launch.md``; in short:

**Per stream (HTA-compatible, metrics.md §8).**  Events = the window's GPU events (§2) of kind
kernel, memcpy or memset.  Per stream, in start order, each event ``e`` after the first defines
one *idle interval* ``e.start − previous.end`` (the previous event in start order, not the
running maximum, so overlaps give negative intervals).  Its category:

    ====================  ==============================================================
    ``host_wait``         the runtime call that launched ``e`` started after the previous
                          event ended (the CPU enqueued too late)
    ``kernel_wait``       otherwise, interval < ``options.consecutive_kernel_delay_ns``
    ``other``             everything else (and the stream's first event, interval 0 here)
    ====================  ==============================================================

``idle_ns`` = Σ intervals per (stream, category); ``ratio`` = that ÷ Σ over the stream's
categories (NaN when the stream's total is 0).  Only categories that occur are listed.

**GPU-wide (gpuscope).**  Idle = time in the GPU span (first start → last end of the window's
GPU events) when no stream runs anything.  Each gap is classified like HTA but across
streams (``host_wait`` when the op that ends the gap was launched after the gap began), and
every idle nanosecond is attributed to what the launching CPU threads were doing at that
moment (:data:`CPU_ACTIVITIES`, first match wins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.memo import TraceMemo
from analyzers.options import AnalysisOptions
from analyzers.temporal import typed_intervals
from analyzers.window import (
    gpu_host_link,
    gpu_launch_rows,
    host_by_correlation,
    host_threads,
    value_bits,
    value_mask,
    window_rows,
)
from collectors.arrays import dense_codes, sorted_unique
from collectors.model import GPU_WORK_KINDS, LAUNCH_CATS, Trace

IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")

CPU_ACTIVITIES = (
    "data_loading",
    "optimizer",
    "sync",
    "cuda_api",
    "cpu_op",
    "python",
    "unattributed",
)
"""Attribution of GPU-wide idle time, in priority order (the first that is active wins):

- ``data_loading``: inside a non-API host event whose name contains ``DataLoader`` (PyTorch's
  ``enumerate(DataLoader)#...__next__``) or starts with ``data_load`` (case-insensitive);
- ``optimizer``: inside a non-API host event whose name contains ``optimizer`` or
  ``zero_grad`` (case-insensitive: ``Optimizer.step#Adam.step``, ``## optimizer ##``);
- ``sync``: inside a CUDA/HIP runtime or driver call that blocks the CPU: names containing
  ``Synchronize`` (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cuCtxSynchronize``,
  ``hipDeviceSynchronize``, ``hipStreamSynchronize``, ``hipEventSynchronize``...) and the
  blocking copies ``cudaMemcpy``, ``cudaMemcpy2D``, ``cudaMemcpy3D``, ``cuMemcpyHtoD/DtoH/DtoD``
  and their HIP peers ``hipMemcpy``, ``hipMemcpy2D``, ``hipMemcpy3D``,
  ``hipMemcpyHtoD/DtoH/DtoD`` and ``hipMemcpyWithStream`` (a copy then a stream synchronize:
  PyTorch's blocking copy on ROCm);
- ``cuda_api``: inside any other runtime/driver call (launches, allocations, event queries);
- ``cpu_op``: inside any other recorded host event (framework operators: Kineto ``cpu_op``);
- ``python``: inside a ``python_function`` event, a user annotation (``record_function``
  range) or a step (``ProfilerStep#N``) with no operator or API call active: the CPU runs
  Python/framework code between operators;
- ``unattributed``: none of the above (outside every step and event).

Only the threads that launched at least one GPU event are considered (all host threads when
the trace has no correlation ids).
"""

_DATA_LOADING = re.compile(r"DataLoader|^data_load", re.IGNORECASE)
_OPTIMIZER = re.compile(r"optimizer|zero_grad", re.IGNORECASE)
_SYNC = re.compile(
    r"Synchronize|^(cuda|hip)Memcpy(2D|3D)?(_v\d+)?$|^cuMemcpy(DtoH|HtoD|DtoD)(_v\d+)?$"
    r"|^hipMemcpy(DtoH|HtoD|DtoD|WithStream)$"
)
STEP_MARKER = re.compile(r"^ProfilerStep#\d+")
"""Names of ProfilerStep markers (never counted as operators)."""

NOTE_NO_CORRELATION = (
    "no correlation ids link GPU events to CPU launch calls: host-wait classification, "
    "launch statistics and queue length are not available"
)
NOTE_NO_RUNTIME = (
    "no CUDA runtime/driver events in the trace: host-wait classification, launch statistics "
    "and queue length are not available"
)
NOTE_NO_GPU = "no GPU events in the trace: idle, launch and host-bound analyses are empty"


@dataclass(frozen=True)
class GpuIdle:
    """GPU-wide idle time of one rank (all ``*_ns`` exact integers)."""

    span_ns: int
    """Last end − first start of the window's GPU events (0 when there are none)."""
    busy_ns: int
    """Length of the union of all GPU events (all streams)."""
    idle_ns: int
    """``span_ns − busy_ns``: time when no stream runs anything."""
    by_cause: dict[str, int]
    """Idle time per gap category (:data:`IDLE_CATEGORIES`), GPU-wide."""
    by_cpu_activity: dict[str, int]
    """Idle time per :data:`CPU_ACTIVITIES` entry; sums to ``idle_ns``."""
    gaps: pd.DataFrame = field(repr=False)
    """One row per gap: start_ns, end_ns, idle_ns, category, launch_ns (-1 unknown)."""


@dataclass(frozen=True)
class IdleResult:
    """Both idle views for one rank, plus notes on what the trace could not support."""

    per_stream: pd.DataFrame
    """HTA's breakdown: stream, category, idle_ns, intervals, ratio."""
    gpu: GpuIdle
    notes: tuple[str, ...]


# --------------------------------------------------------------------------- helpers

_MAX = np.iinfo(np.int64).max


def launch_ns_of(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Start of the launching call (:func:`collectors.linking.launching_calls`) of each
    ``trace.gpu`` row of *rows*, -1 for none.  As the lookup of the rows' correlation ids in a
    table of call starts (pandas' ``map``) has always given it: through float64 when some row
    has no call (exact below 2**53 ns)."""
    lr = gpu_launch_rows(trace)[rows]
    out = np.full(rows.size, -1, dtype=np.int64)
    hit = lr >= 0
    out[hit] = trace.host["start_ns"].to_numpy()[lr[hit]]
    if not hit.all():
        out[hit] = out[hit].astype(np.float64).astype(np.int64)
    return out


def trace_notes(trace: Trace) -> tuple[str, ...]:
    """At most one line saying which launch-related analyses the trace cannot support."""
    g = trace.gpu
    if not (g["stream"].to_numpy() != -1).any():
        return (NOTE_NO_GPU,)
    h = trace.host
    if not value_mask(h["cat"], LAUNCH_CATS).any():
        return (NOTE_NO_RUNTIME,)
    if not ((g["correlation"].to_numpy() >= 0).any() and (h["correlation"].to_numpy() >= 0).any()):
        return (NOTE_NO_CORRELATION,)
    return ()


def unlaunched_note(trace: Trace, rows: np.ndarray) -> str | None:
    """A note when some of the ``trace.gpu`` rows *rows* (the window's GPU events) have no
    launching host call (or None)."""
    if not rows.size:
        return None
    lo, hi = gpu_host_link(trace)
    missing = int((hi[rows] == lo[rows]).sum())
    if missing == 0 or missing == rows.size:
        return None
    return (
        f"{missing} of {rows.size} GPU events have no launching host call: the idle gaps before "
        "them cannot be host_wait"
    )


# --------------------------------------------------------------------------- host threads


def launching_threads(trace: Trace, rows: np.ndarray) -> np.ndarray | None:
    """Codes (:func:`host_threads`) of the threads that launched the ``trace.gpu`` rows *rows*:
    those of the host rows sharing a correlation id with one of them; None (every thread)
    when there is none, or when they are all the trace's threads."""
    lo, hi = gpu_host_link(trace)
    lo, n = lo[rows], hi[rows] - lo[rows]
    if not n.any():
        return None
    if int(n.max()) <= 1:
        at = lo[n > 0]
    else:
        at = np.repeat(lo, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    codes = host_threads(trace)
    threads = sorted_unique(codes[host_by_correlation(trace)[1][at]])
    return None if threads.size == int(codes.max()) + 1 else threads


def thread_rows(trace: Trace, threads: np.ndarray | None) -> np.ndarray:
    """Mask of the host rows on *threads* (:func:`launching_threads`; None: every row)."""
    codes = host_threads(trace)
    if threads is None:
        return np.ones(codes.size, dtype=bool)
    lut = np.zeros(int(codes.max()) + 1 if codes.size else 0, dtype=bool)
    lut[threads] = True
    return lut[codes]


@TraceMemo
def host_cache(trace: Trace) -> dict[object, Any]:
    """Per-Trace results keyed by thread set (:func:`activity_sets`, top-level ops)."""
    return {}


@TraceMemo
def activity_masks(trace: Trace) -> dict[str, np.ndarray]:
    """The host rows of each :data:`CPU_ACTIVITIES` entry but ``unattributed`` (before the
    priority is applied; ``python`` without the step windows), ``step`` (the markers) and
    ``op_candidate`` (neither an API call, a ``python_function`` event nor a step marker: what
    :func:`analyzers.host_bound.top_level_ops` looks at)."""
    host = trace.host
    # each distinct name and category looked at once: a bit per pattern, one gather per column
    patterns = (STEP_MARKER, _DATA_LOADING, _OPTIMIZER, _SYNC)
    name = value_bits(host["name"], [p.search for p in patterns])
    python = ("python_function", "user_annotation")
    tests = [LAUNCH_CATS.__contains__, python.__contains__, "python_function".__eq__]
    cat = value_bits(host["cat"], tests)
    api = (cat & 1) != 0
    step = (name & 1) != 0
    is_py = ((cat & 2) != 0) & ~step
    return {
        "data_loading": ((name & 2) != 0) & ~api,
        "optimizer": ((name & 4) != 0) & ~api,
        "sync": api & ((name & 8) != 0),
        "cuda_api": api,
        "cpu_op": ~api & ~is_py & ~step,
        "python": is_py,
        "step": step,
        "op_candidate": ~api & ((cat & 4) == 0) & ~step,
    }


class ActivitySets(dict[str, iv.Intervals]):
    """CPU activity → merged host intervals, with their prefix unions computed once
    (:func:`analyzers.intervals.prefix_unions`, what every attribution of them needs)."""

    @cached_property
    def unions(self) -> list[iv.Intervals] | None:
        return iv.prefix_unions([self[name] for name in CPU_ACTIVITIES[:-1]])


def activity_sets(trace: Trace, threads: np.ndarray | None) -> ActivitySets:
    """:func:`host_activity_intervals` of the host rows on *threads* (memoised per set)."""
    key = ("activity", None if threads is None else threads.tobytes())
    cache = host_cache(trace)
    if key not in cache:
        on = thread_rows(trace, threads)
        masks = activity_masks(trace)
        s = trace.host["start_ns"].to_numpy()
        e = trace.host["end_ns"].to_numpy()
        steps = trace.steps()
        out = ActivitySets()
        for name in CPU_ACTIVITIES[:-1]:
            m = masks[name] & on
            if name == "python":
                out[name] = iv.merge(
                    np.concatenate([s[m], steps["start_ns"].to_numpy()]),
                    np.concatenate([e[m], steps["end_ns"].to_numpy()]),
                )
            else:
                out[name] = iv.merge(s[m], e[m])
        out["unattributed"] = iv.empty()
        cache[key] = out
    return cast("ActivitySets", cache[key])


# --------------------------------------------------------------------------- per stream


def stream_idle_intervals(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's idle intervals, one row per GPU event after the first of its stream.

    Columns: stream, start_ns (of the event), prev_end_ns, idle_ns (may be negative),
    launch_ns (start of the launching host call, -1 unknown), category.
    """
    cols = ["stream", "start_ns", "prev_end_ns", "idle_ns", "launch_ns"]
    got = _stream_intervals(trace, options or AnalysisOptions())
    if got is None:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols} | {"category": []})
    frame = pd.DataFrame(dict(zip(cols, got[:-1], strict=True)))
    return frame.assign(category=_CATEGORY_LABELS[got[-1]])


_CATEGORY_LABELS = np.array(IDLE_CATEGORIES, dtype=object)
_HOST_WAIT, _KERNEL_WAIT, _OTHER = range(3)


def _categories(
    launch: np.ndarray, prev_end: np.ndarray, idle: np.ndarray, options: AnalysisOptions
) -> np.ndarray:
    """Index into :data:`IDLE_CATEGORIES` of each interval (module docstring)."""
    return np.where(
        (launch >= 0) & (launch > prev_end),
        _HOST_WAIT,
        np.where(idle < options.consecutive_kernel_delay_ns, _KERNEL_WAIT, _OTHER),
    )


def _stream_intervals(trace: Trace, options: AnalysisOptions) -> tuple[np.ndarray, ...] | None:
    """:func:`stream_idle_intervals` as arrays (the category as codes), None without events."""
    gpu = trace.gpu
    rows = window_rows(trace, options)
    rows = rows[value_mask(gpu["kind"], GPU_WORK_KINDS)[rows]]
    if not rows.size:
        return None
    stream = gpu["stream"].to_numpy()[rows]
    start = gpu["start_ns"].to_numpy()[rows]
    order = np.lexsort((start, stream))
    stream, start = stream[order], start[order]
    end = gpu["end_ns"].to_numpy()[rows][order]
    launch = launch_ns_of(trace, rows)[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = stream[1:] != stream[:-1]
    prev_end = np.empty(rows.size, dtype=np.int64)
    prev_end[0] = 0
    prev_end[1:] = end[:-1]
    idle = start - prev_end
    cat = np.where(first, _OTHER, _categories(launch, prev_end, idle, options))
    # the first event of a stream has no interval; HTA counts it (with NaN) under "other"
    idle = np.where(first, 0, idle).astype(np.int64)
    prev_end = np.where(first, -1, prev_end).astype(np.int64)
    return stream, start, prev_end, idle, launch, cat


def stream_idle_breakdown(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's idle-time breakdown per (stream, category) (metrics.md §8).

    Columns: stream, category, idle_ns (Σ intervals, int64), intervals (count, the stream's
    first event counted under ``other``), ratio (idle_ns ÷ the stream's total; NaN if 0).
    """
    got = _stream_intervals(trace, options or AnalysisOptions())
    if got is None:
        return pd.DataFrame(
            {
                "stream": pd.Series(dtype=np.int64),
                "category": pd.Series(dtype=object),
                "idle_ns": pd.Series(dtype=np.int64),
                "intervals": pd.Series(dtype=np.int64),
                "ratio": pd.Series(dtype=np.float64),
            }
        )
    stream, _, _, idle, _, cat = got
    # streams are sorted: one (stream, category) group per distinct key, in that order
    key = dense_codes(stream) * 3 + cat
    order = np.argsort(key, kind="stable")
    key, idle = key[order], idle[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sums = np.add.reduceat(idle, first)
    counts = np.diff(np.r_[first, key.size])
    group_stream = stream[order][first]
    s_first = np.flatnonzero(np.r_[True, group_stream[1:] != group_stream[:-1]])
    total = np.repeat(np.add.reduceat(sums, s_first), np.diff(np.r_[s_first, first.size]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = sums.astype(np.float64) / total.astype(np.float64)
    ratio[total == 0] = np.nan
    return pd.DataFrame(
        {
            "stream": group_stream.astype(np.int64),
            "category": _CATEGORY_LABELS[key[first] % 3],
            "idle_ns": sums.astype(np.int64),
            "intervals": counts.astype(np.int64),
            "ratio": ratio,
        }
    )


# --------------------------------------------------------------------------- GPU-wide


def gpu_idle_gaps(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Gaps of the GPU-wide busy union inside the GPU span, classified like HTA.

    Columns: start_ns, end_ns, idle_ns, launch_ns, category.  ``launch_ns`` is the earliest
    launch-call start among the GPU events that start exactly at the gap's end (-1 unknown);
    ``host_wait`` when ``launch_ns > start_ns``; else ``kernel_wait`` when the gap is shorter
    than ``options.consecutive_kernel_delay_ns``; else ``other``.
    """
    options = options or AnalysisOptions()
    rows = window_rows(trace, options)
    return _gaps_frame(gap_arrays(trace, rows, typed_intervals(trace, options).busy, options))


Gaps = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""start_ns, end_ns, launch_ns and category code (into :data:`IDLE_CATEGORIES`) per gap."""


def gap_arrays(
    trace: Trace, rows: np.ndarray, busy: iv.Intervals, options: AnalysisOptions
) -> Gaps:
    """The gaps of *busy*, the merged intervals of the ``trace.gpu`` rows *rows*, classified
    as :func:`gpu_idle_gaps` describes."""
    if not rows.size:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    s, e = busy
    gap_s, gap_e = e[:-1], s[1:]
    starts = trace.gpu["start_ns"].to_numpy()[rows]
    ln = launch_ns_of(trace, rows)
    # earliest known launch among the events starting exactly at each gap end
    at = np.searchsorted(gap_e, starts)
    hit = at < gap_e.size
    hit[hit] = gap_e[at[hit]] == starts[hit]
    first = np.full(gap_e.size, _MAX, dtype=np.int64)
    np.minimum.at(first, at[hit], np.where(ln >= 0, ln, _MAX)[hit])
    gl = np.where(first == _MAX, -1, first)
    return gap_s, gap_e, gl, _categories(gl, gap_s, gap_e - gap_s, options)


def _gaps_frame(gaps: Gaps) -> pd.DataFrame:
    gap_s, gap_e, gl, cat = gaps
    return pd.DataFrame(
        {
            "start_ns": gap_s,
            "end_ns": gap_e,
            "idle_ns": gap_e - gap_s,
            "launch_ns": gl,
            "category": pd.Categorical.from_codes(
                cat.astype(np.int8), dtype=pd.CategoricalDtype(list(IDLE_CATEGORIES))
            ),
        }
    )


def attribute_idle(idle: iv.Intervals, activity: dict[str, iv.Intervals]) -> dict[str, int]:
    """Split *idle* over the activities in :data:`CPU_ACTIVITIES` order (first match wins)."""
    return {k: int(v[0]) for k, v in attribute_by_window(idle, activity, None, None).items()}


def attribute_by_window(
    idle: iv.Intervals,
    activity: dict[str, iv.Intervals],
    lo: np.ndarray | None,
    hi: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """:func:`attribute_idle` of *idle* ∩ each window ``[lo[i], hi[i])`` (None: the whole
    line, one value): activity → ns per window (:func:`analyzers.intervals.first_match`)."""
    sets = [activity[name] for name in CPU_ACTIVITIES[:-1]]
    unions = activity.unions if isinstance(activity, ActivitySets) else None
    return dict(zip(CPU_ACTIVITIES, iv.first_match(idle, sets, lo, hi, unions), strict=True))


def gpu_idle(trace: Trace, options: AnalysisOptions | None = None) -> GpuIdle:
    """GPU-wide idle time, its gap categories and its CPU-activity attribution."""
    options = options or AnalysisOptions()
    rows = window_rows(trace, options)
    zero_cause = {c: 0 for c in IDLE_CATEGORIES}
    zero_act = {c: 0 for c in CPU_ACTIVITIES}
    if not rows.size:
        frame = _gaps_frame(gap_arrays(trace, rows, iv.empty(), options))
        return GpuIdle(0, 0, 0, zero_cause, zero_act, frame)
    busy = typed_intervals(trace, options).busy
    gaps = gap_arrays(trace, rows, busy, options)
    span = int(busy[1][-1] - busy[0][0])
    busy_ns = iv.total(busy)
    idle = gaps[1] - gaps[0]
    by_cause = {c: int(idle[gaps[3] == i].sum()) for i, c in enumerate(IDLE_CATEGORIES)}
    acts = activity_sets(trace, launching_threads(trace, rows))
    by_act = attribute_idle((gaps[0], gaps[1]), acts)
    return GpuIdle(span, busy_ns, span - busy_ns, by_cause, by_act, _gaps_frame(gaps))


def idle_analysis(trace: Trace, options: AnalysisOptions | None = None) -> IdleResult:
    """Both idle views for one rank, with notes for what the trace cannot support."""
    options = options or AnalysisOptions()
    notes = list(trace_notes(trace))
    extra = unlaunched_note(trace, window_rows(trace, options)) if not notes else None
    if extra:
        notes.append(extra)
    return IdleResult(stream_idle_breakdown(trace, options), gpu_idle(trace, options), tuple(notes))
