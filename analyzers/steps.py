"""Steps on the GPU's clock: which GPU work each ProfilerStep launched, and when the GPU ran it.

A step is a ``ProfilerStep#N`` annotation ``[start_ns, end_ns)`` on the host clock (the range
``torch.profiler`` records around one ``step()``); the steps listed are those of the window
(:func:`analyzers.window.window`: all but the last by default, every step with
``--all-events``).  The GPU may run a step's work long after the CPU left the step (the GPU
*lags*), so per-step GPU figures follow the work, not the host range (docs/metrics.md §7):

**Step events** ``S``: every GPU event of the trace (a ``gpu`` row with a stream, as
:mod:`analyzers.window`'s, but not only those of the window: work launched in the last step
still occupies the GPU), except *work launched before the profiler started* (below) unless
``options.include_prelaunched``.  Each is *placed* at an instant:

- the start of its launching call (:func:`collectors.linking.launching_calls`, by correlation);
- without one, its own GPU start (the call is not in the trace: no correlation id, or the row
  was not recorded);
- *prelaunched* work — a correlation id ≥ 0 with no launching call, smaller than every launch
  call's id on the host (ids grow with launch order, so it was launched before the first
  recorded call: before the profiler started) — is left out of ``S``; with
  ``include_prelaunched`` it is placed at its GPU start like any other unlinked event.

An event belongs to the step whose ``[start, end)`` holds its instant (:func:`step_positions`);
``G_N`` = the events of step ``N``.  **The step on the GPU clock** is ``[g_N, E_N)``:

- ``E_N`` = the latest end of ``G_N`` and of every earlier step's work (a running maximum);
- ``g_N`` = ``E`` of the previous step with work (the GPU starts step ``N`` when it has finished
  the steps before it); for the first step with work, the later of its host start and the end
  of the GPU work (any event) that started before its first event — but never after its
  first event's start.

So consecutive steps tile the GPU timeline; a step without GPU work gets no interval.  With
``busy``, ``P`` and ``C`` the merged intervals of ``S``, of its COMPUTATION and of its
COMMUNICATION events (:mod:`analyzers.classify`), per step:

- ``gpu_duration_ns`` = ``E − g``; ``compute_ns`` = |P ∩ [g, E)|;
  ``exposed_comm_ns`` = |(C \\ P) ∩ [g, E)|; ``idle_ns`` = ``gpu_duration − |busy ∩ [g, E)|``;
  the rest, ``gpu_duration − compute − exposed_comm − idle``, is MEMORY/OTHER-only time;
- ``work_events``, ``work_ns``: the kernels, memcpys and memsets of ``G_N``, and Σ of their
  durations;
- ``launch_lag_ns``: the median over ``G_N``'s events placed by a launching call of
  (GPU start − call start), rounded to the ns; ``steps_behind`` = ``launch_lag_ns ÷
  duration_ns``: how many steps (of this step's host length) the GPU runs behind the CPU.

``duration_ns`` stays the host range's length (the step time).  The HTA-compatible breakdown
(:mod:`analyzers.temporal`) keeps HTA's definition over the window's events.

    ==================================================  ======  =======  =======  ====
    host steps #1 [0,100) #2 [100,200); #1 launches      g, E    compute  exposed  idle
    gemm [150,180) and nccl [170,230); #2 launches
    gemm [240,300)
    ==================================================  ======  =======  =======  ====
    step #1 (first: its host start 0, no earlier work)  0, 230  30       50       150
    step #2                                             230,300 60       0        10
    ==================================================  ======  =======  =======  ====

Everything is computed in one pass over all steps (sort, ``searchsorted``, cumulative sums).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.classify import COMMUNICATION, COMPUTATION, KERNEL_TYPES
from analyzers.distributions import sorted_by_group
from analyzers.memo import TraceMemo
from analyzers.options import AnalysisOptions
from analyzers.window import (
    gpu_launch_rows,
    gpu_type_codes,
    host_by_correlation,
    host_launch_mask,
    memoized,
    value_mask,
    window,
)
from collectors.linking import launch_mask, launching_calls
from collectors.model import GPU_WORK_KINDS

if TYPE_CHECKING:
    from collectors.model import Trace

STEP_COLUMNS = (
    "step",
    "start_ns",
    "end_ns",
    "duration_ns",
    "gpu_start_ns",
    "gpu_end_ns",
    "gpu_duration_ns",
    "compute_ns",
    "exposed_comm_ns",
    "idle_ns",
    "work_events",
    "work_ns",
    "launch_lag_ns",
    "steps_behind",
)
"""Columns of :func:`step_breakdown`; int64 except ``steps_behind`` (float64, NaN unknown);
``gpu_start_ns``/``gpu_end_ns``/``launch_lag_ns`` are -1 for a step without GPU work."""

PLACED_BY_LAUNCH = "launch"
PLACED_BY_GPU_START = "gpu start"

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def step_positions(t_ns: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the step ``[start, end)`` containing each instant (the last one starting at or
    before it), or -1; *starts* ascending; an instant < 0 (unknown) is in no step."""
    t = np.asarray(t_ns, dtype=np.int64)
    if not len(starts):
        return np.full(len(t), -1, dtype=np.int64)
    k = np.searchsorted(starts, t, side="right") - 1
    ok = (k >= 0) & (t >= 0) & (t < ends[np.maximum(k, 0)])
    return np.where(ok, k, -1).astype(np.int64)


