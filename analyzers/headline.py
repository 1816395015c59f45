"""The headline figures of a run, derived from its JSON summary (docs/report.md §3).

Each card says which view its figures use (``view``/``step_view``/``overlap_view``): the steps
on the GPU clock (docs/metrics.md §7), or HTA's analysis window (§5–6).

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

CLOCK_GPU = "GPU clock"
"""View of the per-step figures: each step's own GPU work (docs/metrics.md §7)."""
CLOCK_HOST = "host ranges"
"""View of summaries written before the GPU clock: GPU time clipped to the ProfilerStep range."""
VIEW_HTA = "HTA window"
"""View of the HTA-compatible figures: the analysis window's GPU events (docs/metrics.md §5–6)."""


def step_clock(summary: Summary) -> str:
    """:data:`CLOCK_GPU` when every step row carries ``gpu_duration_ns``, else
    :data:`CLOCK_HOST` (an older summary)."""
    rows = [s for r in summary["ranks"] for s in r["steps"]]
    return CLOCK_GPU if all("gpu_duration_ns" in s for s in rows) else CLOCK_HOST


def rank_step_rows(summary: Summary) -> list[dict[str, int]]:
    """One row per (rank, step): the ``steps`` keys plus ``rank``, ``gpu_duration_ns`` and
    ``memory_other_ns``.

    ``gpu_duration_ns`` is the step's length on the GPU clock (docs/metrics.md §7; an older
    summary without it: ``duration_ns``, the host range its GPU time was clipped to);
    ``memory_other_ns`` = gpu_duration − compute − exposed_comm − idle (time when only MEMORY
    or OTHER GPU events run), so the four parts add up to ``gpu_duration_ns``.
    """
    rows = []
    for r in summary["ranks"]:
        for s in r["steps"]:
            d, c, e, i = s["duration_ns"], s["compute_ns"], s["exposed_comm_ns"], s["idle_ns"]
            g = s.get("gpu_duration_ns", d)
            rows.append(
                {
                    "rank": r["rank"],
                    "step": s["step"],
                    "duration_ns": d,
                    "gpu_duration_ns": g,
                    "compute_ns": c,
                    "exposed_comm_ns": e,
                    "memory_other_ns": g - c - e - i,
                    "idle_ns": i,
                }
            )
    return rows


def _diagnosed(summary: Summary) -> list[Any]:
    """The ranks whose idle time means something: not graph-capture traces
    (docs/metrics.md §10)."""
    out = []
    for r in summary["ranks"]:
        i = r.get("integrity")
        if i is None or not i["capture"]:
            out.append(r)
    return out


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


def gpu_busy_card(summary: Summary, *, diagnosed_only: bool = False) -> dict[str, Any] | None:
    """GPU busy % over the steps of every rank on the GPU clock, else over the ranks' GPU spans
    (HTA window).  *diagnosed_only*: leave graph-capture ranks out (for the findings)."""
    ranks = _diagnosed(summary) if diagnosed_only else list(summary["ranks"])
    sub: Any = {**summary, "ranks": ranks}
    rows = rank_step_rows(sub)
    dur = sum(r["gpu_duration_ns"] for r in rows)
    if dur > 0:
        busy = sum(r["gpu_duration_ns"] - r["idle_ns"] for r in rows)
        return {
            "pct": 100.0 * busy / dur,
            "busy_ns": busy,
            "total_ns": dur,
            "basis": "steps",
            "view": step_clock(sub),
        }
    span = sum(r["temporal"]["span_ns"] for r in ranks)
    busy = sum(r["temporal"]["span_ns"] - r["temporal"]["idle_ns"] for r in ranks)
    if span <= 0:
        return None
    return {
        "pct": 100.0 * busy / span,
        "busy_ns": busy,
        "total_ns": span,
        "basis": "span",
        "view": VIEW_HTA,
    }


def busy_fraction(summary: Summary) -> float | None:
    """GPU busy time / total time of :func:`gpu_busy_card` (None without steps and span)."""
    busy = gpu_busy_card(summary)
    return busy["busy_ns"] / busy["total_ns"] if busy is not None else None


def comm_card(summary: Summary) -> dict[str, Any] | None:
    """Overlap % (Σ overlap / Σ comm, HTA window) and exposed communication per step and its
    share of step time (GPU clock)."""
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
    dur = sum(r["gpu_duration_ns"] for r in rows)
    return {
        "overlap_pct": 100.0 * overlap / comm,
        "comm_ns": comm,
        "exposed_comm_ns": exposed,
        "overlap_view": VIEW_HTA,
        "exposed_per_step_ns": round_ns(median(per_step.values())) if per_step else None,
        "exposed_share_pct": (
            100.0 * sum(r["exposed_comm_ns"] for r in rows) / dur if dur > 0 else None
        ),
        "step_view": step_clock(summary) if rows else None,
    }


