"""Per-rank JSON section ``serving`` (LLM serving and inference; keys defined in
``docs/inference.md`` "JSON"; their types in :class:`collectors.summary.schema.Serving`).

``serving_section(trace, options, inputs)`` follows the section convention of
``reports/summary``: a JSON-ready dict, keys ending ``_ns`` exact integer nanoseconds, shares
unrounded floats in 0–1, undefined values ``null``.  Side inputs
(:class:`analyzers.inputs.AnalysisInputs`): ``graph_captures`` (the capture traces, by the rank
they claim; a rank uses those of its own rank) and ``gpu_peaks`` (the peak table MFU is
measured against; the built-in one without).  The analyzers are imported inside the function,
so that loading the section registry stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.inputs import AnalysisInputs
    from analyzers.options import AnalysisOptions
    from analyzers.serving.analysis import ServingAnalysis
    from analyzers.serving.graphs import Capture
    from analyzers.serving.groups import Groups
    from collectors.model import Trace

VIA = ("op", "capture", "graph", "no-op", "no-launch")
CATEGORY_KEYS = ("category", "kernels", "time_ns", "share")
ROOF_KEYS = ("modelled_ns", "model_flops", "roof_ns", "pct_of_roof")
_FLOATS = frozenset(
    {"share", "coverage", "exact_share", "model_flops", "recomputed_flops"}
    | {"pct_of_roof", "peak_flops", "achieved_flops_per_s", "mfu", "hfu"}
    | {"tokens_per_s", "output_tokens_per_s"}
    | {"share_of_layer", "share_of_gpu", "share_of_step"}
)
"""Keys always written as floats (JSON ``0.0``, not ``0``), so the schema round-trips; every
``*_ns`` key is written as an integer (rounded to the ns), as everywhere in the summary."""


def _py(x: Any, key: str | None = None) -> Any:
    """A JSON-ready scalar: numpy → Python, NaN/NA → None; :data:`_FLOATS` keys as float."""
    if x is None:
        return None
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        x = int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return None
    if key in _FLOATS and isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if key is not None and key.endswith("_ns") and isinstance(x, float):
        return round(x)
    return x


def _records(df: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One dict per row of *df* (its *columns*), values :func:`_py` of what iterating each
    column gives (as ``itertuples`` does, without a Series per row)."""
    cols = list(columns or df.columns)
    values = [list(df[c]) for c in cols]
    return [
        {c: _py(v, c) for c, v in zip(cols, row, strict=True)} for row in zip(*values, strict=True)
    ]


def _unknown_to_none(d: dict[str, Any]) -> dict[str, Any]:
    """Annotation fields and a step's GPU start/end are -1 when unknown: null in JSON."""
    from analyzers.serving.phases import FIELDS

    unknown = (*FIELDS, "requests", "gpu_start_ns", "gpu_end_ns")
    return {k: (None if k in unknown and v == -1 else v) for k, v in d.items()}


def captures_for(trace: Trace, captures: Mapping[int, Sequence[Trace | Capture]]) -> tuple:
    """The capture traces of *trace*'s rank."""
    return tuple(captures.get(trace.rank, ()))


def _mfu(table: pd.DataFrame) -> dict[Any, dict[str, Any]]:
    """Per group of an MFU table, its JSON object."""
    from analyzers.serving.flops import MFU_COLUMNS  # the keys of an MFU object: all but "group"

    keys = MFU_COLUMNS[1:]
    return {_py(r["group"]): {k: r[k] for k in keys} for r in _records(table)}


def _categories(
    a: ServingAnalysis, codes: np.ndarray, groups: Groups, roofs: pd.DataFrame | None = None
) -> dict[Any, list[dict[str, Any]]]:
    """Category breakdown per group (:func:`analyzers.serving.categories.category_cells` of the
    rows' category *codes*), with the roof columns of *roofs* (same groups) when given."""
    from analyzers.serving.categories import CATEGORIES, category_cells

    out: dict[Any, list[dict[str, Any]]] = {}
    if not groups.labels:
        return out
    c = category_cells(codes, a.kops["dur_ns"].to_numpy(dtype=np.int64), groups)
    roof: dict[tuple[Any, str], dict[str, Any]] = {}
    if roofs is not None:
        roof = {(_py(r["group"]), r["category"]): r for r in _records(roofs)}
    cells = zip(c.group.tolist(), c.category.tolist(), c.kernels.tolist(), c.time_ns.tolist(),
                c.share.tolist(), strict=True)  # fmt: skip
    for g, cat, kernels, time_ns, share in cells:
        key = _py(groups.labels[g])
        r = {
            "category": CATEGORIES[cat],
            "kernels": kernels,
            "time_ns": time_ns,
            "share": _py(share, "share"),
        }
        if roofs is not None:
            got = roof.get((key, r["category"]), {})
            r.update({k: got.get(k, 0 if k == "modelled_ns" else None) for k in ROOF_KEYS})
            if r["model_flops"] is None:
                r["model_flops"] = 0.0
        out.setdefault(key, []).append(r)
    return out


