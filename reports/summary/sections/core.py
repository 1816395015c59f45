"""The foundation's per-rank sections of the JSON summary (registered in
:mod:`reports.summary.registry`).

Each function is ``fn(trace, options, inputs)`` and returns the keys of schema_version 1
(docs/metrics.md defines every number; ``steps`` has the GPU-clock keys of §7 and
``integrity`` is §10).  Times are integer nanoseconds (``*_ns``); the kernel
summary's ``avg_ns``, ``median_ns`` and ``stddev_ns`` are rounded to the nearest ns (the only
rounding: they are not whole numbers to begin with).  Percentages are unrounded floats;
undefined values are ``null``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from analyzers.options import AnalysisOptions

if TYPE_CHECKING:
    from analyzers.inputs import AnalysisInputs
    from collectors.model import Trace


def _float(x: Any) -> float | None:
    """A JSON-safe float: None for None/NaN."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _round_ns(x: Any) -> int | None:
    f = _float(x)
    return None if f is None else round(f)


def device(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> Any:
    """The GPU this rank ran on (``DeviceInfo.to_dict()``), or None when the source lacks it."""
    from analyzers.arch import device_arch_name

    d = trace.gpu_device
    return {**d.to_dict(), "arch": device_arch_name(d)} if d is not None else None


def window(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """``{"start_ns", "end_ns", "steps"}``: the launch window and the steps inside it."""
    from analyzers.window import window as analysis_window

    w = analysis_window(trace, options)
    return {"start_ns": w.start_ns, "end_ns": w.end_ns, "steps": list(w.steps)}


def kernel_summary(
    trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> list[dict[str, Any]]:
    """One object per kernel name, by total time descending."""
    from analyzers.kernel_summary import kernel_summary as summarize

    df = summarize(trace, options)
    rows = []
    for r in df.to_dict("records"):
        rows.append(
            {
                "name": str(r["name"]),
                "type": str(r["type"]),
                "count": int(r["count"]),
                "total_ns": int(r["total_ns"]),
                "avg_ns": _round_ns(r["avg_ns"]),
                "median_ns": _round_ns(r["median_ns"]),
                "min_ns": int(r["min_ns"]),
                "max_ns": int(r["max_ns"]),
                "stddev_ns": _round_ns(r["stddev_ns"]),
                "time_pct": _float(r["time_pct"]),
            }
        )
    return rows


def temporal(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """Span, idle, compute, non-compute (ns and % of span)."""
    from analyzers.temporal import temporal_breakdown

    t = temporal_breakdown(trace, options)
    return {
        "span_ns": t.span_ns,
        "idle_ns": t.idle_ns,
        "compute_ns": t.compute_ns,
        "non_compute_ns": t.non_compute_ns,
        "idle_pct": _float(t.idle_pct),
        "compute_pct": _float(t.compute_pct),
        "non_compute_pct": _float(t.non_compute_pct),
    }


def overlap(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """Communication, computation, their overlap, exposed communication, overlap %."""
    from analyzers.temporal import overlap as comm_overlap

    o = comm_overlap(trace, options)
    return {
        "comm_ns": o.comm_ns,
        "compute_ns": o.compute_ns,
        "overlap_ns": o.overlap_ns,
        "exposed_comm_ns": o.exposed_comm_ns,
        "overlap_pct": _float(o.overlap_pct),
    }


def steps(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> list[dict[str, Any]]:
    """One object per ProfilerStep of the window, its GPU figures on the GPU clock
    (docs/metrics.md §7); ``gpu_start_ns``/``gpu_end_ns``/``launch_lag_ns``/``steps_behind``
    are null for a step without GPU work."""
    from analyzers.steps import STEP_COLUMNS, step_breakdown

    df = step_breakdown(trace, options)
    out = []
    for row in df.itertuples(index=False):
        d: dict[str, Any] = {}
        for c, v in zip(STEP_COLUMNS, row, strict=True):
            if c == "steps_behind":
                d[c] = _float(v)
            elif c in _MAYBE_ABSENT:
                d[c] = int(v) if v >= 0 else None
            else:
                d[c] = int(v)
        out.append(d)
    return out


_MAYBE_ABSENT = frozenset({"gpu_start_ns", "gpu_end_ns", "launch_lag_ns"})


def integrity(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any]:
    """What makes the rank's numbers mean less than they seem (docs/metrics.md §10)."""
    from analyzers.integrity import integrity as rank_integrity

    i = rank_integrity(trace, options)
    lag = i.lag
    return {
        "capture": i.capture,
        "capture_regions": i.capture_regions,
        "graph_launches": i.graph_launches,
        "graph_launches_unrecorded": i.graph_launches_unrecorded,
        "unrecorded_idle_ns": i.unrecorded_idle_ns,
        "prelaunched_events": i.prelaunched_events,
        "prelaunched_ns": i.prelaunched_ns,
        "prelaunched_included": i.prelaunched_included,
        "edge_gaps": [
            {
                "edge": g.edge,
                "step": g.step,
                "start_ns": g.start_ns,
                "end_ns": g.end_ns,
                "idle_ns": g.idle_ns,
                "share": g.share,
            }
            for g in i.edge_gaps
        ],
        "lag": None
        if lag is None
        else {
            "steps": lag.steps,
            "median_launch_lag_ns": lag.median_launch_lag_ns,
            "median_steps_behind": _float(lag.median_steps_behind),
            "max_steps_behind": _float(lag.max_steps_behind),
        },
        "notes": list(i.notes),
    }


def notes(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> list[str] | None:
    """One-line notes the collector left about this rank (e.g. "no kernels captured"), or None."""
    n = trace.meta.extra.get("notes")
    return [str(x) for x in n] if n else None
