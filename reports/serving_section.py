"""Per-rank JSON section ``serving`` (LLM serving and inference; keys defined in
``docs/inference.md`` "JSON").

``serving_section(trace, options, extras)`` follows the section convention of
``reports/summary``: a JSON-ready dict, keys ending ``_ns`` exact integer nanoseconds, shares
unrounded floats in 0–1, undefined values ``null``.  Capture traces come from
``extras["graph_captures"]``: a sequence of :class:`~collectors.model.Trace` or
:class:`~analyzers.serving.graphs.Capture` (for every rank), or a mapping rank → such a
sequence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.options import AnalysisOptions
from analyzers.serving.analysis import ServingAnalysis, serving_analysis
from analyzers.serving.categories import category_breakdown
from analyzers.serving.phases import FIELDS

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.serving.graphs import Capture
    from collectors.model import Trace

VIA = ("op", "capture", "graph", "no-op", "no-launch")


def _py(x: Any) -> Any:
    """A JSON-ready scalar: numpy → Python, NaN/NA → None."""
    if x is None:
        return None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(float(x)) else float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _records(df: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    cols = list(columns or df.columns)
    return [
        {c: _py(v) for c, v in zip(cols, row, strict=True)} for row in df[cols].itertuples(False)
    ]


_UNKNOWN_IS_MINUS_ONE = (*FIELDS, "requests", "gpu_start_ns", "gpu_end_ns")


def _unknown_to_none(d: dict[str, Any]) -> dict[str, Any]:
    """Annotation fields and a step's GPU start/end are -1 when unknown: null in JSON."""
    return {k: (None if k in _UNKNOWN_IS_MINUS_ONE and v == -1 else v) for k, v in d.items()}


def _captures(trace: Trace, extras: Mapping[str, Any]) -> Sequence[Trace | Capture]:
    caps = extras.get("graph_captures") or ()
    if isinstance(caps, Mapping):
        return tuple(caps.get(trace.rank, ()))
    return tuple(caps)


def _categories(a: ServingAnalysis, by: np.ndarray) -> dict[Any, list[dict[str, Any]]]:
    """Category breakdown per key of *by* (keys < 0 left out)."""
    keys = by.astype(object)
    keys[by < 0] = None
    out: dict[Any, list[dict[str, Any]]] = {}
    if not (by >= 0).any():
        return out
    b = category_breakdown(a.kops, keys)
    for key, part in b.groupby("group", sort=True):
        out[_py(key)] = _records(part, ("category", "kernels", "time_ns", "share"))
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
        "coverage": _py(g.coverage),
        "per_graph": per_graph,
    }


def serving_section(
    trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``serving`` section of one rank (docs/inference.md "JSON")."""
    a = serving_analysis(trace, _captures(trace, extras))
    k = a.kops
    total = int(k["dur_ns"].sum())
    via = k.groupby("via")["dur_ns"].sum()
    by_step = _categories(a, a.owner)
    steps = [
        {
            **_unknown_to_none(r),
            "categories": by_step.get(r["step"], []),
        }
        for r in _records(a.steps)
    ]
    by_phase: dict[str, list[dict[str, Any]]] = {}
    if len(a.steps):
        owned = a.owner >= 0
        keys = np.full(len(k), None, dtype=object)
        keys[owned] = a.steps["phase"].to_numpy()[a.owner[owned]]
        b = category_breakdown(k, keys)
        for key, part in b.groupby("group", sort=False):
            by_phase[str(key)] = _records(part, ("category", "kernels", "time_ns", "share"))
    phases = [
        {**_unknown_to_none(r), "categories": by_phase.get(r["phase"], [])}
        for r in _records(a.phases)
    ]
    moe = None
    if len(a.moe["layers"]):
        moe = {
            "layers": _records(a.moe["layers"]),
            "roles": _records(a.moe["roles"]),
            "steps": _records(a.moe["steps"]) if "steps" in a.moe else [],
        }
    return {
        "capture_trace": a.capture_trace,
        "capture": {"graphs": a.capture_regions, "nodes": a.capture_nodes},
        "gpu_work_ns": total,
        "attribution_ns": {v: int(via.get(v, 0)) for v in VIA},
        "graphs": _graphs(a),
        "categories": _records(category_breakdown(k), ("category", "kernels", "time_ns", "share")),
        "steps": steps,
        "phases": phases,
        "profiler_steps": [
            {"step": s, "categories": c} for s, c in _categories(a, a.profiler_step).items()
        ],
        "moe": moe,
        "notes": list(a.notes),
    }
