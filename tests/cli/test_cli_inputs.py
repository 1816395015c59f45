"""cli.inputs.looks_like_summary: a JSON summary is told from a Kineto trace by its first key."""

from __future__ import annotations

from pathlib import Path

from cli.inputs import looks_like_summary


def test_looks_like_summary(tmp_path: Path) -> None:
    s = tmp_path / "s.json"
    s.write_text('  { "schema_version": 1, "ranks": []}')
    k = tmp_path / "k.json"
    k.write_text('{"schemaVersion": 1, "traceEvents": []}')
    gz = tmp_path / "s.json.gz"
    gz.write_bytes(b'{"schema_version": 1}')
    assert looks_like_summary(s)
    assert not looks_like_summary(k) and not looks_like_summary(gz)
    assert not looks_like_summary(tmp_path) and not looks_like_summary(tmp_path / "none.json")
