"""The per-rank results cached by one ``gpuscope analyze`` are found by the next one, a
separate process with its own string hashes: a second run of the same command on the same
trace reads its results (one entry in the store, not one more per run)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import gpuscope
from tests.support.env import SAMPLES


def _analyze(cache: Path, out: Path, seed: str) -> None:
    env = {"GPUSCOPE_CACHE_DIR": str(cache), "PYTHONHASHSEED": seed}
    done = gpuscope("analyze", SAMPLES / "torch_cpu", "--json", out, "--force", env=env)
    assert done.returncode == 0, done.stderr


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "results").glob("*/*") if p.is_dir())


def test_a_second_run_in_another_process_reads_the_cached_results(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    _analyze(cache, first, "1")
    entries = _entries(cache)
    assert len(entries) == 1
    _analyze(cache, second, "2")
    assert _entries(cache) == entries  # found, not written again under another key
    assert json.loads(first.read_text())["ranks"] == json.loads(second.read_text())["ranks"]
