"""A rank's metrics by construction (its ground truth), from its layout."""

from __future__ import annotations

from statistics import median
from typing import Any

from tests.support.synthetic.layout import RankLayout, StepLayout


def ground_truth(lay: RankLayout) -> dict[str, Any]:
    """The rank's metrics by construction, for the default window and ``--all-events``."""
    kept_default = lay.steps[:-1] if len(lay.steps) >= 2 else lay.steps
    return {
        "rank": lay.rank,
        "file": f"rank-{lay.rank}.json.gz",
        "device": lay.device,
        "windows": {
            "default": _window_truth(lay, kept_default, listed=kept_default),
            "all_events": _window_truth(lay, lay.steps, listed=lay.steps),
        },
        "memory_counters": [
            {"ts_ns": ts, "total_allocated": a, "total_reserved": r, "device": lay.device}
            for ts, a, r in lay.memory
        ],
    }


def _window_truth(
    lay: RankLayout, kept: list[StepLayout], listed: list[StepLayout]
) -> dict[str, Any]:
    init_s, init_e = lay.init_ns
    init_d = init_e - init_s
    span = kept[-1].gpu_last_ns - init_s
    compute = init_d + sum(s.compute_ns for s in kept)
    busy = init_d + sum(s.busy_ns for s in kept)
    idle = span - busy
    comm = sum(s.comm_ns for s in kept)
    overlap = sum(s.overlap_ns for s in kept)
    kept_steps = {s.step for s in kept} | {-1}
    totals: dict[str, dict[str, dict[str, int]]] = {"kernel": {}, "memcpy": {}}
    for op in lay.gpu:
        if op.step not in kept_steps:
            continue
        table = totals["memcpy" if op.kind == "memcpy" else "kernel"]
        k = table.setdefault(op.name, {"count": 0, "total_ns": 0, "min_ns": 2**62, "max_ns": 0})
        dur = op.end_ns - op.start_ns
        k["count"] += 1
        k["total_ns"] += dur
        k["min_ns"] = min(k["min_ns"], dur)
        k["max_ns"] = max(k["max_ns"], dur)
    return {
        "steps_in_window": [s.step for s in listed],
        "temporal": {
            "span_ns": span,
            "idle_ns": idle,
            "compute_ns": compute,
            "non_compute_ns": span - compute - idle,
        },
        "overlap": {
            "comm_ns": comm,
            "compute_ns": compute,
            "overlap_ns": overlap,
            "exposed_comm_ns": comm - overlap,
        },
        "steps": _steps_truth(lay, listed),
        "kernels": dict(sorted(totals["kernel"].items())),
        "memcpy": dict(sorted(totals["memcpy"].items())),
    }


def _steps_truth(lay: RankLayout, listed: list[StepLayout]) -> list[dict[str, Any]]:
    """The steps on the GPU clock (metrics.md §7), by construction: every step's work lies in
    its own ProfilerStep range after the initialisation kernel, so step N runs on the GPU from
    the previous listed step's last GPU end (the first: from its host start, the GPU being idle
    since the initialisation kernel) to its own last GPU end, and nothing else runs then."""
    out = []
    prev_end: int | None = None
    for s in listed:
        ops = [op for op in lay.gpu if op.step == s.step]
        g = s.start_ns if prev_end is None else prev_end
        if prev_end is None:  # the GPU was idle since the initialisation kernel ended
            g = min(s.gpu_first_ns, max(s.start_ns, lay.init_ns[1]))
        lag = round(median(op.start_ns - op.launch_ns for op in ops))
        duration = s.end_ns - s.start_ns
        out.append(
            {
                "step": s.step,
                "start_ns": s.start_ns,
                "end_ns": s.end_ns,
                "duration_ns": duration,
                "gpu_start_ns": g,
                "gpu_end_ns": s.gpu_last_ns,
                "gpu_duration_ns": s.gpu_last_ns - g,
                "compute_ns": s.compute_ns,
                "exposed_comm_ns": s.exposed_ns,
                "idle_ns": (s.gpu_last_ns - g) - s.busy_ns,
                "work_events": len(ops),
                "work_ns": sum(op.end_ns - op.start_ns for op in ops),
                "launch_lag_ns": lag,
                "steps_behind": lag / duration,
            }
        )
        prev_end = s.gpu_last_ns
    return out
