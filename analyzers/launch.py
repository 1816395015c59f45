"""Kernel launch statistics: CPU launch cost, launch-to-start delay, queue length per stream.

A *launch* links a host runtime/driver call to the GPU op(s) it enqueued through their shared
correlation id.  Two selections (definitions in ``docs/idle-and-launch.md``):

**HTA-compatible** (metrics.md §8, ``get_cuda_kernel_launch_stats``): host calls named exactly
:data:`HTA_LAUNCH_NAMES` (+ :data:`HTA_MEMORY_LAUNCH_NAMES`), inner-joined with the window's GPU
events (any kind, stream ≠ −1) on correlation.  Per pair:

- ``cpu_duration_ns`` = duration of the host call;
- ``gpu_duration_ns`` = duration of the GPU op;
- ``launch_delay_ns`` = max(0, GPU start − host call end).

**gpuscope (all launches)**: every host call of a runtime/driver category (``cuda_runtime``,
``cuda_driver``, ...) whose correlation links to window GPU ops of kind kernel, memcpy or
memset, whatever its name: also ``cuLaunchKernel(Ex)``, ``cudaLaunchCooperativeKernel``,
``cudaGraphLaunch`` (one call, many ops), ``hipLaunchKernel``...  Per GPU op it adds
``start_after_call_ns`` = GPU start − host call start (≥ 0 when host and GPU clocks agree: an
op cannot start before the call that enqueued it), ``ops_in_launch`` and ``graph`` (launched by
a ``*GraphLaunch`` call: its "delay" is its position inside the graph, not a wait, so the delay
statistics leave these ops out).

**Waiting time** (:func:`delay_union_ns`, per kernel or step :func:`delay_union_by`): the launch
delays of many ops overlap (a queue of launched kernels all wait at once), so their sum can exceed
the trace's length; the time
something was waiting is the length of the union of the intervals ``[call end, op start)``
over the ops with a positive delay.

**Queue length** (HTA ``get_queue_length_time_series``): per stream, +1 at the start of each
host call named in :data:`HTA_QUEUE_NAMES` that has a GPU op, −1 at the start of that op;
the running sum after each change (events in time order, launches before GPU starts at equal
times).  gpuscope adds the time-weighted mean over the stream's first to last change.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.distributions import STAT_KEYS as STAT_KEYS
from analyzers.distributions import distribution as distribution
from analyzers.distributions import grouped
from analyzers.idle import trace_notes
from analyzers.options import AnalysisOptions
from analyzers.window import (
    gpu_host_link,
    gpu_launch_rows,
    host_by_correlation,
    memoized,
    value_mask,
    window,
    window_rows,
)
from collectors.kinds import strip_api_version
from collectors.model import GPU_WORK_KINDS, Trace, names_matching, str_array

HTA_LAUNCH_NAMES = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "runFunction - job_prep_and_submit_for_execution",
)
"""Host calls HTA's launch statistics select (exact names)."""
HTA_MEMORY_LAUNCH_NAMES = ("cudaMemcpyAsync", "cudaMemsetAsync")
"""Added by HTA's ``include_memory_events=True`` (its default)."""
HTA_QUEUE_NAMES = (
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
    "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream",
)  # fmt: skip
"""Host calls HTA's queue-length series counts as enqueues."""

RUNTIME_CUTOFF_NS = 50_000
"""HTA's ``runtime_cutoff`` (50 µs): a launch call longer than this is a runtime outlier."""
LAUNCH_DELAY_CUTOFF_NS = 100_000
"""HTA's ``launch_delay_cutoff`` (100 µs): a longer launch delay is a delay outlier."""

LAUNCH_COLUMNS = (
    "gpu_index", "correlation", "launch_name", "name", "kind", "stream", "cpu_start_ns",
    "cpu_duration_ns", "gpu_start_ns", "gpu_duration_ns", "launch_delay_ns",
    "start_after_call_ns", "ops_in_launch", "step", "graph",
)  # fmt: skip


def _api_name_in(col: pd.Series, names: Sequence[str]) -> np.ndarray:
    """Rows whose host call name, without nsys' ``_v<N>`` version suffix
    (``cudaLaunchKernel_v7000``), is one of *names* (looked at once per distinct name)."""
    wanted = set(names)
    return names_matching(col, lambda n: strip_api_version(n) in wanted)


