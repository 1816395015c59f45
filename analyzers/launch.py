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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.idle import trace_notes
from analyzers.options import AnalysisOptions
from analyzers.window import gpu_events, window
from collectors.arrays import sorted_unique
from collectors.kinds import strip_api_version
from collectors.linking import launching_calls
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
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)
"""Host calls HTA's queue-length series counts as enqueues."""
"""GPU-op kinds of the gpuscope selection (``sync`` rows are waits, not launched work)."""

RUNTIME_CUTOFF_NS = 50_000
"""HTA's ``runtime_cutoff`` (50 µs): a launch call longer than this is a runtime outlier."""
LAUNCH_DELAY_CUTOFF_NS = 100_000
"""HTA's ``launch_delay_cutoff`` (100 µs): a longer launch delay is a delay outlier."""

_HOST_COLS = ["name", "cat", "start_ns", "end_ns", "correlation"]
_GPU_COLS = ["name", "kind", "stream", "start_ns", "end_ns", "correlation"]

LAUNCH_COLUMNS = (
    "gpu_index",
    "correlation",
    "launch_name",
    "name",
    "kind",
    "stream",
    "cpu_start_ns",
    "cpu_duration_ns",
    "gpu_start_ns",
    "gpu_duration_ns",
    "launch_delay_ns",
    "start_after_call_ns",
    "ops_in_launch",
    "step",
    "graph",
)


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
    from collectors.model import names_matching

    if not len(names):
        return np.zeros(0, bool)
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype(str)
    return names_matching(names, GRAPH_LAUNCH_RE.search)


