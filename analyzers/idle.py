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

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.memo import TraceMemo
from analyzers.options import AnalysisOptions
from analyzers.window import gpu_events
from collectors.arrays import sorted_unique
from collectors.linking import launch_mask, launching_calls
from collectors.model import GPU_WORK_KINDS, LAUNCH_CATS, Trace, names_matching

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


@TraceMemo
def launch_start_by_correlation(trace: Trace) -> pd.Series:
    """Start (ns) of the launching call of each correlation id (index: correlation;
    :func:`collectors.linking.launching_calls`); computed once per Trace (not to be changed)."""
    h = trace.host
    ids = sorted_unique(h["correlation"].to_numpy()[launch_mask(h)])
    rows = launching_calls(h, ids)
    return pd.Series(h["start_ns"].to_numpy()[rows], index=pd.Index(ids, dtype=np.int64))


def trace_notes(trace: Trace) -> tuple[str, ...]:
    """At most one line saying which launch-related analyses the trace cannot support."""
    g = trace.gpu
    if not (g["stream"] != -1).any():
        return (NOTE_NO_GPU,)
    h = trace.host
    if not bool(h["cat"].isin(LAUNCH_CATS).any()):
        return (NOTE_NO_RUNTIME,)
    if not ((g["correlation"] >= 0).any() and (h["correlation"] >= 0).any()):
        return (NOTE_NO_CORRELATION,)
    return ()


def unlaunched_note(trace: Trace, g: pd.DataFrame) -> str | None:
    """A note when some window GPU events have no launching host call (or None)."""
    if g.empty:
        return None
    h = trace.host
    linked = g["correlation"].isin(h.loc[h["correlation"] >= 0, "correlation"].unique())
    missing = int((~linked).sum())
    if missing == 0 or missing == len(g):
        return None
    return (
        f"{missing} of {len(g)} GPU events have no launching host call: the idle gaps before "
        "them cannot be host_wait"
    )


# --------------------------------------------------------------------------- per stream