def _step_of(trace: Trace, t: np.ndarray, options: AnalysisOptions) -> np.ndarray:
    """Number of the window step whose ``[start, end)`` contains each time (-1 none;
    :func:`analyzers.steps.step_positions`, the one rule)."""
    from analyzers.steps import step_positions

    steps = trace.steps()
    keep = set(window(trace, options).steps)
    steps = steps[steps["step"].isin(keep)]
    out = np.full(t.size, -1, dtype=np.int64)
    if steps.empty or t.size == 0:
        return out
    k = step_positions(t, steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy())
    num = steps["step"].to_numpy()
    out[k >= 0] = num[k[k >= 0]]
    return out


def _is_graph_launch(names: pd.Series) -> np.ndarray:
    """Host call names that launch a CUDA/HIP graph (``*GraphLaunch``)."""
    from analyzers.serving.ops import GRAPH_LAUNCH_RE

    if not len(names):
        return np.zeros(0, bool)
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype(str)
    return names_matching(names, GRAPH_LAUNCH_RE.search)


@dataclass(frozen=True)
class Pairs:
    """Launch pairs as arrays, one entry per (host call, GPU op) sharing a correlation id, in
    (call start, op start, call row, op row) order (the rows of :data:`LAUNCH_COLUMNS`): the
    rows in ``trace.host`` / ``trace.gpu``, times, ``ops_in_launch`` (pairs of the id),
    :attr:`step` and :attr:`graph`."""

    host_rows: np.ndarray
    gpu_rows: np.ndarray
    cpu_start: np.ndarray
    cpu_end: np.ndarray
    gpu_start: np.ndarray
    gpu_end: np.ndarray
    correlation: np.ndarray
    ops_in_launch: np.ndarray
    trace: Trace = field(repr=False, compare=False)
    options: AnalysisOptions = field(repr=False, compare=False)

    @property
    def delay(self) -> np.ndarray:
        """``launch_delay_ns``: max(0, op start − call end)."""
        return np.maximum(0, self.gpu_start - self.cpu_end)

    @cached_property
    def step(self) -> np.ndarray:
        """The window step of the call's start (-1 none)."""
        return _step_of(self.trace, self.cpu_start, self.options)

    @cached_property
    def graph(self) -> np.ndarray:
        """The call launches a graph."""
        if not self.host_rows.size:
            return np.zeros(0, dtype=bool)
        return _is_graph_launch(self.trace.host["name"])[self.host_rows]


def _joined(trace: Trace, options: AnalysisOptions) -> tuple[np.ndarray, ...]:
    """Every (host row, window GPU row) pair sharing a correlation id, in (call start, op
    start, call row, op row) order: host rows, GPU rows, call starts, op starts and the id's
    position in :func:`analyzers.window.host_by_correlation`; memoised per trace and options
    (each selection of :func:`_pairs` is a subsequence, so it keeps the order)."""

    def join() -> tuple[np.ndarray, ...]:
        gpu_rows = window_rows(trace, options)
        lo, hi = gpu_host_link(trace)
        lo, n = lo[gpu_rows], hi[gpu_rows] - lo[gpu_rows]
        gi = np.repeat(np.arange(gpu_rows.size), n)
        at = np.repeat(lo, n) + (np.arange(gi.size) - np.repeat(np.cumsum(n) - n, n))
        hr, gr, group = host_by_correlation(trace)[1][at], gpu_rows[gi], np.repeat(lo, n)
        cs = trace.host["start_ns"].to_numpy()[hr].astype(np.int64)
        gs = trace.gpu["start_ns"].to_numpy()[gr].astype(np.int64)
        order = np.lexsort((gr, hr, gs, cs))
        return hr[order], gr[order], cs[order], gs[order], group[order]

    return memoized(trace, options, "launch_pairs", join)


def _pairs(
    trace: Trace, options: AnalysisOptions, gpu_ok: np.ndarray | None, host_ok: np.ndarray
) -> Pairs:
    """The inner join on correlation of the window's GPU rows (where *gpu_ok*, a mask over
    ``trace.gpu``; None: all) and the ``trace.host`` rows where *host_ok*, in the join's row
    order (:class:`Pairs`), from :func:`_joined`."""
    hr, gr, cs, gs, group = _joined(trace, options)
    keep = host_ok[hr] if gpu_ok is None else host_ok[hr] & gpu_ok[gr]
    hr, gr, cs, gs, group = hr[keep], gr[keep], cs[keep], gs[keep], group[keep]
    return Pairs(
        host_rows=hr,
        gpu_rows=gr,
        cpu_start=cs,
        cpu_end=trace.host["end_ns"].to_numpy()[hr].astype(np.int64),
        gpu_start=gs,
        gpu_end=trace.gpu["end_ns"].to_numpy()[gr].astype(np.int64),
        correlation=trace.gpu["correlation"].to_numpy()[gr].astype(np.int64),
        ops_in_launch=np.bincount(group)[group].astype(np.int64) if group.size else group,
        trace=trace,
        options=options,
    )


