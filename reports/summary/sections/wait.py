"""Per-rank JSON sections ``idle``, ``launch`` and ``memory`` (registered in
:mod:`reports.summary.registry`).

Each function is ``fn(trace, options, inputs)`` and returns a JSON-ready dict; every key is
defined in ``docs/idle-and-launch.md``.  Conventions: keys ending ``_ns`` are exact integer
nanoseconds, ``_bytes`` integer bytes; means and medians that are not whole nanoseconds are
given in microseconds as floats (keys ending ``_us``, HTA's unit); ratios and shares are
unrounded floats; undefined values are ``null``.  ``notes`` lists, one line each, what the
trace could not support.

The host-bound verdict thresholds come from ``AnalysisOptions.host_threshold`` /
``comm_threshold``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.options import AnalysisOptions

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.inputs import AnalysisInputs
    from collectors.model import Trace

TOP_KERNELS = 20
"""Kernel rows of ``launch.per_kernel`` (by total launch delay)."""


def _float(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000.0


def _int(x: Any) -> int | None:
    """An int, or None for None / NaN / ``pd.NA``."""
    import pandas as pd

    return None if x is None or pd.isna(x) else int(x)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of *df* as dicts of plain Python values (column order kept)."""
    cols = [str(c) for c in df.columns]
    values = [df[c].tolist() for c in df.columns]
    return [dict(zip(cols, row, strict=True)) for row in zip(*values, strict=True)]


def _ns_keys(d: Mapping[str, int]) -> dict[str, int]:
    return {f"{k}_ns": int(v) for k, v in d.items()}


