"""LLM serving and inference analyses (issue 20), pure functions of the trace model.

- :mod:`.ops`: every GPU activity with the CPU op that launched it (eager launches) or, for
  kernels replayed from a CUDA/HIP graph, the op attributed by :mod:`.graphs`;
- :mod:`.capture`: capture traces (``*StreamBeginCapture``) and the graph nodes they record;
- :mod:`.graphs`: graph-replayed kernels attributed to the ops that launched them at capture;
- :mod:`.categories`: the op-category rule table, :func:`kernel_category`, GPU time per
  category (per step and per phase);
- :mod:`.phases`: serving steps classified as prefill / decode / mixed from the frameworks'
  annotations, with per-phase GPU time, batch sizes, tokens, tokens/s, time per output token;
- :mod:`.moe`: expert GEMMs, routing, permute/unpermute and dispatch/combine per MoE layer type;
- :mod:`.analysis`: all of the above for one trace, in dependency order.

Definitions of every number are in ``docs/inference.md``.
"""

from analyzers.serving.analysis import ServingAnalysis, serving_analysis
from analyzers.serving.capture import capture_nodes, capture_regions, is_capture_trace
from analyzers.serving.categories import CATEGORIES, category_breakdown, kernel_category
from analyzers.serving.graphs import Capture, GraphAttribution, attribute_graphs
from analyzers.serving.moe import moe_view
from analyzers.serving.ops import kernel_ops
from analyzers.serving.phases import (
    PHASE_RULES,
    PhaseRule,
    phase_summary,
    serving_steps,
    step_ranges,
)

__all__ = [
    "CATEGORIES",
    "PHASE_RULES",
    "Capture",
    "GraphAttribution",
    "PhaseRule",
    "ServingAnalysis",
    "attribute_graphs",
    "capture_nodes",
    "capture_regions",
    "category_breakdown",
    "is_capture_trace",
    "kernel_category",
    "kernel_ops",
    "moe_view",
    "phase_summary",
    "serving_analysis",
    "serving_steps",
    "step_ranges",
]
