"""Per-rank JSON summary sections ``occupancy`` and ``roofline`` (docs/efficiency.md).

Side inputs read here (:class:`analyzers.inputs.AnalysisInputs`): ``ncu`` (a parsed
:class:`collectors.ncu.NcuReport`, from ``gpuscope analyze --ncu``), ``ncu_peaks`` (its
ceilings, ``--gpu``) and ``gpu_peaks`` (the loaded peak table, ``--peaks``; the built-in one
without).  The ncu roofline describes the profiled launches of that file, so it is the same in
every rank's section.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from analyzers.gpu_peaks import peaks_for_device

if TYPE_CHECKING:
    from analyzers.inputs import AnalysisInputs
    from analyzers.options import AnalysisOptions
    from collectors.model import Trace
    from collectors.peaks import PeakTable

TOP_N = 50
"""Kernel groups / roofline points listed per rank (largest first); totals cover all."""


def _num(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if hasattr(x, "item"):
        return _num(x.item())
    return x


def _peaks(inputs: AnalysisInputs) -> PeakTable:
    """The peak table the CLI loaded, else the built-in one."""
    from collectors.peaks import load_peaks

    return inputs.gpu_peaks if inputs.gpu_peaks is not None else load_peaks(None)


def occupancy(
    trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """Theoretical occupancy per kernel, time-weighted per rank, achieved beside it, flags.

    None when no kernel of the rank carries a launch configuration.
    """
    from analyzers.kernel_occupancy import kernel_occupancy

    r = kernel_occupancy(trace, inputs.ncu)
    if r.kernels_with_config == 0:
        return None
    out: dict[str, Any] = {
        "arch": r.arch,
        "limits_source": r.limits_source,
        "kernels": r.kernels,
        "kernels_with_config": r.kernels_with_config,
        "coverage": _num(r.coverage),
        "time_weighted_theoretical_pct": _num(r.time_weighted_pct),
        "time_weighted_est_achieved_pct": _num(r.est_achieved_time_weighted_pct),
        "reason": r.reason,
        "groups_total": len(r.groups),
        "by_kernel": [],
        "flags": [
            {
                "name": f.name,
                "block": f.block,
                "time_share": f.time_share,
                "theoretical_pct": f.theoretical_pct,
                "limiters": list(f.limiters),
                "suggestion": f.suggestion,
            }
            for f in r.flags
        ],
    }
    if r.upper_bound:  # AMD: registers/LDS not recorded (docs/efficiency.md §2)
        out["upper_bound"], out["limits_not_applied"] = True, list(r.limits_not_applied)
    if r.notes:
        out["notes"] = list(r.notes)
    for row in r.groups.head(TOP_N).to_dict("records"):
        for key in ("limiters", "limits_not_applied"):
            if key in row:
                row[key] = [x for x in row[key].split(",") if x]
        out["by_kernel"].append({k: _num(v) for k, v in row.items()})
    return out


def roofline(
    trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """Op-shape roofline of the rank and, with ``inputs.ncu``, the ncu roofline.

    None when the rank has no modelled op with GPU work and no ncu report was given.
    """
    from analyzers.op_models import op_costs, op_groups
    from analyzers.op_models.attribution import GPU_TIME
    from analyzers.roofline import ncu_roofline, op_roofline
    from collectors.errors import InputError

    table = _peaks(inputs)
    device = trace.gpu_device
    match = peaks_for_device(table, device)
    peaks = match.peaks
    costs = op_costs(trace)
    out: dict[str, Any] = {}
    if not costs.empty:
        groups = op_groups(costs)
        points = op_roofline(groups, peaks)
        total = int(costs.attrs[GPU_TIME])  # the GPU work time (op_costs: gpu_work_time_ns)
        modelled = int(costs["kernel_time_ns"].sum())
        out["ops"] = {
            "gpu_peaks": peaks.name if peaks else None,
            "device": device.name if device else None,
            "modelled_calls": len(costs),
            "modelled_gpu_time_ns": modelled,
            "modelled_gpu_time_share": modelled / total if total else None,
            "points_total": len(points),
            "points": [p.to_dict() for p in points[:TOP_N]],
            "coverage": points.coverage.to_dict(),
        }
        if match.how not in (None, "device name"):  # docs/efficiency.md §6
            out["ops"]["gpu_peaks_match"] = match.how
        if match.reason:
            out["ops"]["gpu_peaks_missing"] = match.reason
    ncu = inputs.ncu
    if ncu is not None:
        try:
            out["ncu"] = ncu_roofline(ncu, inputs.ncu_peaks).to_dict()
        except InputError as err:
            out["ncu"] = {"source": getattr(ncu, "path", None), "error": str(err)}
    return out or None
