"""``gpuscope cache info`` / ``gpuscope cache clear``: counts and sizes of what is on disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.main import main
from collectors.cache import CACHE_ENV, TraceCache, read_kineto_cached
from tests.support.env import shared_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    rc = main(["cache", *args])
    out = capsys.readouterr().out
    return rc, out.splitlines()


def disk_mib(area: Path) -> str:
    """Size of every file under *area*, as the command prints it (independent of the code)."""
    total = sum(p.stat().st_size for p in area.rglob("*") if p.is_file()) if area.exists() else 0
    return f"{total / 2**20:.1f} MiB"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    src = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    dst = tmp_path / "in" / src.name
    dst.parent.mkdir()
    shutil.copyfile(src, dst)
    return dst


def test_info_on_an_empty_cache_says_where_it_is_and_that_it_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, lines = run(capsys, "info", "--dir", str(tmp_path / "c"))
    assert rc == 0
    assert lines == [
        f"cache: {tmp_path / 'c'}",
        "parsed traces: 0 entries (0 stale), 0.0 MiB",
        "per-rank results: 0 entries (0 stale), 0.0 MiB",
        "total: 0 entries, 0.0 MiB",
    ]


def test_info_counts_entries_and_their_bytes_from_the_environment_directory(
    tmp_path: Path,
    trace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "c"
    monkeypatch.setenv(CACHE_ENV, str(root))
    read_kineto_cached(trace, TraceCache())
    rc, lines = run(capsys, "info")
    assert rc == 0
    assert lines[0] == f"cache: {root}"
    assert lines[1] == f"parsed traces: 1 entries (0 stale), {disk_mib(root / 'traces')}"
    assert lines[3] == f"total: 1 entries, {disk_mib(root / 'traces')}"


def test_clear_stale_removes_only_entries_of_other_versions(
    tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    cache = TraceCache(root)
    read_kineto_cached(trace, cache)
    other = tmp_path / "in" / "rank-3.json.gz"
    shutil.copyfile(shared_path("kineto", "hta", "trace_compare", "base", "base.json.gz"), other)
    _, outcome = read_kineto_cached(other, cache)
    man = cache.traces.path(outcome.key) / "manifest.json"  # type: ignore[arg-type]
    doc = json.loads(man.read_text())
    doc["versions"]["model_version"] = 0
    man.write_text(json.dumps(doc))
    stale_mib = disk_mib(man.parent)

    rc, lines = run(capsys, "info", "--dir", str(root))
    assert lines[1].startswith("parsed traces: 2 entries (1 stale)")
    rc, lines = run(capsys, "clear", "--stale", "--dir", str(root))
    assert rc == 0
    assert lines == [f"removed 1 stale entries ({stale_mib}) from {root}"]
    assert read_kineto_cached(trace, cache)[1].status == "hit"


def test_clear_removes_every_entry_and_the_next_load_parses_again(
    tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    read_kineto_cached(trace, TraceCache(root))
    size = disk_mib(root / "traces")
    rc, lines = run(capsys, "clear", "--dir", str(root))
    assert rc == 0
    assert lines == [f"removed 1 entries ({size}) from {root}"]
    assert not list((root / "traces").rglob("*.arrow"))
    assert read_kineto_cached(trace, TraceCache(root))[1].status == "built"
