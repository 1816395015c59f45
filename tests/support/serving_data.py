"""The shared serving traces (TraceLens's ``inference/`` folder) and their capture traces."""

from __future__ import annotations

from pathlib import Path

from tests.support.env import IN_CI, SHARED_DATA, shared_path

TRACELENS = ("kineto", "tracelens")
INFERENCE = (*TRACELENS, "inference")

CAPTURED = {
    "vllm": (
        "vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "vllm_prefilldecode_piecewise/capture_traces/"
        "graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
    ),
    "sglang_decode": (
        "sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "sglang_decode/capture_traces/bs_32_rank0.json.gz",
    ),
    "xdit": (
        "xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz",
        "xdit_flux.1_aiter_sage/capture_traces/capture_trace_rank_0.json.gz",
    ),
}
"""Execution trace and the capture trace recorded while its graphs were built (paths under
``inference/``)."""

SERVING = {
    "sglang_decode": "sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "sglang_prefilldecode": "sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    "vllm": "vllm_prefilldecode_piecewise/graph_execution.json.gz",
}
"""The traces with serving-step annotations."""


def inference(rel: str) -> Path:
    """A file under ``inference/``; skips (fails under CI=true) when the shared data is absent."""
    p = SHARED_DATA.joinpath(*INFERENCE, rel)
    if IN_CI and not p.exists():
        raise AssertionError(f"CI=true but the shared trace is missing: {p}")
    return shared_path(*INFERENCE, rel)


def tracelens_root() -> Path:
    """``kineto/tracelens``; skips (fails under CI=true) when absent."""
    p = SHARED_DATA.joinpath(*TRACELENS)
    if IN_CI and not p.exists():
        raise AssertionError(f"CI=true but the shared data is missing: {p}")
    return shared_path(*TRACELENS)