def _waits(launches: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``[call end, op start)`` of the ops with a positive delay, and their row mask."""
    d = launches["launch_delay_ns"].to_numpy(dtype=np.int64)
    pos = d > 0
    e = launches["gpu_start_ns"].to_numpy(dtype=np.int64)
    return (e - d)[pos], e[pos], pos


def delay_union_ns(launches: pd.DataFrame) -> int:
    """Length of the union of ``[call end, op start)`` over the ops of *launches* with a
    positive launch delay (module docstring)."""
    s, e, _ = _waits(launches)
    return iv.total(iv.merge(s, e))


def delay_union_by(launches: pd.DataFrame, by: str) -> dict[Any, int]:
    """:func:`delay_union_ns` per value of column *by* (one pass: a sort and a running maximum
    per group); every value of the column is a key (0 without a positive delay)."""
    s, e, pos = _waits(launches)
    # integer codes for the values (first appearance order, a missing value its own code):
    # sorting and grouping codes is what sorting and grouping the strings did, without them
    codes, uniques = pd.factorize(launches[by], sort=False, use_na_sentinel=False)
    keys = uniques.tolist()
    out: dict[Any, int] = dict.fromkeys(keys, 0)
    if not s.size:
        return out
    df = pd.DataFrame({"k": codes[pos], "s": s, "e": e})
    df = df.sort_values(["k", "s"], kind="stable")
    run = df.groupby("k", sort=False)["e"].cummax().to_numpy()
    k = df["k"].to_numpy()
    ss = df["s"].to_numpy()
    first = np.ones(len(df), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (ss[1:] > run[:-1])
    grp = np.cumsum(first) - 1
    g_end = pd.Series(run).groupby(grp).max().to_numpy()
    total = pd.Series(g_end - ss[first]).groupby(k[first]).sum()
    missing = np.asarray(pd.isna(uniques), dtype=bool)
    for code, v in zip(total.index.tolist(), total.tolist(), strict=True):
        if not missing[code]:  # as a groupby on the values, which drops a missing one
            out[keys[code]] = int(v)
    return out


def _join(
    trace: Trace, options: AnalysisOptions, host: pd.DataFrame, gpu: pd.DataFrame
) -> pd.DataFrame:
    """Inner join of host calls and GPU ops on correlation, as :data:`LAUNCH_COLUMNS`."""
    gpu = gpu[["correlation", "name", "kind", "stream", "start_ns", "end_ns"]]
    j = host[["correlation", "name", "start_ns", "end_ns"]].merge(
        gpu.assign(gpu_index=gpu.index.to_numpy()),
        on="correlation",
        suffixes=("_cpu", "_gpu"),
    )
    # the rows in (call start, op start) order, stable, before any string column is decoded
    order = np.lexsort((j["start_ns_gpu"].to_numpy(), j["start_ns_cpu"].to_numpy()))
    j = j.take(order)
    cs = j["start_ns_cpu"].to_numpy(dtype=np.int64)
    ce = j["end_ns_cpu"].to_numpy(dtype=np.int64)
    gs = j["start_ns_gpu"].to_numpy(dtype=np.int64)
    ge = j["end_ns_gpu"].to_numpy(dtype=np.int64)
    n_ops = j.groupby("correlation")["correlation"].transform("size").to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "gpu_index": j["gpu_index"].to_numpy(),
            "correlation": j["correlation"].to_numpy(dtype=np.int64),
            "launch_name": str_array(j["name_cpu"]),
            "name": str_array(j["name_gpu"]),
            "kind": str_array(j["kind"]),
            "stream": j["stream"].to_numpy(dtype=np.int64),
            "cpu_start_ns": cs,
            "cpu_duration_ns": ce - cs,
            "gpu_start_ns": gs,
            "gpu_duration_ns": ge - gs,
            "launch_delay_ns": np.maximum(0, gs - ce),
            "start_after_call_ns": gs - cs,
            "ops_in_launch": n_ops,
            "step": _step_of(trace, cs, options),
            "graph": _is_graph_launch(j["name_cpu"]),
        },
        columns=list(LAUNCH_COLUMNS),
    )


def hta_launches(
    trace: Trace, options: AnalysisOptions | None = None, *, include_memory_events: bool = True
) -> pd.DataFrame:
    """HTA-compatible launch pairs, columns :data:`LAUNCH_COLUMNS` (one row per join match)."""
    options = options or AnalysisOptions()
    names = HTA_LAUNCH_NAMES + (HTA_MEMORY_LAUNCH_NAMES if include_memory_events else ())
    h = trace.host[_HOST_COLS]
    h = h[h["correlation"] >= 0]
    selected = h[_api_name_in(h["name"], names)]["correlation"].unique()
    cpu = h[h["correlation"].isin(selected)]
    g = gpu_events(trace, options)[_GPU_COLS]
    g = g[(g["stream"] != -1) & g["correlation"].isin(selected)]
    return _join(trace, options, cpu, g)


def all_launches(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """gpuscope's selection: every runtime/driver call linked to window kernels/copies/sets.

    One row per GPU op; each op is linked to at most one call (when several host calls share
    a correlation, only the earliest is kept).
    """
    options = options or AnalysisOptions()
    g = gpu_events(trace, options)[_GPU_COLS]
    g = g[(g["stream"] != -1) & g["kind"].isin(GPU_WORK_KINDS) & (g["correlation"] >= 0)]
    calls = launching_calls(trace.host, g["correlation"].to_numpy())
    h = trace.host[_HOST_COLS].iloc[sorted_unique(calls[calls >= 0])]
    return _join(trace, options, h, g)


# --------------------------------------------------------------------------- statistics


def distribution(values: np.ndarray) -> dict[str, int]:
    """n, sum, min, p50, p90, p99, max of integer ns values (quantiles are observed values:
    the smallest value with at least q of the sample at or below it, numpy ``inverted_cdf``).
    """
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return {"n": 0}
    q = np.quantile(v, [0.5, 0.9, 0.99], method="inverted_cdf").astype(np.int64)
    return {
        "n": int(v.size),
        "sum_ns": int(v.sum()),
        "min_ns": int(v.min()),
        "p50_ns": int(q[0]),
        "p90_ns": int(q[1]),
        "p99_ns": int(q[2]),
        "max_ns": int(v.max()),
    }


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
    n = len(launches)
    if n == 0:
        return LaunchStats(0, None, None, None, None, None, 0, 0, 0)
    cpu = launches["cpu_duration_ns"].to_numpy(dtype=np.int64)
    gpu = launches["gpu_duration_ns"].to_numpy(dtype=np.int64)
    d = launches["launch_delay_ns"].to_numpy(dtype=np.int64)
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


def grouped_distributions(launches: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per *by* value (``name`` or ``step``): launches, and cpu-duration / launch-delay
    distributions (:func:`distribution`) as columns ``cpu_<stat>``, ``delay_<stat>``.
    Sorted by total launch delay, largest first.
    """
    rows = []
    # the groups of groupby(by, sort=False) (missing values dropped), from integer codes
    codes, uniques = pd.factorize(launches[by], sort=False)
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]
    bounds = np.cumsum(np.bincount(codes[codes >= 0], minlength=len(uniques)))
    cpu_all = launches["cpu_duration_ns"].to_numpy()
    delay_all = launches["launch_delay_ns"].to_numpy()
    groups = np.split(order, bounds[:-1]) if len(uniques) else []
    for key, rows_of in zip(uniques, groups, strict=True):
        cpu = distribution(cpu_all[rows_of])
        delay = distribution(delay_all[rows_of])
        row: dict[str, object] = {by: key, "launches": len(rows_of)}
        row.update({f"cpu_{k}": v for k, v in cpu.items() if k != "n"})
        row.update({f"delay_{k}": v for k, v in delay.items() if k != "n"})
        rows.append(row)
    if not rows:
        return pd.DataFrame({by: [], "launches": []})
    out = pd.DataFrame(rows)
    out = out.sort_values(["delay_sum_ns", "launches"], ascending=False, kind="stable")
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- queue length


