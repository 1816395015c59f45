"""The JSON document of ``gpuscope compare`` (docs/compare.md "JSON"): a
:class:`~analyzers.compare.Comparison` as the JSON-ready dict every other output renders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collectors.version import VERSION

if TYPE_CHECKING:
    from analyzers.compare import Comparison, SideInfo
    from analyzers.compare_match import Entry, ViewDiff
    from analyzers.compare_steps import StepDistribution

FORMAT = "gpuscope-compare"
SCHEMA_VERSION = 1

VIEW_TITLES = {
    "kernel": "kernel",
    "op": "op (name and input shapes)",
    "category": "op category",
    "collective": "collective (type and message size)",
    "annotation": "annotation",
    "step": "step (by index)",
}
MODE_TEXT = {
    "steps": "T = Σ duration of the ProfilerSteps paired by index (first n of each rank pair); "
    "work counts in the step it was launched in",
    "window": "T = Σ duration of every window step; work counts over the whole window "
    "(a JSON summary has no per-step kernel times)",
    "span": "T = Σ GPU span of the window (first GPU start to last GPU end); no steps compared",
}


def _round(x: float | None) -> int | None:
    return None if x is None else round(x)


def _entry(e: Entry, v: ViewDiff) -> dict[str, Any]:
    return {
        "key": e.key,
        "status": e.status,
        "names": list(e.names),
        "base": {
            "count": e.base_count,
            "total_ns": e.base_total_ns,
            "per_call_ns": _round(e.base_per_call_ns),
        },
        "current": {
            "count": e.current_count,
            "total_ns": e.current_total_ns,
            "per_call_ns": _round(e.current_per_call_ns),
        },
        "delta_ns": e.delta_ns,
        "delta_pct": e.delta_pct,
        "per_call_delta_pct": e.per_call_delta_pct,
        "share_pct": v.share_pct(e.delta_ns),
    }


def _view(v: ViewDiff) -> dict[str, Any]:
    return {
        "available": v.available,
        "note": v.note,
        "total_change_ns": v.total_change_ns,
        "matched_ns": v.matched_ns,
        "added_ns": v.added_ns,
        "removed_ns": v.removed_ns,
        "other_ns": v.other_ns,
        "unattributed_ns": v.unattributed_ns,
        "counts": {s: v.count(s) for s in ("matched", "added", "removed")},
        "entries": [_entry(e, v) for e in v.entries],
    }


def _side(s: SideInfo) -> dict[str, Any]:
    return {
        "label": s.label,
        "kind": s.kind,
        "formats": list(s.formats),
        "ranks": list(s.ranks),
        "steps_per_rank": list(s.steps_per_rank),
        "total_ns": s.total_ns,
        "units": s.units,
        "mean_ns": s.mean_ns,
    }


def _dist(d: StepDistribution) -> dict[str, Any]:
    return {
        "n": d.n,
        "samples_ns": [int(x) for x in d.samples_ns],
        "min_ns": _round(d.quantile(0.0)),
        "p10_ns": d.quantile(0.1),
        "median_ns": d.median_ns,
        "p90_ns": d.quantile(0.9),
        "max_ns": _round(d.quantile(1.0)),
        "mean_ns": d.mean_ns,
    }


def comparison_to_dict(cmp: Comparison, by: str = "kernel") -> dict[str, Any]:
    """The JSON document of a comparison (docs/compare.md "JSON")."""
    base = cmp.base.total_ns
    t = cmp.step_test
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpuscope", "version": VERSION},
        "by": by,
        "mode": cmp.mode,
        "definition": MODE_TEXT[cmp.mode],
        "base": _side(cmp.base),
        "current": _side(cmp.current),
        "rank_pairs": [list(p) for p in cmp.rank_pairs],
        "total_change_ns": cmp.total_change_ns,
        "total_change_pct": 100.0 * cmp.total_change_ns / base if base else None,
        "notes": list(cmp.notes),
        "step_time": {
            "base": _dist(cmp.base_steps),
            "current": _dist(cmp.current_steps),
            "test": {
                "statement": t.statement,
                "test": t.test,
                "p_value": t.p_value,
                "alpha": t.alpha,
                "gate_status": t.gate_status,
                "differ": t.differ,
            },
        },
        "views": {v.view: _view(v) for v in cmp.views},
    }