def lag_card(summary: Summary) -> dict[str, Any] | None:
    """How far the GPU runs behind the CPU: the median over every (rank, step) with a launch
    lag of ``launch_lag_ns`` and of ``steps_behind``, and the largest ``steps_behind``
    (docs/metrics.md §7); None without such steps."""
    lag = [s.get("launch_lag_ns") for r in summary["ranks"] for s in r["steps"]]
    behind = [s.get("steps_behind") for r in summary["ranks"] for s in r["steps"]]
    lags = [v for v in lag if v is not None]
    behinds = [v for v in behind if v is not None]
    if not lags:
        return None
    return {
        "median_launch_lag_ns": round_ns(median(lags)),
        "median_steps_behind": median(behinds) if behinds else None,
        "max_steps_behind": max(behinds) if behinds else None,
        "steps": len(lags),
    }


def occupancy_card(summary: Summary) -> dict[str, Any] | None:
    """Mean over ranks of the time-weighted theoretical (and estimated achieved) occupancy,
    with the share of kernel time it covers (mean of the ranks' ``coverage``) and whether it
    is an upper bound (some rank's limits could not all be applied: AMD without registers)."""
    theo, ach, cov = [], [], []
    upper = False
    for r in summary["ranks"]:
        o = r.get("occupancy")
        if o is None:
            continue
        if (t := o["time_weighted_theoretical_pct"]) is not None:
            theo.append(t)
            upper = upper or bool(o.get("upper_bound"))
            if o["coverage"] is not None:
                cov.append(o["coverage"])
        if (a := o["time_weighted_est_achieved_pct"]) is not None:
            ach.append(a)
    if not theo:
        return None
    return {
        "theoretical_pct": sum(theo) / len(theo),
        "est_achieved_pct": sum(ach) / len(ach) if ach else None,
        "ranks": len(theo),
        "kernel_time_share": sum(cov) / len(cov) if cov else None,
        "upper_bound": upper,
    }


def roofline_points(summary: Summary) -> list[RooflinePoint]:
    """Every listed op-roofline point of every rank."""
    out: list[RooflinePoint] = []
    for r in summary["ranks"]:
        ops = r.get("roofline", {}).get("ops")
        if ops is not None:
            out += ops["points"]
    return out


def _throughput_from_coverage(summary: Summary) -> dict[str, Any] | None:
    """The card from every rank's ``roofline.ops.coverage`` (all points, not the listed top):
    TFLOP/s = Σ FLOP / Σ time over the ranks' achieved points; % of roofline = the ranks'
    ``pct_of_roofline`` weighted by their ``roofline_ns``; shares of Σ ``gpu_time_ns``."""
    flop = time = exact = gpu = roof_time = roof_exact = roof_pct = 0.0
    for r in summary["ranks"]:
        ops = r.get("roofline", {}).get("ops")
        if ops is None:
            continue
        c = ops["coverage"]
        t, fps = c["achieved_ns"], c["achieved_flops_per_s"]
        if t > 0 and fps is not None:
            flop += fps * t / 1e9
            time += t
            exact += c["achieved_exact_ns"]
        gpu += c["gpu_time_ns"] or 0
        rt, pct = c["roofline_ns"], c["pct_of_roofline"]
        if rt > 0 and pct is not None:
            roof_pct += pct * rt
            roof_time += rt
            roof_exact += c["roofline_exact_ns"]
    if time <= 0:
        return None
    return {
        "tflops": flop / time / 1e3,
        "pct_of_roofline": roof_pct / roof_time if roof_time > 0 else None,
        "flop": flop,
        "time_ns": time,
        "gpu_time_share": time / gpu if gpu > 0 else None,
        "exact_share": exact / time,
        "roofline_gpu_time_share": roof_time / gpu if gpu > 0 and roof_time > 0 else None,
        "roofline_exact_share": roof_exact / roof_time if roof_time > 0 else None,
        "basis": "all modelled ops",
    }


def throughput_card(summary: Summary) -> dict[str, Any] | None:
    """Achieved TFLOP/s per GPU and % of the roofline, with the share of GPU time they cover
    and the share of that time whose cost model is exact.

    From the ranks' ``roofline.ops.coverage`` when every rank with op points has it (all the
    modelled ops); else (older summaries) over the listed op-roofline points.
    """
    opses = [r["roofline"]["ops"] for r in summary["ranks"] if "ops" in r.get("roofline", {})]
    if opses and all("coverage" in o for o in opses):
        return _throughput_from_coverage(summary)
    flop = time = 0.0
    att_flop = att_flop_done = 0.0
    exact = 0.0
    for p in roofline_points(summary):
        f, t = p["flop_total"], p["time_ns"]
        if f is None or t is None or t <= 0 or p.get("model_error"):
            continue  # a point above its roof is a model error, never achieved
        flop += f
        time += t
        exact += t if p.get("exact") else 0.0
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
        "gpu_time_share": None,
        "exact_share": exact / time,
        "roofline_gpu_time_share": None,
        "roofline_exact_share": None,
        "basis": "listed points",
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
        "lag": lag_card(summary),
    }