def queue_length(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """HTA's queue-length series: columns stream, ts_ns, queue_length (one row per change)."""
    options = options or AnalysisOptions()
    h = trace.host[_HOST_COLS]
    h = h[(h["correlation"] >= 0) & _api_name_in(h["name"], HTA_QUEUE_NAMES)]
    g = gpu_events(trace, options)[_GPU_COLS]
    g = g[(g["stream"] != -1) & g["correlation"].isin(h["correlation"].unique())]
    runtime = h[["correlation", "start_ns"]].merge(g[["correlation", "stream"]], on="correlation")
    ts = np.concatenate([runtime["start_ns"].to_numpy(), g["start_ns"].to_numpy()])
    stream = np.concatenate([runtime["stream"].to_numpy(), g["stream"].to_numpy()])
    delta = np.concatenate(
        [np.ones(len(runtime), dtype=np.int64), -np.ones(len(g), dtype=np.int64)]
    )
    # time order; at equal times the enqueue (+1) comes first
    order = np.lexsort((-delta, ts, stream))
    ts, stream, delta = ts[order], stream[order], delta[order]
    df = pd.DataFrame({"stream": stream.astype(np.int64), "ts_ns": ts.astype(np.int64), "d": delta})
    df["queue_length"] = df.groupby("stream")["d"].cumsum().astype(np.int64)
    return df.drop(columns="d")


def queue_summary(series: pd.DataFrame) -> pd.DataFrame:
    """Per stream: changes, max, ts of the first max, time-weighted mean (first → last change).

    The time-weighted mean is Σ(value × time it holds) ÷ (last change − first change); NaN when
    all changes happen at one instant.
    """
    rows = []
    for _stream, grp in series.groupby("stream", sort=True):
        t = grp["ts_ns"].to_numpy(dtype=np.int64)
        q = grp["queue_length"].to_numpy(dtype=np.int64)
        span = int(t[-1] - t[0])
        held = np.diff(t)
        tw = float(int((q[:-1] * held).sum()) / span) if span > 0 else float("nan")
        imax = int(np.argmax(q))
        rows.append(
            {
                "stream": int(grp["stream"].to_numpy()[0]),
                "changes": len(q),
                "max": int(q[imax]),
                "max_ts_ns": int(t[imax]),
                "time_weighted_mean": tw,
            }
        )
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
        queue=queue_summary(queue_length(trace, options)),
        notes=trace_notes(trace),
    )
