"""Shared test fixtures: where the shared real data lives, and how absent services behave.

Real traces live in ``../shared/data`` (beside the checkout; override with
``GPUSCOPE_SHARED``).  Tests that need them skip with a clear reason when absent.  Tests that
need a service (PostgreSQL, Chromium, torch) skip when it is absent, except under ``CI=true``,
where ``.ci/run`` has installed it and absence is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
SHARED_DATA = SHARED / "data"
SAMPLES = REPO / "sample_traces"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

pytest_plugins = ("support.stores",)
"""Shared fixtures of ``tests/support`` (``store_url``), available to every test module."""


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


def gpuscope(
    *args: str | Path, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the console script's entry point in a fresh interpreter (no PATH dependence)."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from cli.main import main; sys.exit(main())",
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


@pytest.fixture
def kineto_dir() -> Path:
    return shared_path("kineto", "hta")


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test (and the CLI subprocesses it starts) caches parsed traces in a temporary
    directory, never in the user's ~/.cache."""
    if "GPUSCOPE_CACHE_DIR" not in os.environ or not os.environ.get("GPUSCOPE_KEEP_CACHE_DIR"):
        monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
