"""What to fix first: the critical path of each step across ranks and the what-ifs ranked by the
step time they would recover (docs/critical-path.md).

:func:`critical_path_analysis` builds the step graph of the ranks, cuts each step's path into
causes (:mod:`analyzers.critical_path.blame`), replays one what-if per cause found on the paths
(:mod:`analyzers.critical_path.simulate`) and ranks them by *recovered ns per step*:
``mean over steps of (measured job step time − predicted job step time)``.  The job step time is
the slowest rank's ``completion − ProfilerStep start``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analyzers.critical_path.blame import StepPath, cause_totals, mean, step_paths
from analyzers.critical_path.rank_graph import RankGraph
from analyzers.critical_path.simulate import Change, job_step_times, run, run_times
from analyzers.critical_path.step_graph import StepGraph, build_step_graph
from collectors.nccl_formulas import bus_factor, canonical_collective

if TYPE_CHECKING:
    from collectors.model import Trace

FASTER_FACTOR = 2.0
"""The speed-up tried for each kernel category on the paths."""


@dataclass(frozen=True)
class WhatIf:
    """One replayed change and its prediction."""

    change: Change
    predicted_ns: dict[int, int]
    """Predicted job step time per step."""
    recovered_ns: float
    """Mean over steps of measured − predicted (ns per step)."""


@dataclass
class CriticalPath:
    """The result of :func:`critical_path_analysis`."""

    graph: StepGraph
    paths: list[StepPath]
    measured_ns: dict[int, int]
    """Job step time per step (slowest rank)."""
    replayed_ns: dict[int, int]
    """The replay with no change (equals ``measured_ns``)."""
    ranking: list[WhatIf]

    @property
    def cause_ns(self) -> dict[str, int]:
        return cause_totals(self.paths)


def measured_job_step_times(g: StepGraph) -> dict[int, int]:
    """Per step, the slowest rank's measured ``completion − ProfilerStep start``."""
    out: dict[int, int] = {}
    for st in g.steps:
        out[st.num] = max(out.get(st.num, st.measured_ns), st.measured_ns)
    return out


def candidate_changes(g: StepGraph, paths: list[StepPath]) -> list[Change]:
    """One change per cause found on the paths (module docstring)."""
    found = {(c, d) for p in paths for c, d, _ in p.by_cause()}
    out: list[Change] = []
    for cat in sorted({d for c, d in found if c == "compute"}):
        out.append(Change("faster", category=cat, factor=FASTER_FACTOR))
    late = sorted({j.late_rank for j in g.joins if j.lateness_ns > 0})
    out += [Change("rank_on_time", rank=r) for r in late]
    if any(c == "launch_gap" for c, _ in found):
        out.append(Change("cuda_graphs"))
    if any(c == "exposed_communication" for c, _ in found):
        out.append(Change("overlap_comm"))
        peak = _busbw_change(g)
        if peak is not None:
            out.append(peak)
    return out


def _busbw_change(g: StepGraph, busbw_gbps: float | None = None) -> Change | None:
    """Collectives at *busbw_gbps* (default: the link's per-direction peak, when known)."""
    new: list[tuple[int, int]] = []
    bw_used = busbw_gbps
    for j in g.joins:
        bw = busbw_gbps if busbw_gbps is not None else j.link_peak_gbps
        n = int(j.group_size) if j.group_size == j.group_size else -1
        f = bus_factor(canonical_collective(j.collective), n if n > 0 else None)
        if not (bw > 0 and j.message_bytes > 0 and f == f):
            continue
        new.append((j.node, round(j.message_bytes * f / bw)))
        bw_used = bw
    if not new or bw_used is None:
        return None
    return Change("busbw", busbw_gbps=bw_used, transfer_ns=tuple(new))


def what_if(g: StepGraph, change: Change, measured: dict[int, int] | None = None) -> WhatIf:
    """Replay *change* and compare with the measured step times."""
    measured = measured if measured is not None else measured_job_step_times(g)
    pred = job_step_times(g, run_times(g, change))
    rec = mean([measured[k] - pred[k] for k in measured if k in pred])
    return WhatIf(change, pred, rec)


def critical_path_analysis(
    traces: Sequence[Trace | RankGraph], busbw_gbps: float | None = None
) -> CriticalPath:
    """Paths, causes and ranked what-ifs of *traces* (one per rank, or each rank's part
    :func:`analyzers.critical_path.rank_graph.rank_graph`; module docstring)."""
    g = build_step_graph(traces)
    measured = measured_job_step_times(g)
    baseline = run(g)
    replayed = job_step_times(g, baseline[0])
    paths = step_paths(g, baseline)
    changes = candidate_changes(g, paths)
    if busbw_gbps is not None:
        c = _busbw_change(g, busbw_gbps)
        if c is not None:
            changes.append(c)
    ranking = sorted(
        (what_if(g, c, measured) for c in changes), key=lambda w: (-w.recovered_ns, w.change.label)
    )
    return CriticalPath(g, paths, measured, replayed, ranking)