def _with_named(trace: Trace, named: np.ndarray) -> np.ndarray:
    """The host rows whose correlation id (≥ 0) is that of a row where *named*."""
    ids, rows = host_by_correlation(trace)
    out = np.zeros(named.size, dtype=bool)
    if not ids.size:
        return out
    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    any_named = np.maximum.reduceat(named[rows], first)
    out[rows] = np.repeat(any_named, np.diff(np.r_[first, ids.size]))
    return out


def hta_pairs(
    trace: Trace, options: AnalysisOptions | None = None, *, include_memory_events: bool = True
) -> Pairs:
    """:func:`hta_launches` as :class:`Pairs`: host calls sharing a correlation id with a call
    named in :data:`HTA_LAUNCH_NAMES` (and memory calls), with the window's GPU events."""
    options = options or AnalysisOptions()
    names = HTA_LAUNCH_NAMES + (HTA_MEMORY_LAUNCH_NAMES if include_memory_events else ())
    named = _api_name_in(trace.host["name"], names)
    return _pairs(trace, options, None, _with_named(trace, named))


def all_pairs(trace: Trace, options: AnalysisOptions | None = None) -> Pairs:
    """:func:`all_launches` as :class:`Pairs`."""
    options = options or AnalysisOptions()
    gpu = trace.gpu
    g = window_rows(trace, options)
    work = value_mask(gpu["kind"], GPU_WORK_KINDS) & (gpu["correlation"].to_numpy() >= 0)
    calls = gpu_launch_rows(trace)[g[work[g]]]
    chosen = np.zeros(len(trace.host), dtype=bool)
    chosen[calls[calls >= 0]] = True
    return _pairs(trace, options, work, chosen)


def launch_frame(trace: Trace, p: Pairs) -> pd.DataFrame:
    """*p* as a table, columns :data:`LAUNCH_COLUMNS`."""
    h, g = trace.host, trace.gpu
    return pd.DataFrame(
        {
            "gpu_index": g.index.to_numpy()[p.gpu_rows],
            "correlation": p.correlation,
            "launch_name": str_array(h["name"].take(p.host_rows)),
            "name": str_array(g["name"].take(p.gpu_rows)),
            "kind": str_array(g["kind"].take(p.gpu_rows)),
            "stream": g["stream"].to_numpy()[p.gpu_rows].astype(np.int64),
            "cpu_start_ns": p.cpu_start,
            "cpu_duration_ns": p.cpu_end - p.cpu_start,
            "gpu_start_ns": p.gpu_start,
            "gpu_duration_ns": p.gpu_end - p.gpu_start,
            "launch_delay_ns": p.delay,
            "start_after_call_ns": p.gpu_start - p.cpu_start,
            "ops_in_launch": p.ops_in_launch,
            "step": p.step,
            "graph": p.graph,
        },
        columns=list(LAUNCH_COLUMNS),
    )


def hta_launches(
    trace: Trace, options: AnalysisOptions | None = None, *, include_memory_events: bool = True
) -> pd.DataFrame:
    """HTA-compatible launch pairs, columns :data:`LAUNCH_COLUMNS` (one row per join match)."""
    return launch_frame(
        trace, hta_pairs(trace, options, include_memory_events=include_memory_events)
    )


