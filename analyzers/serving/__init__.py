"""LLM serving and inference analyses (issue 20), pure functions of the trace model.

- :mod:`.ops`: every GPU activity with the CPU op that launched it (eager launches) or, for
  kernels replayed from a CUDA/HIP graph, the op attributed by :mod:`.graphs`;
- :mod:`.capture`: capture traces (``*StreamBeginCapture``) and the graph nodes they record;
- :mod:`.graphs`: graph-replayed kernels attributed to the ops that launched them at capture;
- :mod:`.categories`: the op-category rule table, :func:`kernel_category`, GPU time per
  category (per step and per phase);
- :mod:`.phases`: serving steps classified as prefill / decode / mixed from the frameworks'
  annotations, with per-phase GPU time, batch sizes, tokens, tokens/s, time per output token;
- :mod:`.moe`: expert GEMMs, routing, permute/unpermute and dispatch/combine per MoE layer type.

Definitions of every number are in ``docs/inference.md``.
"""

from analyzers.serving.capture import capture_nodes, capture_regions, is_capture_trace
from analyzers.serving.graphs import Capture, GraphAttribution, attribute_graphs
from analyzers.serving.ops import kernel_ops

__all__ = [
    "Capture",
    "GraphAttribution",
    "attribute_graphs",
    "capture_nodes",
    "capture_regions",
    "is_capture_trace",
    "kernel_ops",
]
