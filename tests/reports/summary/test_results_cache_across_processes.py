"""The per-rank results cached by one ``gpuscope analyze`` are found by the next one, a
separate process with its own string hashes: a second run of the same command on the same
trace reads its results (one entry in the store, not one more per run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.env import SAMPLES

REPO = Path(__file__).resolve().parents[3]


def _analyze(cache: Path, out: Path, seed: str) -> None:
    env = {**os.environ, "GPUSCOPE_CACHE_DIR": str(cache), "PYTHONHASHSEED": seed}
    trace = SAMPLES / "torch_cpu"
    cmd = [sys.executable, "-m", "cli.main", "analyze", str(trace), "--json", str(out), "--force"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
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
