"""The run-level JSON section ``critical_path``: what to fix first, then each step's path.

Registered in :data:`reports.summary.registry.RUN_SECTIONS` (written before ``ranks``:
:data:`~reports.summary.registry.LEADING_RUN_SECTIONS`).  Keys are defined in
docs/critical-path.md §5.  Keys ending ``_ns`` are integer ns; means over steps are floats in
keys ending ``_ns_per_step``; ``what_to_fix_first`` is ordered by ``recovered_ns_per_step``.

The many-rank engine computes it from one table per rank (:func:`rank_part`: the rank's graph
part, :func:`analyzers.critical_path.part_table.part_table`); :func:`critical_path` takes those
tables or Traces alike, and turns Traces into tables first, so the in-process and the parallel
path run the same code on the same data.  Where a rank's graph part is at hand (the run's last
rank computing the section beside its part, :func:`part_early`; a sole rank,
:func:`part_alone`), the graph is analysed as it is: reading its table back gives it exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.critical_path.analysis import CriticalPath
    from analyzers.critical_path.rank_graph import RankGraph
    from analyzers.inputs import AnalysisInputs
    from analyzers.options import AnalysisOptions
    from collectors.model import Trace

TOP_SEGMENTS = 10
"""Largest path segments listed per step."""


def _unresolved_note(steps: int, waits: int) -> str:
    return (
        f"the critical path of {steps} step(s) crossed {waits} cross-stream wait(s) the trace "
        "does not resolve (cudaStreamWaitEvent / cudaEventSynchronize without the sync rows' "
        "wait_on_stream / wait_on_cuda_event_record_corr_id): the path may miss a dependency on "
        "another stream there"
    )


def section_from(result: CriticalPath) -> dict[str, Any]:
    """The JSON dict of an analysis result."""
    steps = []
    for p in result.paths:
        by = sorted(p.by_cause().items(), key=lambda kv: -kv[1])
        top = p.longest(TOP_SEGMENTS)
        steps.append(
            {
                "step": p.step,
                "rank": p.rank,
                "duration_ns": p.duration_ns,
                "replayed_ns": result.replayed_ns.get(p.step),
                "duration_ns_by_rank": {str(k): v for k, v in sorted(p.rank_durations.items())},
                "segments": p.n_segments,
                "unresolved_waits": p.unresolved_waits,
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
    measured = result.measured_ns
    mean_step = sum(measured.values()) / len(measured) if measured else 0.0
    waits = sum(p.unresolved_waits for p in result.paths)
    hit = sum(1 for p in result.paths if p.unresolved_waits)
    notes = [_unresolved_note(hit, waits)] if waits else []
    if result.graph.dropped_edges:
        notes.append(
            f"{result.graph.dropped_edges} launch/stream-order edge(s) left out: the GPU row "
            "starts before its launch call or before its stream predecessor ended (clock skew "
            "or overlapping rows in the trace)"
        )
    return {
        "what_to_fix_first": [
            {
                "change": w.change.label,
                "kind": w.change.kind,
                "category": w.change.category or None,
                "rank": w.change.rank if w.change.rank >= 0 else None,
                "recovered_ns_per_step": w.recovered_ns,
                "recovered_share": w.recovered_ns / mean_step if mean_step > 0 else 0.0,
                "predicted_ns_by_step": {str(k): v for k, v in sorted(w.predicted_ns.items())},
                "assumptions": w.change.assumptions,
            }
            for w in result.ranking
        ],
        "measured_ns_per_step": mean_step,
        "ranks": sorted(result.graph.ranks),
        "clock_offset_ns_by_rank": {str(k): v for k, v in sorted(result.graph.offsets.items())},
        "matched_collectives": len(result.graph.joins),
        "measured_ns_by_step": {str(k): v for k, v in sorted(measured.items())},
        "replay_exact": result.replayed_ns == measured,
        "cause_ns_per_step": {c: v / n for c, v in result.cause_ns.items()},
        "unresolved_waits": waits,
        "notes": notes,
        "steps": steps,
    }


def rank_part(trace: Trace) -> pd.DataFrame:
    """The rank's graph part as one table (what a many-rank worker returns)."""
    from analyzers.critical_path.part_table import part_table
    from analyzers.critical_path.rank_graph import rank_graph

    return part_table(rank_graph(trace))


