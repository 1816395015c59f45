"""The run-level JSON section ``critical_path`` (to be registered in the summary's run sections).

``critical_path(traces, options, extras)`` returns a JSON-ready dict; keys are defined in
docs/critical-path.md.  Times are integer ns (``_ns``) except per-step means (``_ns`` floats,
averages over steps); ``what_to_fix_first`` is ordered by ``recovered_ns_per_step``.
``extras["busbw_gbps"]`` (optional) adds a what-if at that bus bandwidth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzers.critical_path.analysis import CriticalPath
    from analyzers.options import AnalysisOptions
    from collectors.model import Trace

TOP_SEGMENTS = 10
"""Largest path segments listed per step."""


def section_from(result: CriticalPath) -> dict[str, Any]:
    """The JSON dict of an analysis result."""
    steps = []
    for p in result.paths:
        by = sorted(p.by_cause().items(), key=lambda kv: -kv[1])
        top = sorted(p.segments, key=lambda s: -s.duration_ns)[:TOP_SEGMENTS]
        steps.append(
            {
                "step": p.step,
                "rank": p.rank,
                "duration_ns": p.duration_ns,
                "replayed_ns": result.replayed_ns.get(p.step),
                "rank_durations_ns": {str(k): v for k, v in sorted(p.rank_durations.items())},
                "segments": len(p.segments),
                "by_cause": [
                    {"cause": c, "detail": d, "rank": r if r >= 0 else None, "ns": ns}
                    for (c, d, r), ns in by
                ],
                "top_segments": [
                    {
                        "cause": s.cause,
                        "detail": s.detail,
                        "rank": s.rank,
                        "name": s.name,
                        "start_ns": s.start_ns,
                        "duration_ns": s.duration_ns,
                    }
                    for s in top
                ],
            }
        )
    n = max(len(result.paths), 1)
    return {
        "ranks": sorted(result.graph.ranks),
        "clock_offsets_ns": {str(k): v for k, v in sorted(result.graph.offsets.items())},
        "matched_collectives": len(result.graph.joins),
        "measured_step_ns": {str(k): v for k, v in sorted(result.measured_ns.items())},
        "replay_exact": result.replayed_ns == result.measured_ns,
        "cause_ns_per_step": {c: v / n for c, v in result.cause_ns.items()},
        "what_to_fix_first": [
            {
                "change": w.change.label,
                "kind": w.change.kind,
                "category": w.change.category or None,
                "rank": w.change.rank if w.change.rank >= 0 else None,
                "recovered_ns_per_step": w.recovered_ns,
                "predicted_step_ns": {str(k): v for k, v in sorted(w.predicted_ns.items())},
            }
            for w in result.ranking
        ],
        "steps": steps,
    }


def critical_path(
    traces: Sequence[Trace], options: AnalysisOptions, extras: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The ``critical_path`` section, or None when no rank has a ``ProfilerStep``."""
    from analyzers.critical_path.analysis import critical_path_analysis

    if not traces:
        return None
    result = critical_path_analysis(traces, busbw_gbps=extras.get("busbw_gbps"))
    if not result.paths:
        return None
    return section_from(result)
