"""Shared test fixtures: where the shared real data lives, and how absent services behave.

Real traces live in ``../shared/data`` (beside the checkout; override with
``GPUSCOPE_SHARED``).  Tests that need them skip with a clear reason when absent.  Tests that
need a service (PostgreSQL, Chromium, torch) skip when it is absent, except under ``CI=true``,
where ``.ci/run`` has installed it and absence is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
SHARED_DATA = SHARED / "data"
SAMPLES = REPO / "sample_traces"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


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


@pytest.fixture
def kineto_dir() -> Path:
    return shared_path("kineto", "hta")


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test (and the CLI subprocesses it starts) caches parsed traces in a temporary
    directory, never in the user's ~/.cache."""
    if "GPUSCOPE_CACHE_DIR" not in os.environ or not os.environ.get("GPUSCOPE_KEEP_CACHE_DIR"):
        monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
