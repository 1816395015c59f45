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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULE_OF = {
    "ServingAnalysis": "analysis",
    "serving_analysis": "analysis",
    "capture_nodes": "capture",
    "capture_regions": "capture",
    "is_capture_trace": "capture",
    "CATEGORIES": "categories",
    "category_breakdown": "categories",
    "kernel_category": "categories",
    "Capture": "graphs",
    "GraphAttribution": "graphs",
    "attribute_graphs": "graphs",
    "moe_view": "moe",
    "kernel_ops": "ops",
    "PHASE_RULES": "phases",
    "PhaseRule": "phases",
    "phase_summary": "phases",
    "serving_steps": "phases",
    "step_ranges": "phases",
}
"""Where each name of the package lives: loaded on first use, so that a section importing one
light module (``capture``, whose names integrity and launch read) does not import them all."""


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
