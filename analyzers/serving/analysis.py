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
from analyzers.serving.categories import categorize
from analyzers.serving.graphs import Capture, GraphAttribution, attribute_graphs
from analyzers.serving.moe import moe_view
from analyzers.serving.ops import kernel_ops, range_owner
from analyzers.serving.phases import (
    PHASE_RULES,
    PhaseRule,
    phase_summary,
    serving_steps,
    step_ranges,
)

if TYPE_CHECKING:
    from collectors.model import Trace


@dataclass(frozen=True)
class ServingAnalysis:
    """The serving analyses of one trace."""

    capture_trace: bool
    """The trace records stream captures (:func:`~analyzers.serving.capture.is_capture_trace`)."""
    capture_regions: int
    capture_nodes: int
    graphs: GraphAttribution
    kops: pd.DataFrame
    """:func:`~analyzers.serving.ops.kernel_ops` with a ``category`` column."""
    steps: pd.DataFrame
    """Serving steps (:func:`~analyzers.serving.phases.serving_steps`)."""
    owner: np.ndarray
    """Per kops row, its serving step (-1 none)."""
    phases: pd.DataFrame
    profiler_step: np.ndarray
    """Per kops row, the ``ProfilerStep#N`` number whose CPU range holds its launching call
    (-1 none)."""
    moe: dict[str, pd.DataFrame]
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
) -> ServingAnalysis:
    """All serving analyses of *trace*, graph replays attributed through *captures*."""
    cap = is_capture_trace(trace)
    regions = capture_regions(trace) if cap else None
    n_nodes = len(capture_nodes(trace, regions)) if regions is not None else 0
    ranges = step_ranges(trace, rules)
    graphs = attribute_graphs(trace, captures, ranges)
    kops = kernel_ops(trace, graphs)
    kops["category"] = categorize(kops)
    steps, owner = serving_steps(trace, kops, rules, ranges)
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
        profiler_step=profiler_steps(trace, kops),
        moe=moe_view(trace, kops, graphs, steps, owner),
        notes=tuple(notes),
    )
