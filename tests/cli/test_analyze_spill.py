"""``gpuscope analyze`` with its columns spilled to the Arrow cache (``GPUSCOPE_SPILL``), as a
user runs it: the same JSON summary, one note per rank spilled; a bad setting is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import gpuscope

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_a_spilled_analysis_writes_the_same_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = SAMPLES / "synthetic_2rank"
    monkeypatch.setenv("GPUSCOPE_SPILL", "never")
    kept = gpuscope("analyze", trace, "--json", tmp_path / "kept.json", "--no-cache")
    monkeypatch.setenv("GPUSCOPE_SPILL", "always")
    monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    spilled = gpuscope("analyze", trace, "--json", tmp_path / "spilled.json", "--no-cache")
    assert kept.returncode == spilled.returncode == 0, spilled.stderr
    assert (tmp_path / "kept.json").read_bytes() == (tmp_path / "spilled.json").read_bytes()
    notes = [line for line in spilled.stderr.splitlines() if "memory-mapped from" in line]
    assert len(notes) == 2 and all(n.startswith("gpuscope: note: ") for n in notes)
    assert str(tmp_path / "cache" / "spill") in notes[0]
    assert list((tmp_path / "cache" / "spill").iterdir()) == []  # nothing left on disk
    assert "memory-mapped" not in kept.stderr


def test_a_bad_spill_setting_is_one_usage_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOPE_SPILL", "maybe")
    r = gpuscope("analyze", SAMPLES / "synthetic_2rank", "--json", tmp_path / "s.json")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "gpuscope: error: GPUSCOPE_SPILL must be one of auto, always, never, not 'maybe'"
    ]
    assert not (tmp_path / "s.json").exists()