def stream_idle_intervals(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's idle intervals, one row per GPU event after the first of its stream.

    Columns: stream, start_ns (of the event), prev_end_ns, idle_ns (may be negative),
    launch_ns (start of the launching host call, -1 unknown), category.
    """
    options = options or AnalysisOptions()
    g = gpu_events(trace, options)
    g = g[g["kind"].isin(GPU_WORK_KINDS)]
    cols = ["stream", "start_ns", "prev_end_ns", "idle_ns", "launch_ns", "category"]
    if g.empty:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols[:-1]} | {"category": []})
    launch = launch_start_by_correlation(trace)
    corr = g["correlation"].to_numpy()
    launch_ns = (
        pd.Series(corr).map(launch).fillna(-1).to_numpy(dtype=np.int64, copy=True)
        if len(launch)
        else np.full(len(g), -1, dtype=np.int64)
    )
    launch_ns[corr < 0] = -1
    df = pd.DataFrame(
        {
            "stream": g["stream"].to_numpy(),
            "start_ns": g["start_ns"].to_numpy(),
            "end_ns": g["end_ns"].to_numpy(),
            "launch_ns": launch_ns,
        }
    )
    df = df.sort_values(["stream", "start_ns"], kind="stable").reset_index(drop=True)
    first = np.ones(len(df), dtype=bool)
    s = df["stream"].to_numpy()
    first[1:] = s[1:] != s[:-1]
    prev_end = np.empty(len(df), dtype=np.int64)
    prev_end[0] = 0
    prev_end[1:] = df["end_ns"].to_numpy()[:-1]
    idle = df["start_ns"].to_numpy() - prev_end
    host = (df["launch_ns"].to_numpy() >= 0) & (df["launch_ns"].to_numpy() > prev_end)
    cat = np.where(
        host,
        "host_wait",
        np.where(idle < options.consecutive_kernel_delay_ns, "kernel_wait", "other"),
    )
    # the first event of a stream has no interval; HTA counts it (with NaN) under "other"
    cat = np.where(first, "other", cat)
    idle = np.where(first, 0, idle)
    prev_end = np.where(first, -1, prev_end)
    return pd.DataFrame(
        {
            "stream": df["stream"].to_numpy(),
            "start_ns": df["start_ns"].to_numpy(),
            "prev_end_ns": prev_end.astype(np.int64),
            "idle_ns": idle.astype(np.int64),
            "launch_ns": df["launch_ns"].to_numpy(),
            "category": cat,
        }
    )


def stream_idle_breakdown(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's idle-time breakdown per (stream, category) (metrics.md §8).

    Columns: stream, category, idle_ns (Σ intervals, int64), intervals (count, the stream's
    first event counted under ``other``), ratio (idle_ns ÷ the stream's total; NaN if 0).
    """
    ivs = stream_idle_intervals(trace, options)
    if ivs.empty:
        return pd.DataFrame(
            {
                "stream": pd.Series(dtype=np.int64),
                "category": pd.Series(dtype=object),
                "idle_ns": pd.Series(dtype=np.int64),
                "intervals": pd.Series(dtype=np.int64),
                "ratio": pd.Series(dtype=np.float64),
            }
        )
    out = (
        ivs.groupby(["stream", "category"], sort=True)["idle_ns"]
        .agg(idle_ns="sum", intervals="size")
        .reset_index()
    )
    total = out.groupby("stream")["idle_ns"].transform("sum")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = out["idle_ns"].to_numpy(dtype=np.float64) / total.to_numpy(dtype=np.float64)
    ratio[total.to_numpy() == 0] = np.nan
    out["ratio"] = ratio
    out["idle_ns"] = out["idle_ns"].astype(np.int64)
    out["intervals"] = out["intervals"].astype(np.int64)
    order = {c: i for i, c in enumerate(IDLE_CATEGORIES)}
    out = out.sort_values(
        ["stream", "category"], key=lambda c: c.map(order) if c.name == "category" else c
    )
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- GPU-wide


def gpu_idle_gaps(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Gaps of the GPU-wide busy union inside the GPU span, classified like HTA.

    Columns: start_ns, end_ns, idle_ns, launch_ns, category.  ``launch_ns`` is the earliest
    launch-call start among the GPU events that start exactly at the gap's end (-1 unknown);
    ``host_wait`` when ``launch_ns > start_ns``; else ``kernel_wait`` when the gap is shorter
    than ``options.consecutive_kernel_delay_ns``; else ``other``.
    """
    options = options or AnalysisOptions()
    return classify_gaps(trace, gpu_events(trace, options), options)


def classify_gaps(trace: Trace, g: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """The gaps of the busy union of the GPU events *g* (rows of ``trace.gpu``), classified as
    :func:`gpu_idle_gaps` does; the same columns."""
    cols = ("start_ns", "end_ns", "idle_ns", "launch_ns")
    if g.empty:
        return pd.DataFrame({c: pd.Series(dtype=np.int64) for c in cols} | {"category": []})
    s, e = iv.merge(g["start_ns"].to_numpy(), g["end_ns"].to_numpy())
    gap_s, gap_e = e[:-1], s[1:]
    launch = launch_start_by_correlation(trace)
    corr = g["correlation"].to_numpy()
    ln = (
        pd.Series(corr).map(launch).fillna(-1).to_numpy(dtype=np.int64, copy=True)
        if len(launch)
        else None
    )
    if ln is None:
        ln = np.full(len(g), -1, dtype=np.int64)
    ln[corr < 0] = -1
    # earliest known launch among the events starting exactly at each gap end
    starts = g["start_ns"].to_numpy()
    at_end = pd.DataFrame({"t": starts, "l": np.where(ln >= 0, ln, np.iinfo(np.int64).max)})
    first_launch = at_end.groupby("t")["l"].min()
    gl = first_launch.reindex(gap_e).to_numpy(dtype=np.int64)
    gl = np.where(gl == np.iinfo(np.int64).max, -1, gl)
    idle = gap_e - gap_s
    cat = np.where(
        (gl >= 0) & (gl > gap_s),
        "host_wait",
        np.where(idle < options.consecutive_kernel_delay_ns, "kernel_wait", "other"),
    )
    return pd.DataFrame(
        {"start_ns": gap_s, "end_ns": gap_e, "idle_ns": idle, "launch_ns": gl, "category": cat}
    )


def launch_threads(trace: Trace, g: pd.DataFrame) -> pd.DataFrame:
    """Host rows on the threads that launched at least one of the GPU events *g*.

    Only the columns the idle analyses read are kept (name, cat, start_ns, end_ns, pid, tid,
    correlation).
    """
    h = trace.host[["name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation"]]
    corr = g["correlation"].to_numpy()
    launchers = h[h["correlation"].isin(corr[corr >= 0])]
    if launchers.empty:
        return h
    threads = pd.MultiIndex.from_arrays([launchers["pid"], launchers["tid"]]).unique()
    return h[pd.MultiIndex.from_arrays([h["pid"], h["tid"]]).isin(threads)]


def host_activity_intervals(trace: Trace, host: pd.DataFrame) -> dict[str, iv.Intervals]:
    """Merged host intervals per :data:`CPU_ACTIVITIES` entry (before priority is applied).

    ``python`` holds python_function events, user annotations and the step windows;
    ``unattributed`` is empty (it is the remainder).
    """
    s = host["start_ns"].to_numpy()
    e = host["end_ns"].to_numpy()
    api = np.asarray(host["cat"].isin(LAUNCH_CATS), dtype=bool)
    step = names_matching(host["name"], STEP_MARKER.search)
    is_dl = names_matching(host["name"], _DATA_LOADING.search) & ~api
    is_opt = names_matching(host["name"], _OPTIMIZER.search) & ~api
    is_sync = api & names_matching(host["name"], _SYNC.search)
    is_py = np.asarray(host["cat"].isin(("python_function", "user_annotation")), dtype=bool) & ~step
    is_op = ~api & ~is_py & ~step
    steps = trace.steps()
    py_s = np.concatenate([s[is_py], steps["start_ns"].to_numpy()])
    py_e = np.concatenate([e[is_py], steps["end_ns"].to_numpy()])
    return {
        "data_loading": iv.merge(s[is_dl], e[is_dl]),
        "optimizer": iv.merge(s[is_opt], e[is_opt]),
        "sync": iv.merge(s[is_sync], e[is_sync]),
        "cuda_api": iv.merge(s[api], e[api]),
        "cpu_op": iv.merge(s[is_op], e[is_op]),
        "python": iv.merge(py_s, py_e),
        "unattributed": iv.empty(),
    }


def attribute_idle(idle: iv.Intervals, activity: dict[str, iv.Intervals]) -> dict[str, int]:
    """Split *idle* over the activities in :data:`CPU_ACTIVITIES` order (first match wins)."""
    remaining = iv.merge(*idle)
    out: dict[str, int] = {}
    for name in CPU_ACTIVITIES[:-1]:
        took = iv.intersect(remaining, activity[name])
        out[name] = iv.total(took)
        remaining = iv.subtract(remaining, took)
    out["unattributed"] = iv.total(remaining)
    return out


def gpu_idle(trace: Trace, options: AnalysisOptions | None = None) -> GpuIdle:
    """GPU-wide idle time, its gap categories and its CPU-activity attribution."""
    options = options or AnalysisOptions()
    g = gpu_events(trace, options)
    gaps = gpu_idle_gaps(trace, options)
    zero_cause = {c: 0 for c in IDLE_CATEGORIES}
    zero_act = {c: 0 for c in CPU_ACTIVITIES}
    if g.empty:
        return GpuIdle(0, 0, 0, zero_cause, zero_act, gaps)
    busy = iv.merge(g["start_ns"].to_numpy(), g["end_ns"].to_numpy())
    span = int(busy[1][-1] - busy[0][0])
    busy_ns = iv.total(busy)
    by_cause = zero_cause | {
        str(k): int(v) for k, v in gaps.groupby("category")["idle_ns"].sum().items()
    }
    host = launch_threads(trace, g)
    acts = host_activity_intervals(trace, host)
    by_act = attribute_idle((gaps["start_ns"].to_numpy(), gaps["end_ns"].to_numpy()), acts)
    return GpuIdle(span, busy_ns, span - busy_ns, by_cause, by_act, gaps)


def idle_analysis(trace: Trace, options: AnalysisOptions | None = None) -> IdleResult:
    """Both idle views for one rank, with notes for what the trace cannot support."""
    options = options or AnalysisOptions()
    notes = list(trace_notes(trace))
    extra = unlaunched_note(trace, gpu_events(trace, options)) if not notes else None
    if extra:
        notes.append(extra)
    return IdleResult(stream_idle_breakdown(trace, options), gpu_idle(trace, options), tuple(notes))