def idle(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """HTA's per-stream breakdown, the GPU-wide view, and the host-bound verdicts."""
    from analyzers.host_bound import (
        rank_verdict,
        step_verdicts,
    )
    from analyzers.idle import idle_analysis

    host_t = float(options.host_threshold)
    comm_t = float(options.comm_threshold)
    res = idle_analysis(trace, options)
    sv = step_verdicts(trace, options, host_threshold=host_t, comm_threshold=comm_t)
    rv = rank_verdict(trace, options, sv, host_threshold=host_t, comm_threshold=comm_t)
    streams = [
        {
            "stream": int(r["stream"]),
            "category": str(r["category"]),
            "idle_ns": int(r["idle_ns"]),
            "intervals": int(r["intervals"]),
            "ratio": _float(r["ratio"]),
        }
        for r in _records(res.per_stream)
    ]
    g = res.gpu
    steps = [
        {
            "step": int(r["step"]),
            "start_ns": int(r["start_ns"]),
            "end_ns": int(r["end_ns"]),
            "duration_ns": int(r["duration_ns"]),
            "gpu_start_ns": int(r["gpu_start_ns"]) if r["gpu_start_ns"] >= 0 else None,
            "gpu_end_ns": int(r["gpu_end_ns"]) if r["gpu_end_ns"] >= 0 else None,
            "gpu_duration_ns": int(r["gpu_duration_ns"]),
            "idle_ns": int(r["idle_ns"]),
            "host_wait_ns": int(r["host_wait_ns"]),
            "exposed_comm_ns": int(r["exposed_comm_ns"]),
            "host_share": _float(r["host_share"]),
            "comm_share": _float(r["comm_share"]),
            "verdict": r["verdict"] if isinstance(r["verdict"], str) else None,
            "host_wait_by_activity": _ns_keys(r["host_wait_by_activity"]),
            "top_ops": [{"name": n, "overlap_ns": int(v)} for n, v in r["top_ops"]],
        }
        for r in _records(sv)
    ]
    return {
        "threshold_ns": int(options.consecutive_kernel_delay_ns),
        "streams": streams,
        "gpu": {
            "span_ns": g.span_ns,
            "busy_ns": g.busy_ns,
            "idle_ns": g.idle_ns,
            "gaps": len(g.gaps),
            "by_cause": _ns_keys(g.by_cause),
            "by_cpu_activity": _ns_keys(g.by_cpu_activity),
        },
        "host_bound": {
            "verdict": rv.verdict,
            "basis": rv.basis,
            "duration_ns": rv.duration_ns,
            "host_wait_ns": rv.host_wait_ns,
            "exposed_comm_ns": rv.exposed_comm_ns,
            "host_share": _float(rv.host_share),
            "comm_share": _float(rv.comm_share),
            "host_threshold": host_t,
            "comm_threshold": comm_t,
            "steps_by_verdict": dict(rv.steps_by_verdict),
            "host_wait_by_activity": _ns_keys(rv.host_wait_by_activity),
        },
        "steps": steps,
        "notes": list(res.notes),
    }


def _dist(values: Any) -> dict[str, int]:
    from analyzers.distributions import distribution

    return distribution(np.asarray(values, dtype=np.int64))


def _grouped(g: Any, by: str, top: int | None) -> list[dict[str, Any]]:
    """The rows of :class:`analyzers.distributions.Grouped` *g* (the first *top*)."""
    from analyzers.distributions import STAT_KEYS

    rows = []
    for i, key in enumerate(g.keys[:top]):
        rows.append(
            {
                by: int(key) if by == "step" else str(key),
                "launches": int(g.launches[i]),
                "cpu_duration": {k: int(g.cpu[k][i]) for k in STAT_KEYS},
                "launch_delay": {k: int(g.delay[k][i]) for k in STAT_KEYS},
                "launch_delay_union_ns": int(g.union_ns[i]),
            }
        )
    return rows


def launch(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """HTA's launch statistics, gpuscope's wider launch view, distributions, queue length."""
    from analyzers import intervals as iv
    from analyzers.distributions import grouped
    from analyzers.idle import trace_notes
    from analyzers.launch import (
        LAUNCH_DELAY_CUTOFF_NS,
        RUNTIME_CUTOFF_NS,
        all_pairs,
        hta_pairs,
        launch_stats_of,
        queue_table,
    )

    p = hta_pairs(trace, options)
    cpu_sum, gpu_sum = int((p.cpu_end - p.cpu_start).sum()), int((p.gpu_end - p.gpu_start).sum())
    h = launch_stats_of(p.cpu_end - p.cpu_start, p.gpu_end - p.gpu_start, p.delay)
    e = all_pairs(trace, options)
    # one call per correlation id (its first op), in table order
    calls = np.sort(np.unique(e.correlation, return_index=True)[1])
    names = _codes(trace.host["name"])
    api, api_labels = names[0][e.host_rows[calls]], names[1]
    # ops a graph launch enqueued: their "delay" is a position inside the graph, not a wait
    a = ~e.graph
    d, op, cpu = e.delay, e.gpu_start, e.cpu_end - e.cpu_start
    k_codes, k_labels = _codes(trace.gpu["name"])
    stepped = a & (e.step >= 0)
    steps, step_codes = np.unique(e.step[stepped], return_inverse=True)
    return {
        "hta": {
            "launches": h.n,
            "cpu_duration_sum_ns": cpu_sum,
            "gpu_duration_sum_ns": gpu_sum,
            "launch_delay_sum_ns": int(p.delay.sum()),
            "cpu_duration_mean_us": _us(h.cpu_duration_mean_ns),
            "gpu_duration_mean_us": _us(h.gpu_duration_mean_ns),
            "launch_delay_mean_us": _us(h.launch_delay_mean_ns),
            "launch_delay_median_us": _us(h.launch_delay_median_ns),
            "launch_delay_max_ns": h.launch_delay_max_ns,
            "short_kernels": h.short_kernels,
            "runtime_outliers": h.runtime_outliers,
            "launch_delay_outliers": h.launch_delay_outliers,
            "runtime_cutoff_ns": RUNTIME_CUTOFF_NS,
            "launch_delay_cutoff_ns": LAUNCH_DELAY_CUTOFF_NS,
        },
        "all": {
            "calls": int(calls.size),
            "ops": int(e.correlation.size),
            "by_api": _value_counts(api, api_labels),
            "cpu_duration": _dist(cpu[calls]),
            "launch_delay": _dist(d[a]),
            "start_after_call": _dist((op - e.cpu_start)[a]),
            "graph_ops": int(e.graph.sum()),
            "launch_delay_union_ns": iv.total(iv.merge((op - d)[a & (d > 0)], op[a & (d > 0)])),
        },
        "per_kernel": _grouped(
            grouped(k_codes[e.gpu_rows[a]], k_labels, cpu[a], d[a], op[a]), "name", TOP_KERNELS
        ),
        "per_step": sorted(
            _grouped(
                grouped(step_codes, steps.tolist(), cpu[stepped], d[stepped], op[stepped]),
                "step",
                None,
            ),
            key=lambda r: r["step"],
        ),
        "queue": [
            {
                "stream": int(r["stream"]),
                "changes": int(r["changes"]),
                "max": int(r["max"]),
                "max_ts_ns": int(r["max_ts_ns"]),
                "time_weighted_mean": _float(r["time_weighted_mean"]),
            }
            for r in _records(queue_table(trace, options))
        ],
        "notes": list(trace_notes(trace)),
    }


def _codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Category codes of a name column (-1 missing) and the names."""
    import pandas as pd

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    return cat.cat.codes.to_numpy(), [str(c) for c in cat.cat.categories]


def _value_counts(codes: np.ndarray, labels: list[str]) -> dict[str, int]:
    """``value_counts()`` of the names: count, largest first, then first appearance."""
    live = codes[codes >= 0].astype(np.int64)
    counts = np.bincount(live, minlength=len(labels))
    first = np.full(len(labels), live.size, dtype=np.int64)
    np.minimum.at(first, live, np.arange(live.size))
    uniq = np.flatnonzero(counts)
    first, counts = first[uniq], counts[uniq]
    order = np.lexsort((first, -counts))
    return {
        labels[c]: int(n) for c, n in zip(uniq[order].tolist(), counts[order].tolist(), strict=True)
    }


def memory(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """Peak per device and series over the trace, and per step, with the op at each peak."""
    from analyzers.memory import memory_analysis

    res = memory_analysis(trace, options)
    series = [
        {
            "device": p.device,
            "series": p.series,
            "samples": p.samples,
            "peak_bytes": p.peak_bytes,
            "peak_ts_ns": p.peak_ts_ns,
            "peak_op": p.peak_op,
            "first_bytes": p.first_bytes,
            "last_bytes": p.last_bytes,
        }
        for p in res.peaks
    ]
    steps = [
        {
            "device": int(r["device"]),
            "series": str(r["series"]),
            "step": int(r["step"]),
            "at_start_bytes": _int(r["at_start_bytes"]),
            "peak_bytes": _int(r["peak_bytes"]),
            "peak_ts_ns": _int(r["peak_ts_ns"]),
            "peak_op": r["peak_op"] if isinstance(r["peak_op"], str) else None,
            "at_end_bytes": _int(r["at_end_bytes"]),
        }
        for r in res.steps.to_dict("records")
    ]
    return {"series": series, "steps": steps, "notes": list(res.notes)}