def all_launches(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """gpuscope's selection: every runtime/driver call linked to window kernels/copies/sets.

    One row per GPU op; each op is linked to at most one call (when several host calls share
    a correlation, only the earliest is kept).
    """
    return launch_frame(trace, all_pairs(trace, options))


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class LaunchStats:
    """HTA's launch-statistics figures over a set of launch pairs (times in ns).

    Means and the median are floats (exact ratios of integer sums; the median of an even
    count is the mean of the two middle values, as pandas computes it).
    """

    n: int
    cpu_duration_mean_ns: float | None
    gpu_duration_mean_ns: float | None
    launch_delay_mean_ns: float | None
    launch_delay_median_ns: float | None
    launch_delay_max_ns: int | None
    short_kernels: int
    """``cpu_duration ≤ runtime cutoff`` and ``gpu_duration < cpu_duration``."""
    runtime_outliers: int
    """``cpu_duration > runtime cutoff``."""
    launch_delay_outliers: int
    """``launch_delay > launch-delay cutoff``."""


def launch_stats(
    launches: pd.DataFrame,
    *,
    runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS,
    launch_delay_cutoff_ns: int = LAUNCH_DELAY_CUTOFF_NS,
) -> LaunchStats:
    """HTA's summary figures of *launches* (output of :func:`hta_launches`)."""
    return launch_stats_of(
        launches["cpu_duration_ns"].to_numpy(dtype=np.int64),
        launches["gpu_duration_ns"].to_numpy(dtype=np.int64),
        launches["launch_delay_ns"].to_numpy(dtype=np.int64),
        runtime_cutoff_ns=runtime_cutoff_ns,
        launch_delay_cutoff_ns=launch_delay_cutoff_ns,
    )


def launch_stats_of(
    cpu: np.ndarray,
    gpu: np.ndarray,
    d: np.ndarray,
    *,
    runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS,
    launch_delay_cutoff_ns: int = LAUNCH_DELAY_CUTOFF_NS,
) -> LaunchStats:
    """:func:`launch_stats` of the pairs' call and op durations and launch delays."""
    n = cpu.size
    if n == 0:
        return LaunchStats(0, None, None, None, None, None, 0, 0, 0)
    return LaunchStats(
        n=n,
        cpu_duration_mean_ns=int(cpu.sum()) / n,
        gpu_duration_mean_ns=int(gpu.sum()) / n,
        launch_delay_mean_ns=int(d.sum()) / n,
        launch_delay_median_ns=float(np.median(d)),
        launch_delay_max_ns=int(d.max()),
        short_kernels=int(((cpu <= runtime_cutoff_ns) & (gpu < cpu)).sum()),
        runtime_outliers=int((cpu > runtime_cutoff_ns).sum()),
        launch_delay_outliers=int((d > launch_delay_cutoff_ns).sum()),
    )


def delay_union_ns(launches: pd.DataFrame) -> int:
    """Length of the union of ``[call end, op start)`` over the ops of *launches* with a
    positive launch delay (module docstring)."""
    d = launches["launch_delay_ns"].to_numpy(dtype=np.int64)
    op = launches["gpu_start_ns"].to_numpy(dtype=np.int64)
    return int(iv.union_length_by_group(np.zeros(d.size, np.int64), 1, op - d, op, d > 0)[0])


def delay_union_by(launches: pd.DataFrame, by: str) -> dict[Any, int]:
    """:func:`delay_union_ns` per value of column *by*; every value of the column is a key (0
    without a positive delay)."""
    codes, uniques = pd.factorize(launches[by], sort=False, use_na_sentinel=False)
    d = launches["launch_delay_ns"].to_numpy(dtype=np.int64)
    op = launches["gpu_start_ns"].to_numpy(dtype=np.int64)
    total = iv.union_length_by_group(codes, len(uniques), op - d, op, d > 0)
    keys = uniques.tolist()
    # as a groupby on the values, which drops a missing one
    return {k: 0 if pd.isna(k) else int(total[c]) for c, k in enumerate(keys)}


def grouped_distributions(launches: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per *by* value (``name`` or ``step``): launches, and cpu-duration / launch-delay
    distributions (:func:`distribution`) as columns ``cpu_<stat>``, ``delay_<stat>``.
    Sorted by total launch delay, largest first (then launches, then first appearance).
    """
    codes, uniques = pd.factorize(launches[by], sort=False)
    if not len(uniques):
        return pd.DataFrame({by: [], "launches": []})
    d = launches["launch_delay_ns"].to_numpy(dtype=np.int64)
    cpu = launches["cpu_duration_ns"].to_numpy(dtype=np.int64)
    gr = grouped(codes, uniques.tolist(), cpu, d, launches["gpu_start_ns"].to_numpy())
    cols: dict[str, Any] = {by: gr.keys, "launches": gr.launches}
    cols |= {f"cpu_{k}": gr.cpu[k] for k in STAT_KEYS}
    return pd.DataFrame(cols | {f"delay_{k}": gr.delay[k] for k in STAT_KEYS})


# --------------------------------------------------------------------------- queue length


def queue_length(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's queue-length series: columns stream, ts_ns, queue_length (one row per change)."""
    stream, ts, q = _queue_series(trace, options or AnalysisOptions())
    return pd.DataFrame({"stream": stream, "ts_ns": ts, "queue_length": q})


def _queue_series(trace: Trace, options: AnalysisOptions) -> tuple[np.ndarray, ...]:
    """:func:`queue_length` as arrays: per change in (stream, time, enqueue first) order."""
    named = _api_name_in(trace.host["name"], HTA_QUEUE_NAMES)
    p = _pairs(trace, options, None, named)
    launched = np.zeros(len(trace.gpu), dtype=bool)
    launched[p.gpu_rows] = True
    g = window_rows(trace, options)
    g = g[launched[g]]
    g_stream = trace.gpu["stream"].to_numpy()
    ts = np.concatenate([p.cpu_start, trace.gpu["start_ns"].to_numpy()[g]]).astype(np.int64)
    stream = np.concatenate([g_stream[p.gpu_rows], g_stream[g]]).astype(np.int64)
    delta = np.concatenate([np.ones(p.cpu_start.size, np.int64), -np.ones(g.size, np.int64)])
    # time order; at equal times the enqueue (+1) comes first
    order = _stream_time_order(stream, ts, delta)
    ts, stream, delta = ts[order], stream[order], delta[order]
    run = np.cumsum(delta)
    first = np.flatnonzero(np.r_[True, stream[1:] != stream[:-1]]) if stream.size else stream
    before = np.repeat(run[first] - delta[first], np.diff(np.r_[first, stream.size]))
    return stream, ts, (run - before).astype(np.int64)


def _stream_time_order(stream: np.ndarray, ts: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``np.lexsort((-delta, ts, stream))`` (*delta* ±1): one stable sort of a combined key
    where it fits in int64 (the two halves come time-ordered, so the sort merges runs)."""
    if not ts.size:
        return np.zeros(0, dtype=np.intp)
    codes, _ = pd.factorize(stream, sort=True)
    t0, span = int(ts.min()), int(ts.max()) - int(ts.min()) + 1
    if (int(codes.max()) + 1) * span * 2 >= 2**62:
        return np.lexsort((-delta, ts, stream))
    key = (codes.astype(np.int64) * span + (ts - t0)) * 2 + (delta < 0)
    return np.argsort(key, kind="stable")


def queue_summary(series: pd.DataFrame) -> pd.DataFrame:
    """Per stream: changes, max, ts of the first max, time-weighted mean (first → last change).

    The time-weighted mean is Σ(value × time it holds) ÷ (last change − first change); NaN when
    all changes happen at one instant.
    """
    return _queue_summary(
        series["stream"].to_numpy(dtype=np.int64),
        series["ts_ns"].to_numpy(dtype=np.int64),
        series["queue_length"].to_numpy(dtype=np.int64),
    )


def _queue_summary(stream: np.ndarray, t_all: np.ndarray, q_all: np.ndarray) -> pd.DataFrame:
    rows = []
    order = np.argsort(stream, kind="stable")
    stream, t_all, q_all = stream[order], t_all[order], q_all[order]
    cut = np.r_[True, stream[1:] != stream[:-1], True] if stream.size else np.zeros(0, bool)
    for b0, b1 in itertools.pairwise(np.flatnonzero(cut).tolist()):
        t, q = t_all[b0:b1], q_all[b0:b1]
        span = int(t[-1] - t[0])
        tw = float(int((q[:-1] * np.diff(t)).sum()) / span) if span > 0 else float("nan")
        imax = int(np.argmax(q))
        rows.append((int(stream[b0]), len(q), int(q[imax]), int(t[imax]), tw))
    cols = ["stream", "changes", "max", "max_ts_ns", "time_weighted_mean"]
    return pd.DataFrame(rows, columns=cols)


@dataclass(frozen=True)
class LaunchResult:
    """Everything :mod:`reports.summary.sections.wait` shows about launches for one rank."""

    hta: LaunchStats
    hta_pairs: pd.DataFrame
    """:func:`hta_launches` (the pairs ``hta`` summarizes)."""
    launches: pd.DataFrame
    """gpuscope's selection (:func:`all_launches`)."""
    queue: pd.DataFrame
    """:func:`queue_summary` of :func:`queue_length`."""
    notes: tuple[str, ...]


def launch_analysis(trace: Trace, options: AnalysisOptions | None = None) -> LaunchResult:
    """HTA figures, gpuscope's launch table and the queue summary, with notes."""
    options = options or AnalysisOptions()
    pairs = hta_launches(trace, options)
    return LaunchResult(
        hta=launch_stats(pairs),
        hta_pairs=pairs,
        launches=all_launches(trace, options),
        queue=queue_table(trace, options),
        notes=trace_notes(trace),
    )


def queue_table(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """:func:`queue_summary` of :func:`queue_length`."""
    return _queue_summary(*_queue_series(trace, options or AnalysisOptions()))
