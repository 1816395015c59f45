"""Where the test data lives and how an absent service behaves.

Real traces live in ``../shared/data`` (beside the checkout; override with
``GPUSCOPE_SHARED``).  Tests that need them skip with a clear reason when absent.  Tests that
need a service (PostgreSQL, Chromium, torch) skip when it is absent, except under ``CI=true``,
where ``.ci/run`` has installed it and absence is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
"""The repository root (the checkout)."""
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
SHARED_DATA = SHARED / "data"
SAMPLES = REPO / "sample_traces"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


HTA_TRACES = {
    "trace_filter": "trace_filter/sampled_rank-0.json.gz",
    "nccl_data": "nccl_parser_config/nccl_data.json.gz",
    "negative_queue": "negative_queue_length_values_check/rank0.json.gz",
    "ns_resolution": "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "amd_trace": "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "mtia": "mtia_trace_single_rank/mtia_rank_0.json.gz",
    "alexnet": "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
}
"""HTA's test traces that the golden tests read, by key (paths under ``kineto/hta``)."""


def shared_path(*parts: str) -> Path:
    """Path under ``../shared/data``; skips the calling test when it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data not present: {p} (set GPUSCOPE_SHARED to the shared/ folder)")
    return p


def require_service(name: str, available: bool, how: str) -> None:
    """Skip (locally) or fail (under CI=true) when a service the test needs is absent."""
    if available:
        return
    msg = f"{name} is not available: {how}"
    if IN_CI:
        pytest.fail(f"{msg} (CI=true: .ci/run should have installed it)")
    pytest.skip(msg)
