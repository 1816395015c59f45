"""The headline figures of a run, derived from its JSON summary (docs/report.md §3).

Pure functions of a validated :class:`collectors.summary.schema.Summary`; no trace is read.
Times stay integer nanoseconds: sums of the summary's integers, and the median and p90 of step
times (:func:`analyzers.stats.median` / :func:`analyzers.stats.quantile`) rounded to the
nearest ns.  The report's cards and
findings (:mod:`analyzers.findings`) read these.
"""

from __future__ import annotations

from typing import Any

from analyzers.energy import run_energy_per_step_mj
from analyzers.stats import median, quantile, round_ns
from collectors.summary.schema import RooflinePoint, Summary


def rank_step_rows(summary: Summary) -> list[dict[str, int]]:
    """One row per (rank, step): the ``steps`` keys plus ``rank`` and ``memory_other_ns``.

    ``memory_other_ns`` = duration − compute − exposed_comm − idle (time when only MEMORY or
    OTHER GPU events run; docs/metrics.md §7), so the four parts add up to the step's duration.
    """
    rows = []
    for r in summary["ranks"]:
        for s in r["steps"]:
            d, c, e, i = s["duration_ns"], s["compute_ns"], s["exposed_comm_ns"], s["idle_ns"]
            rows.append(
                {
                    "rank": r["rank"],
                    "step": s["step"],
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
    """Median and p90 of the step times; None without steps."""
    st = step_times(summary)
    if not st:
        return None
    v = list(st.values())
    n_ranks = len({row["rank"] for row in rank_step_rows(summary)})
    return {
        "median_ns": round_ns(median(v)),
        "p90_ns": round_ns(quantile(v, 0.9)),
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
    span = sum(r["temporal"]["span_ns"] for r in summary["ranks"])
    busy = sum(r["temporal"]["span_ns"] - r["temporal"]["idle_ns"] for r in summary["ranks"])
    if span <= 0:
        return None
    return {"pct": 100.0 * busy / span, "busy_ns": busy, "total_ns": span, "basis": "span"}


def busy_fraction(summary: Summary) -> float | None:
    """GPU busy time / total time of :func:`gpu_busy_card` (None without steps and span)."""
    busy = gpu_busy_card(summary)
    return busy["busy_ns"] / busy["total_ns"] if busy is not None else None


def comm_card(summary: Summary) -> dict[str, Any] | None:
    """Overlap % (Σ overlap / Σ comm) and exposed communication (per step and share)."""
    ranks = summary["ranks"]
    comm = sum(r["overlap"]["comm_ns"] for r in ranks)
    overlap = sum(r["overlap"]["overlap_ns"] for r in ranks)
    exposed = sum(r["overlap"]["exposed_comm_ns"] for r in ranks)
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
        "exposed_per_step_ns": round_ns(median(per_step.values())) if per_step else None,
        "exposed_share_pct": (
            100.0 * sum(r["exposed_comm_ns"] for r in rows) / dur if dur > 0 else None
        ),
    }


def occupancy_card(summary: Summary) -> dict[str, Any] | None:
    """Mean over ranks of the time-weighted theoretical (and estimated achieved) occupancy."""
    theo, ach = [], []
    for r in summary["ranks"]:
        o = r.get("occupancy")
        if o is None:
            continue
        if (t := o["time_weighted_theoretical_pct"]) is not None:
            theo.append(t)
        if (a := o["time_weighted_est_achieved_pct"]) is not None:
            ach.append(a)
    if not theo:
        return None
    return {
        "theoretical_pct": sum(theo) / len(theo),
        "est_achieved_pct": sum(ach) / len(ach) if ach else None,
        "ranks": len(theo),
    }


def roofline_points(summary: Summary) -> list[RooflinePoint]:
    """Every listed op-roofline point of every rank."""
    out: list[RooflinePoint] = []
    for r in summary["ranks"]:
        ops = r.get("roofline", {}).get("ops")
        if ops is not None:
            out += ops["points"]
    return out


def throughput_card(summary: Summary) -> dict[str, Any] | None:
    """Achieved TFLOP/s per GPU and % of the roofline over the listed op-roofline points."""
    flop = time = 0.0
    att_flop = att_flop_done = 0.0
    for p in roofline_points(summary):
        f, t = p["flop_total"], p["time_ns"]
        if f is None or t is None or t <= 0 or p.get("model_error"):
            continue  # a point above its roof is a model error, never achieved
        flop += f
        time += t
        a = p["attainable_flops_per_s"]
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
    """Energy per step of the run (:func:`analyzers.energy.run_energy_per_step_mj` of the
    hosts' ``energy_per_step_mj``)."""
    run = summary.get("run")
    hosts = run["nvml"] if run is not None else []
    vals = [v for h in hosts if (v := h["energy_per_step_mj"]) is not None]
    if not vals:
        return None
    return {"energy_per_step_mj": run_energy_per_step_mj(vals), "hosts": len(vals)}


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
