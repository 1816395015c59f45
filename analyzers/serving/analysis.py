"""Everything the serving section shows, computed once per trace (docs/inference.md).

:func:`serving_analysis` runs graph attribution, the kernel → op table, categories, serving
steps and phases, ProfilerStep ownership and the MoE view in dependency order.  It covers every
GPU work row of the trace (not the analysis window of the other sections: serving traces rarely
have ``ProfilerStep`` ranges, and a graph replay's kernels run long after its launch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.serving.capture import capture_nodes, capture_regions, is_capture_trace
from analyzers.serving.flops import category_roofs, mfu_table, row_flops
from analyzers.serving.graphs import Capture, GraphAttribution, attribute_graphs
from analyzers.serving.groups import Groups
from analyzers.serving.moe import moe_view
from analyzers.serving.ops import categorized_kernel_ops, range_owner
from analyzers.serving.phases import (
    PHASE_RULES,
    PhaseRule,
    phase_summary,
    serving_steps,
    step_ranges,
)

if TYPE_CHECKING:
    from collectors.model import Trace
    from collectors.peaks import GpuPeaks


@dataclass(frozen=True)
class ServingAnalysis:
    """The serving analyses of one trace."""

    capture_trace: bool
    """The trace records stream captures (:func:`~analyzers.serving.capture.is_capture_trace`)."""
    capture_regions: int
    capture_nodes: int
    graphs: GraphAttribution
    kops: pd.DataFrame
    """:func:`~analyzers.serving.ops.kernel_ops` with a ``category`` column and the model
    FLOPs of each row (:func:`~analyzers.serving.flops.row_flops`)."""
    steps: pd.DataFrame
    """Serving steps (:func:`~analyzers.serving.phases.serving_steps`)."""
    owner: np.ndarray
    """Per kops row, its serving step (-1 none)."""
    phases: pd.DataFrame
    profiler_step: np.ndarray
    """Per kops row, the ``ProfilerStep#N`` number whose CPU range holds its launching call
    (-1 none)."""
    moe: dict[str, pd.DataFrame]
    peaks: GpuPeaks | None = None
    """The device's peak-table entry MFU is measured against (None: unknown device)."""
    mfu: dict[str, pd.DataFrame] = field(default_factory=dict)
    """:func:`~analyzers.serving.flops.mfu_table` per ``steps`` (group = step), ``phases``,
    ``profiler_steps`` and ``total`` (one row, group 0)."""
    roofs: dict[str, pd.DataFrame] = field(default_factory=dict)
    """:func:`~analyzers.serving.flops.category_roofs` for ``total`` and per ``phases``."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def profiler_steps(trace: Trace, kops: pd.DataFrame) -> np.ndarray:
    """Per kops row, the ProfilerStep whose CPU range ``[start, end)`` holds the row's launching
    call (the GPU work a step launched, on the GPU's clock; overlapping steps: the one that
    starts last), or -1."""
    steps = trace.steps()
    if not len(steps):
        return np.full(len(kops), -1, dtype=np.int64)
    pos = range_owner(
        kops["launch_ns"].to_numpy(), steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy()
    )
    return np.where(pos >= 0, steps["step"].to_numpy()[np.maximum(pos, 0)], -1)


def serving_analysis(
    trace: Trace,
    captures: Sequence[Trace | Capture] = (),
    rules: Sequence[PhaseRule] = PHASE_RULES,
    peaks: GpuPeaks | None = None,
) -> ServingAnalysis:
    """All serving analyses of *trace*, graph replays attributed through *captures*; MFU
    against *peaks* (the device's entry of the GPU peak table)."""
    cap = is_capture_trace(trace)
    regions = capture_regions(trace) if cap else None
    n_nodes = len(capture_nodes(trace, regions)) if regions is not None else 0
    ranges = step_ranges(trace, rules)
    graphs = attribute_graphs(trace, captures, ranges)
    kops = categorized_kernel_ops(trace, graphs)
    kops = row_flops(trace, kops, graphs.captures)
    steps, owner = serving_steps(trace, kops, rules, ranges)
    pstep = profiler_steps(trace, kops)
    by_step = Groups.at(owner)
    by_phase = Groups.at(owner, steps["phase"].to_numpy() if len(steps) else None)
    step_busy = dict(zip(steps["step"].tolist(), steps["busy_ns"].tolist(), strict=True))
    phase_busy = steps.groupby("phase")["busy_ns"].sum().to_dict() if len(steps) else {}
    mfu = {
        "steps": mfu_table(kops, by_step, peaks, step_busy),
        "phases": mfu_table(kops, by_phase, peaks, phase_busy),
        "profiler_steps": mfu_table(kops, Groups.at(pstep), peaks),
        "total": mfu_table(kops, Groups.one(len(kops)), peaks),
    }
    roofs = {
        "total": category_roofs(kops, None, peaks),
        "phases": category_roofs(kops, by_phase, peaks),
    }
    notes = list(graphs.notes)
    if cap:
        notes.append(
            f"capture trace: {len(regions) if regions is not None else 0} graphs captured "
            f"({n_nodes} nodes); their kernels did not run while it was recorded — pass it with "
            "the execution trace to attribute the replays"
        )
    return ServingAnalysis(
        capture_trace=cap,
        capture_regions=len(regions) if regions is not None else 0,
        capture_nodes=n_nodes,
        graphs=graphs,
        kops=kops,
        steps=steps,
        owner=owner,
        phases=phase_summary(steps),
        profiler_step=pstep,
        moe=moe_view(trace, kops, graphs, steps, owner),
        peaks=peaks,
        mfu=mfu,
        roofs=roofs,
        notes=tuple(notes),
    )
