"""Fixtures and hooks every test shares: the shared-data fixture, a private trace cache.

Helpers (paths of the shared data, ``shared_path``, ``require_service``, the ``gpuscope``
subprocess runner) live in ``tests/support/`` (``tests.support.env``, ``tests.support.cli``);
import them from there, not from this file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.env import shared_path

pytest_plugins = ("tests.support.stores", "tests.support.html_summaries")
"""Shared fixtures of ``tests/support`` (``store_url``; ``sample_summary`` and
``hostile_summary``), available to every test module."""


@pytest.fixture
def kineto_dir() -> Path:
    return shared_path("kineto", "hta")


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test (and the CLI subprocesses it starts) caches parsed traces in a temporary
    directory, never in the user's ~/.cache."""
    if "GPUSCOPE_CACHE_DIR" not in os.environ or not os.environ.get("GPUSCOPE_KEEP_CACHE_DIR"):
        monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
