"""Figures the report derives from the JSON summary (docs/report.md §3 defines each one).

Pure functions of the summary dict; no trace is read.  Times stay integer nanoseconds;
quantiles are *observed* (the smallest value with at least Q of the sample at or below it, as
in docs/idle-and-launch.md), so a median or p90 is always one real step time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Summary = Mapping[str, Any]


def num(x: Any) -> float | None:
    """A finite number (bools and non-numbers are None)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def observed_quantile(values: Iterable[int], q: float) -> int | None:
    """Smallest value with at least ``q`` (0 < q ≤ 1) of the sample at or below it."""
    s = sorted(values)
    if not s:
        return None
    k = max(1, math.ceil(q * len(s) - 1e-9))
    return s[k - 1]


def ranks(summary: Summary) -> list[Mapping[str, Any]]:
    """The rank objects (those that are dicts)."""
    r = summary.get("ranks")
    return [x for x in r if isinstance(x, Mapping)] if isinstance(r, list) else []


def collective_rows(rank: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The rank's per-collective summary rows (``collectives``; docs/communication.md)."""
    c = rank.get("collectives")
    if isinstance(c, Mapping):  # early layout: {"summary": [...], ...}
        c = c.get("summary")
    return [x for x in c if isinstance(x, Mapping)] if isinstance(c, list) else []


def rank_step_rows(summary: Summary) -> list[dict[str, int]]:
    """One row per (rank, step): the ``steps`` keys plus ``rank`` and ``memory_other_ns``.

    ``memory_other_ns`` = duration − compute − exposed_comm − idle (time when only MEMORY or
    OTHER GPU events run; docs/metrics.md §7), so the four parts add up to the step's duration.
    """
    rows = []
    for r in ranks(summary):
        for s in r.get("steps") or []:
            if not isinstance(s, Mapping):
                continue
            d, c, e, i = (
                int(s[k]) for k in ("duration_ns", "compute_ns", "exposed_comm_ns", "idle_ns")
            )
            rows.append(
                {
                    "rank": int(r["rank"]),
                    "step": int(s["step"]),
                    "duration_ns": d,
                    "compute_ns": c,
                    "exposed_comm_ns": e,
                    "memory_other_ns": d - c - e - i,
                    "idle_ns": i,
                }
            )
    return rows


def step_times(summary: Summary) -> dict[int, int]:
    """Step number → step time: the largest ``duration_ns`` of that step over the ranks."""
    out: dict[int, int] = {}
    for row in rank_step_rows(summary):
        out[row["step"]] = max(out.get(row["step"], 0), row["duration_ns"])
    return out


def step_time_card(summary: Summary) -> dict[str, Any] | None:
    """Median and p90 (observed) of the step times; None without steps."""
    st = step_times(summary)
    if not st:
        return None
    v = list(st.values())
    n_ranks = len({row["rank"] for row in rank_step_rows(summary)})
    return {
        "median_ns": observed_quantile(v, 0.5),
        "p90_ns": observed_quantile(v, 0.9),
        "steps": len(v),
        "ranks": n_ranks,
    }


def gpu_busy_card(summary: Summary) -> dict[str, Any] | None:
    """GPU busy % over the steps of every rank, else over the ranks' GPU spans."""
    rows = rank_step_rows(summary)
    dur = sum(r["duration_ns"] for r in rows)
    if dur > 0:
        busy = sum(r["duration_ns"] - r["idle_ns"] for r in rows)
        return {"pct": 100.0 * busy / dur, "busy_ns": busy, "total_ns": dur, "basis": "steps"}
    span = busy = 0
    for r in ranks(summary):
        t = r.get("temporal") or {}
        if num(t.get("span_ns")) is None or num(t.get("idle_ns")) is None:
            continue
        span += int(t["span_ns"])
        busy += int(t["span_ns"]) - int(t["idle_ns"])
    if span <= 0:
        return None
    return {"pct": 100.0 * busy / span, "busy_ns": busy, "total_ns": span, "basis": "span"}


def comm_card(summary: Summary) -> dict[str, Any] | None:
    """Overlap % (Σ overlap / Σ comm) and exposed communication (per step and share)."""
    comm = overlap = exposed = 0
    for r in ranks(summary):
        o = r.get("overlap") or {}
        comm += int(o.get("comm_ns") or 0)
        overlap += int(o.get("overlap_ns") or 0)
        exposed += int(o.get("exposed_comm_ns") or 0)
    if comm == 0:
        return None
    rows = rank_step_rows(summary)
    per_step: dict[int, int] = {}
    for row in rows:
        per_step[row["step"]] = max(per_step.get(row["step"], 0), row["exposed_comm_ns"])
    dur = sum(r["duration_ns"] for r in rows)
    return {
        "overlap_pct": 100.0 * overlap / comm,
        "comm_ns": comm,
        "exposed_comm_ns": exposed,
        "exposed_per_step_ns": observed_quantile(per_step.values(), 0.5),
        "exposed_share_pct": (
            100.0 * sum(r["exposed_comm_ns"] for r in rows) / dur if dur > 0 else None
        ),
    }


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def occupancy_card(summary: Summary) -> dict[str, Any] | None:
    """Mean over ranks of the time-weighted theoretical (and estimated achieved) occupancy."""
    theo, ach = [], []
    for r in ranks(summary):
        o = r.get("occupancy") or {}
        if (t := num(o.get("time_weighted_theoretical_pct"))) is not None:
            theo.append(t)
        if (a := num(o.get("time_weighted_est_achieved_pct"))) is not None:
            ach.append(a)
    if not theo:
        return None
    return {
        "theoretical_pct": _mean(theo),
        "est_achieved_pct": _mean(ach),
        "ranks": len(theo),
    }


def roofline_points(summary: Summary) -> list[Mapping[str, Any]]:
    """Every listed op-roofline point of every rank."""
    out = []
    for r in ranks(summary):
        ops = (r.get("roofline") or {}).get("ops") or {}
        out += [p for p in ops.get("points") or [] if isinstance(p, Mapping)]
    return out


def throughput_card(summary: Summary) -> dict[str, Any] | None:
    """Achieved TFLOP/s per GPU and % of the roofline over the listed op-roofline points."""
    flop = time = 0.0
    att_flop = att_flop_done = 0.0
    for p in roofline_points(summary):
        f, t = num(p.get("flop_total")), num(p.get("time_ns"))
        if f is None or t is None or t <= 0 or p.get("model_error"):
            continue  # a point above its roof is a model error, never achieved
        flop += f
        time += t
        a = num(p.get("attainable_flops_per_s"))
        if a is not None and a > 0:
            att_flop += a * t / 1e9
            att_flop_done += f
    if time <= 0:
        return None
    return {
        "tflops": flop / time / 1e3,
        "pct_of_roofline": 100.0 * att_flop_done / att_flop if att_flop > 0 else None,
        "flop": flop,
        "time_ns": time,
    }


def energy_card(summary: Summary) -> dict[str, Any] | None:
    """Energy per step: Σ over hosts of the host's median per-step energy (all its GPUs)."""
    hosts = ((summary.get("run") or {}).get("nvml")) or []
    vals = [v for h in hosts if (v := num(h.get("energy_per_step_mj"))) is not None]
    if not vals:
        return None
    return {"energy_per_step_mj": sum(vals), "hosts": len(vals)}


def cards(summary: Summary) -> dict[str, Any]:
    """Every headline card's figures (a card is None when the summary lacks its data)."""
    return {
        "step_time": step_time_card(summary),
        "gpu_busy": gpu_busy_card(summary),
        "comm": comm_card(summary),
        "occupancy": occupancy_card(summary),
        "throughput": throughput_card(summary),
        "energy": energy_card(summary),
    }