def window_steps(trace: Trace, options: AnalysisOptions) -> pd.DataFrame:
    """``trace.steps()`` that start before the window's end (all of them when unfiltered)."""
    w = window(trace, options)
    steps = trace.steps()
    if w.filtered and w.end_ns is not None:
        steps = steps[steps["start_ns"].to_numpy() < w.end_ns]
    return steps.reset_index(drop=True)


def prelaunched_mask(trace: Trace, gpu: pd.DataFrame) -> np.ndarray:
    """Rows of *gpu* (rows of ``trace.gpu``) launched before the profiler started (module
    docstring): a correlation id ≥ 0, no launching call, and smaller than every launch call's."""
    h = trace.host
    lm = launch_mask(h)
    corr = gpu["correlation"].to_numpy()
    if not lm.any() or not len(corr):
        return np.zeros(len(corr), dtype=bool)
    first = int(h["correlation"].to_numpy()[lm].min())
    return (corr >= 0) & (corr < first) & (launching_calls(h, corr) < 0)


def placement(trace: Trace, gpu: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """Where each row of *gpu* (rows of ``trace.gpu``) is placed (module docstring).

    Columns (index of *gpu*): ``t_ns`` (the instant, -1 for excluded prelaunched work),
    ``launch_ns`` (its launching call's start, -1 none), ``prelaunched`` (bool).
    """
    h = trace.host
    rows = launching_calls(h, gpu["correlation"].to_numpy())
    launch = np.full(len(rows), -1, dtype=np.int64)
    hit = rows >= 0
    launch[hit] = h["start_ns"].to_numpy()[rows[hit]]
    pre = prelaunched_mask(trace, gpu)
    t = np.where(hit, launch, gpu["start_ns"].to_numpy()).astype(np.int64)
    if not options.include_prelaunched:
        t[pre] = -1
    return pd.DataFrame({"t_ns": t, "launch_ns": launch, "prelaunched": pre}, index=gpu.index)


_EVENT_COLUMNS = ["name", "kind", "stream", "start_ns", "end_ns", "correlation"]


@dataclass(frozen=True)
class StepEvents:
    """The step events ``S`` of a rank and the steps they belong to (module docstring).

    The events are given as arrays (one entry per event of ``S``, in ``trace.gpu`` order);
    :attr:`events` is the same as a table."""

    steps: pd.DataFrame
    """The window's steps in time order: step, start_ns, end_ns."""
    rows: np.ndarray
    """Position in ``trace.gpu`` of each event."""
    start: np.ndarray
    end: np.ndarray
    types: np.ndarray
    """Kernel type code (index into :data:`analyzers.classify.KERNEL_TYPES`)."""
    t_ns: np.ndarray
    """The instant that places the event."""
    launch_ns: np.ndarray
    """Start of the launching call (-1 none)."""
    pos: np.ndarray
    """Position in :attr:`steps` of the event's step (-1 none)."""
    busy: iv.Intervals
    compute: iv.Intervals
    comm: iv.Intervals
    gpu_start: np.ndarray
    """``g`` per step (-1 without GPU work)."""
    gpu_end: np.ndarray
    """``E`` per step (-1 without GPU work)."""
    prelaunched: pd.DataFrame
    """The rows of ``trace.gpu`` (with a stream) launched before the profiler started."""
    prelaunched_flags: np.ndarray = field(repr=False)
    """Per event: prelaunched (kept with ``include_prelaunched``)."""
    gpu: weakref.ref[pd.DataFrame] = field(repr=False, compare=False)
    """``trace.gpu`` (the table :attr:`rows` index), weakly: the memo holding this must not
    keep the table alive."""

    @cached_property
    def events(self) -> pd.DataFrame:
        """``S`` as rows of ``trace.gpu`` (same index) with name, kind, stream, start_ns,
        end_ns, correlation, and ``type``, ``t_ns``, ``launch_ns``, ``prelaunched``, ``pos``."""
        gpu = self.gpu()
        if gpu is None:
            raise ValueError("the trace of these step events is gone")
        ev = gpu.take(self.rows)[_EVENT_COLUMNS]
        return ev.assign(
            type=_TYPE_LABELS[self.types],
            t_ns=self.t_ns,
            launch_ns=self.launch_ns,
            prelaunched=self.prelaunched_flags,
            pos=self.pos,
        )


_TYPE_LABELS = np.array(KERNEL_TYPES, dtype=object)
_COMPUTATION = KERNEL_TYPES.index(COMPUTATION)
_COMMUNICATION = KERNEL_TYPES.index(COMMUNICATION)


@TraceMemo
def first_launch_correlation(trace: Trace) -> int | None:
    """The smallest correlation id of a launch call on the host (None without one)."""
    ids, rows = host_by_correlation(trace)
    at = np.flatnonzero(host_launch_mask(trace)[rows])
    return int(ids[at[0]]) if at.size else None


def step_events(trace: Trace, options: AnalysisOptions | None = None) -> StepEvents:
    """The :class:`StepEvents` of *trace* (memoised per trace and options)."""
    opts = options or AnalysisOptions()
    return memoized(trace, opts, "step_events", lambda: _step_events(trace, opts))


def _step_events(trace: Trace, options: AnalysisOptions) -> StepEvents:
    steps = window_steps(trace, options)
    lo = steps["start_ns"].to_numpy(dtype=np.int64)
    hi = steps["end_ns"].to_numpy(dtype=np.int64)
    gpu = trace.gpu
    rows = np.flatnonzero(gpu["stream"].to_numpy() != -1)
    all_s = gpu["start_ns"].to_numpy()[rows]
    all_e = gpu["end_ns"].to_numpy()[rows]
    corr = gpu["correlation"].to_numpy()[rows]
    # placement (module docstring; :func:`placement` of these rows)
    lr = gpu_launch_rows(trace)[rows]
    hit = lr >= 0
    launch = np.full(rows.size, -1, dtype=np.int64)
    launch[hit] = trace.host["start_ns"].to_numpy()[lr[hit]]
    first_id = first_launch_correlation(trace) if rows.size else None
    if first_id is None:
        pre = np.zeros(rows.size, dtype=bool)
    else:
        pre = (corr >= 0) & (corr < first_id) & ~hit
    t_all = np.where(hit, launch, all_s).astype(np.int64)
    if not options.include_prelaunched:
        t_all[pre] = -1
    keep = t_all >= 0
    ev_rows = rows[keep]
    s = all_s[keep].astype(np.int64)
    e = all_e[keep].astype(np.int64)
    t = gpu_type_codes(trace, options)[ev_rows]
    t_ns = t_all[keep]
    pos = step_positions(t_ns, lo, hi)
    comp, comm = t == _COMPUTATION, t == _COMMUNICATION
    n = len(steps)
    first = np.full(n, _MAX, dtype=np.int64)
    last = np.full(n, _MIN, dtype=np.int64)
    m = pos >= 0
    np.minimum.at(first, pos[m], s[m])
    np.maximum.at(last, pos[m], e[m])
    has = first != _MAX
    end = np.maximum.accumulate(last) if n else last
    start = np.full(n, -1, dtype=np.int64)
    if has.any():
        f = int(np.flatnonzero(has)[0])
        before = all_s < first[f]
        e0 = int(all_e[before].max()) if before.any() else _MIN
        start[f] = min(int(first[f]), max(int(lo[f]), e0))
        prev = np.concatenate([[_MIN], end[:-1]])
        later = has & (np.arange(n) > f)
        start[later] = prev[later]
    start = np.where(has, start, -1)
    end = np.where(has, end, -1)
    return StepEvents(
        steps=steps[["step", "start_ns", "end_ns"]],
        rows=ev_rows,
        start=s,
        end=e,
        types=t,
        t_ns=t_ns,
        launch_ns=launch[keep],
        pos=pos,
        busy=iv.merge(s, e),
        compute=iv.merge(s[comp], e[comp]),
        comm=iv.merge(s[comm], e[comm]),
        gpu_start=start,
        gpu_end=end,
        prelaunched=gpu.take(rows[pre])[_EVENT_COLUMNS],
        prelaunched_flags=pre[keep],
        gpu=weakref.ref(gpu),
    )


def step_windows(se: StepEvents) -> tuple[np.ndarray, np.ndarray]:
    """``[g, E)`` per step as two arrays; a step without GPU work gets the empty ``[0, 0)``."""
    has = se.gpu_start >= 0
    return np.where(has, se.gpu_start, 0), np.where(has, se.gpu_end, 0)


def exposed_intervals(se: StepEvents) -> iv.Intervals:
    """C \\ P of the step events: communication with no computation beside it."""
    return iv.subtract(se.comm, se.compute)


def _lag(se: StepEvents) -> np.ndarray:
    """Median launch→start per step, rounded to the ns (-1 where no event has a launch).

    The median of a step's (float) lags is the middle one, or the mean of the two middle ones
    (pandas' group median)."""
    n = len(se.steps)
    out = np.full(n, -1, dtype=np.int64)
    linked = (se.pos >= 0) & (se.launch_ns >= 0)
    if not linked.any():
        return out
    # sorted by (step, lag) as integers: the same order as the float lags
    lag, p = sorted_by_group(se.pos[linked], (se.start - se.launch_ns)[linked])
    d = lag.astype(np.float64)
    first = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
    count = np.diff(np.r_[first, p.size])
    med = (d[first + (count - 1) // 2] + d[first + count // 2]) / 2.0
    # halves to even, as analyzers.stats.round_ns
    out[p[first]] = np.round(med).astype(np.int64)
    return out


def step_breakdown(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """One row per ProfilerStep of the window, columns :data:`STEP_COLUMNS` (module
    docstring); memoised per trace and options (each call returns its own shallow copy)."""
    opts = options or AnalysisOptions()
    return memoized(trace, opts, "step_breakdown", lambda: _step_breakdown(trace, opts)).copy(
        deep=False
    )


def _step_breakdown(trace: Trace, options: AnalysisOptions) -> pd.DataFrame:
    se = step_events(trace, options)
    steps = se.steps
    lo = steps["start_ns"].to_numpy(dtype=np.int64)
    hi = steps["end_ns"].to_numpy(dtype=np.int64)
    g0, g1 = step_windows(se)
    busy = iv.covered_in_windows(se.busy, g0, g1)
    n = len(steps)
    work = value_mask(trace.gpu["kind"], GPU_WORK_KINDS)[se.rows] & (se.pos >= 0)
    pos = se.pos[work]
    dur = (se.end - se.start)[work].astype(np.int64)
    work_ns = np.zeros(n, dtype=np.int64)
    np.add.at(work_ns, pos, dur)
    lag = _lag(se)
    duration = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        behind = np.where((lag >= 0) & (duration > 0), lag / np.maximum(duration, 1), np.nan)
    return pd.DataFrame(
        {
            "step": steps["step"].to_numpy(dtype=np.int64),
            "start_ns": lo,
            "end_ns": hi,
            "duration_ns": duration,
            "gpu_start_ns": se.gpu_start,
            "gpu_end_ns": se.gpu_end,
            "gpu_duration_ns": g1 - g0,
            "compute_ns": iv.covered_in_windows(se.compute, g0, g1),
            "exposed_comm_ns": iv.covered_in_windows(exposed_intervals(se), g0, g1),
            "idle_ns": (g1 - g0) - busy,
            "work_events": np.bincount(pos, minlength=n).astype(np.int64),
            "work_ns": work_ns,
            "launch_lag_ns": lag,
            "steps_behind": behind.astype(np.float64),
        },
        columns=list(STEP_COLUMNS),
    )
