"""Report data for the per-step views: step breakdown, ranks × steps heatmap, NVML counters.

Large runs are reduced before plotting (docs/report.md §5): the breakdown shows at most
:data:`MAX_BREAKDOWN_STEPS` steps and :data:`MAX_BREAKDOWN_RANKS` ranks (evenly spaced,
first and last included; exact values), the heatmap averages consecutive steps into at most
:data:`MAX_HEATMAP_STEPS` columns, and the counter timeline draws at most
:data:`MAX_STEP_MARKS` step markers, :data:`MAX_THROTTLE_BANDS` throttle bands (the longest) and
:data:`MAX_COUNTER_POINTS` counter points: NVML series arrive decimated from the summary (at most
1000 points each) and are decimated again, to an equal share each, when there are many.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analyzers.headline import rank_step_rows
from reports.html_metrics import Summary
from reports.summary.sections.series import decimate

MAX_BREAKDOWN_STEPS = 50
MAX_BREAKDOWN_RANKS = 16
MAX_HEATMAP_STEPS = 500
MAX_STEP_MARKS = 200
MAX_COUNTER_POINTS = 40_000
"""Counter points drawn in all; beyond it every series is decimated again to an equal share."""
MIN_SERIES_POINTS = 20
MAX_THROTTLE_BANDS = 500
"""Throttle bands drawn in all (the longest)."""

BREAKDOWN_PARTS = ("compute_ns", "exposed_comm_ns", "memory_other_ns", "idle_ns")


def evenly(items: Sequence[int], most: int) -> list[int]:
    """At most *most* items, evenly spaced over *items* (first and last kept), in order."""
    if len(items) <= most:
        return list(items)
    idx = np.unique(np.round(np.linspace(0, len(items) - 1, most)).astype(np.int64))
    return [items[int(i)] for i in idx]


def step_breakdown(summary: Summary) -> dict[str, Any] | None:
    """Stacked parts of every shown (step, rank); they add up to the step's duration."""
    rows = rank_step_rows(summary)
    if not rows:
        return None
    all_steps = sorted({r["step"] for r in rows})
    all_ranks = sorted({r["rank"] for r in rows})
    steps = set(evenly(all_steps, MAX_BREAKDOWN_STEPS))
    rks = set(evenly(all_ranks, MAX_BREAKDOWN_RANKS))
    shown = sorted(
        (r for r in rows if r["step"] in steps and r["rank"] in rks),
        key=lambda r: (r["step"], r["rank"]),
    )
    return {
        "rows": shown,
        "steps_total": len(all_steps),
        "ranks_total": len(all_ranks),
        "steps_shown": len(steps),
        "ranks_shown": len(rks),
    }


def heatmap(summary: Summary) -> dict[str, Any] | None:
    """Step duration per rank (rows) and step (columns); None for a single rank.

    With more than :data:`MAX_HEATMAP_STEPS` steps, column j is the mean duration (rounded to
    the ns) of the rank's steps in the j-th group of consecutive steps.
    """
    rows = rank_step_rows(summary)
    rks = sorted({r["rank"] for r in rows})
    if len(rks) < 2:
        return None
    steps = sorted({r["step"] for r in rows})
    groups = np.array_split(np.asarray(steps), min(len(steps), MAX_HEATMAP_STEPS))
    col_of = {int(s): j for j, g in enumerate(groups) for s in g}
    row_of = {r: i for i, r in enumerate(rks)}
    total = np.zeros((len(rks), len(groups)), dtype=np.int64)
    count = np.zeros((len(rks), len(groups)), dtype=np.int64)
    for r in rows:
        i, j = row_of[r["rank"]], col_of[r["step"]]
        total[i, j] += r["duration_ns"]
        count[i, j] += 1
    z: list[list[int | None]] = [
        [round(int(t) / int(c)) if c else None for t, c in zip(tr, cr, strict=True)]
        for tr, cr in zip(total, count, strict=True)
    ]
    labels = [str(int(g[0])) if len(g) == 1 else f"{int(g[0])}–{int(g[-1])}" for g in groups]
    return {
        "ranks": rks,
        "columns": labels,
        "binned": len(groups) < len(steps),
        "duration_ns": z,
    }


def counters(summary: Summary) -> dict[str, Any] | None:
    """The NVML hosts of ``run.nvml`` on one time axis (ns since the earliest host's start)."""
    hosts = [h for h in ((summary.get("run") or {}).get("nvml") or []) if isinstance(h, Mapping)]
    hosts = [h for h in hosts if h.get("series") or h.get("throttle") or h.get("step_marks")]
    if not hosts:
        return None
    t0 = min(int(h["t0_unix_ns"]) for h in hosts)
    series, marks, bands = [], [], []
    for h in hosts:
        off = int(h["t0_unix_ns"]) - t0
        for s in h.get("series") or []:
            series.append(
                {
                    "host": h["host"],
                    "device": s["device"],
                    "field": s["field"],
                    "samples": s["samples"],
                    "decimated": s["decimated"],
                    "t_ns": [off + int(t) for t in s["t_ns"]],
                    "value": s["value"],
                }
            )
        marks += [(off + int(m["t_ns"]), int(m["step"])) for m in h.get("step_marks") or []]
        bands += [
            {**b, "host": h["host"], "start_ns": off + b["start_ns"], "end_ns": off + b["end_ns"]}
            for b in h.get("throttle") or []
        ]
    marks = sorted(set(marks))
    shown_marks = evenly(list(range(len(marks))), MAX_STEP_MARKS)
    total = sum(len(s["t_ns"]) for s in series)
    if total > MAX_COUNTER_POINTS:
        cap = max(MIN_SERIES_POINTS, MAX_COUNTER_POINTS // len(series))
        for s in series:
            keep = decimate(np.asarray(s["t_ns"]), np.asarray(s["value"], dtype=float), cap)
            if len(keep) < len(s["t_ns"]):
                s["t_ns"] = [s["t_ns"][i] for i in keep]
                s["value"] = [s["value"][i] for i in keep]
                s["decimated"] = True
    if len(bands) > MAX_THROTTLE_BANDS:
        bands = sorted(bands, key=lambda b: b["start_ns"] - b["end_ns"])[:MAX_THROTTLE_BANDS]
    return {
        "t0_unix_ns": t0,
        "series": series,
        "step_marks": [{"t_ns": marks[i][0], "step": marks[i][1]} for i in shown_marks],
        "step_marks_total": len(marks),
        "throttle": sorted(bands, key=lambda b: (b["host"], b["device"], b["start_ns"])),
        "throttle_total": sum(
            len(h.get("throttle") or []) + int(h.get("throttle_bands_dropped") or 0) for h in hosts
        ),
        "decimated": any(s["decimated"] for s in series),
    }