def critical_path_of(
    parts: Sequence[Trace | pd.DataFrame | RankGraph], busbw_gbps: float | None = None
) -> dict[str, Any] | None:
    """The section of the ranks' Traces, :func:`rank_part` tables or graph parts (one per
    rank, in rank order; a table is read back by
    :func:`~analyzers.critical_path.part_table.part_from_table`, which inverts
    :func:`~analyzers.critical_path.part_table.part_table` exactly); *busbw_gbps* adds a
    what-if at that bus bandwidth.  None without traces or when no rank has a
    ``ProfilerStep``."""
    import pandas as pd

    from analyzers.critical_path.analysis import critical_path_analysis
    from analyzers.critical_path.part_table import part_from_table
    from analyzers.critical_path.rank_graph import RankGraph

    if not parts:
        return None
    graphs = [
        p
        if isinstance(p, RankGraph)
        else part_from_table(p if isinstance(p, pd.DataFrame) else rank_part(p))
        for p in parts
    ]
    result = critical_path_analysis(graphs, busbw_gbps=busbw_gbps)
    if not result.paths:
        return None
    return section_from(result)


def critical_path(
    traces: Sequence[Trace | pd.DataFrame | RankGraph],
    options: AnalysisOptions,
    inputs: AnalysisInputs,
) -> dict[str, Any] | None:
    """The ``critical_path`` run section (:func:`critical_path_of`; every event of each trace,
    whatever the analysis window)."""
    return critical_path_of(traces)


def part_extract(
    fn: Any, trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> pd.DataFrame:
    """The many-rank reducer's worker side: the rank's :func:`rank_part`."""
    return rank_part(trace)


def part_alone(
    fn: Any, trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The rank's :func:`rank_part` and the section of a run of that rank alone (what
    :func:`critical_path` gives of that one table: the graph part is analysed as it is, not
    read back from its table, which :func:`~analyzers.critical_path.part_table.part_from_table`
    inverts exactly)."""
    from analyzers.critical_path.part_table import part_table

    part, section = _graph_and_section(trace)
    return part_table(part), section


def section_alone(
    fn: Any, trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """The section of :func:`part_alone` without the rank's part table (nothing will combine
    or cache it), nor its collectives (only joins across ranks read them)."""
    return _graph_and_section(trace, collectives=False)[1]


def part_early(
    fn: Any,
    trace: Trace,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    parts: Sequence[pd.DataFrame | None],
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The rank's :func:`rank_part` and the section *fn* over the run's part tables *parts*
    (summary order; ``None`` where this rank's goes, analysed as its graph part, not read back
    from its table): what :func:`part_combine` gives once every rank is done."""
    from analyzers.critical_path.part_table import part_table
    from analyzers.critical_path.rank_graph import rank_graph

    graph = rank_graph(trace)
    value = fn([graph if p is None else p for p in parts], options, inputs)
    return part_table(graph), value


def section_early(
    fn: Any,
    trace: Trace,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    parts: Sequence[pd.DataFrame | None],
) -> dict[str, Any] | None:
    """The section of :func:`part_early` without the rank's part table (nothing will cache
    it)."""
    from analyzers.critical_path.rank_graph import rank_graph

    graph = rank_graph(trace)
    return fn([graph if p is None else p for p in parts], options, inputs)


def _graph_and_section(
    trace: Trace, collectives: bool = True
) -> tuple[RankGraph, dict[str, Any] | None]:
    """The rank's graph part (with its collectives when *collectives*) and the section of a
    run of that rank alone."""
    from analyzers.critical_path.analysis import critical_path_analysis
    from analyzers.critical_path.rank_graph import rank_graph

    part = rank_graph(trace, collectives)
    result = critical_path_analysis([part])
    return part, section_from(result) if result.paths else None


def part_combine(
    fn: Any, digests: Sequence[Any], key: str, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """The reducer's caller side: the section *fn* on the ranks' tables."""
    return fn([d.parts[key] for d in digests], options, inputs)