def _graphs(a: ServingAnalysis) -> dict[str, Any]:
    g = a.graphs
    per_graph = []
    if len(g.launches):
        for gid, part in g.launches.groupby("graph", sort=True):
            per_graph.append(
                {
                    "graph": int(str(gid)),
                    "launches": len(part),
                    "kernels_per_launch": sorted({int(x) for x in part["kernels"]}),
                    "kernel_ns": int(part["kernel_ns"].sum()),
                    "attributed_ns": int(part["attributed_ns"].sum()),
                    "match": sorted({str(x) for x in part["match"]}),
                }
            )
    return {
        "method": g.method,
        "captures": len(g.captures),
        "launches": len(g.launches),
        "graphs": len(per_graph),
        "graph_kernel_ns": g.graph_kernel_ns,
        "attributed_ns": g.attributed_ns,
        "coverage": _py(g.coverage, "coverage"),
        "per_graph": per_graph,
    }


def serving_json(a: ServingAnalysis, match: Any = None) -> dict[str, Any]:
    """The JSON object of one rank's serving analysis (*match*: the peak look-up,
    :class:`analyzers.gpu_peaks.PeakMatch`)."""
    import pandas as pd

    from analyzers import intervals
    from analyzers.serving.categories import category_breakdown, category_codes
    from analyzers.serving.groups import Groups

    k = a.kops
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    total = int(dur.sum())
    if len(a.mfu["total"]):  # the union of every row's interval, as MFU's whole-trace group
        busy = int(a.mfu["total"]["busy_ns"].iloc[0])
    else:
        busy = intervals.total(intervals.merge(k["start_ns"].to_numpy(), k["end_ns"].to_numpy()))
    via_codes, via_values = pd.factorize(k["via"])
    via_ns = np.zeros(len(via_values), dtype=np.int64)
    np.add.at(via_ns, via_codes[via_codes >= 0], dur[via_codes >= 0])
    via = dict(zip(via_values.tolist(), via_ns.tolist(), strict=True))
    codes = category_codes(k)
    by_step = _categories(a, codes, Groups.at(a.owner))
    step_mfu = _mfu(a.mfu["steps"])
    steps = [
        {
            **_unknown_to_none(r),
            "categories": by_step.get(r["step"], []),
            "mfu": step_mfu.get(r["step"]),
        }
        for r in _records(a.steps)
    ]
    by_phase = (
        _categories(a, codes, Groups.at(a.owner, a.steps["phase"].to_numpy()), a.roofs["phases"])
        if len(a.steps)
        else {}
    )
    phase_mfu = _mfu(a.mfu["phases"])
    phases = [
        {
            **_unknown_to_none(r),
            "categories": by_phase.get(r["phase"], []),
            "mfu": phase_mfu.get(r["phase"]),
        }
        for r in _records(a.phases)
    ]
    pstep_mfu = _mfu(a.mfu["profiler_steps"])
    moe = None
    if len(a.moe["layers"]):
        moe = {
            "layers": _records(a.moe["layers"]),
            "roles": _records(a.moe["roles"]),
            "steps": _records(a.moe["steps"]) if "steps" in a.moe else [],
        }
    rank_cats = _categories(a, codes, Groups.one(len(k)), a.roofs["total"]).get(0, [])
    if not len(k):
        rank_cats = _records(category_breakdown(k), CATEGORY_KEYS)
    return {
        "capture_trace": a.capture_trace,
        "capture": {"graphs": a.capture_regions, "nodes": a.capture_nodes},
        "gpu_work_ns": total,
        "busy_ns": busy,
        "attribution_ns_by_source": {v: int(via.get(v, 0)) for v in VIA},
        "graphs": _graphs(a),
        "categories": rank_cats,
        "peaks": {
            "name": a.peaks.name if a.peaks is not None else None,
            "match": getattr(match, "how", None),
            "missing": getattr(match, "reason", None),
        },
        "mfu": _mfu(a.mfu["total"]).get(0),
        "steps": steps,
        "phases": phases,
        "profiler_steps": [
            {"step": s, "categories": c, "mfu": pstep_mfu.get(s)}
            for s, c in _categories(a, codes, Groups.at(a.profiler_step)).items()
        ],
        "moe": moe,
        "notes": list(a.notes),
    }


def serving_section(
    trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """The ``serving`` section of one rank (docs/inference.md "JSON"); None when the trace has
    no GPU work and records no stream capture."""
    from analyzers.gpu_peaks import peaks_for_device
    from analyzers.serving.analysis import serving_analysis
    from collectors.model import GPU_WORK_KINDS
    from collectors.peaks import load_peaks

    if not bool(trace.gpu["kind"].isin(GPU_WORK_KINDS).any()):
        from analyzers.serving.capture import is_capture_trace

        if not is_capture_trace(trace):
            return None
    table = inputs.gpu_peaks if inputs.gpu_peaks is not None else load_peaks(None)
    match = peaks_for_device(table, trace.gpu_device)
    caps = captures_for(trace, inputs.graph_captures)
    a = serving_analysis(trace, caps, peaks=match.peaks)
    return serving_json(a, match)
