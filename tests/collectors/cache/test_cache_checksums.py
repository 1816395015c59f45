"""Every cached part proves what it serves (issue 19): an edited or damaged manifest document
(per-rank results, parsed-trace meta) or content-digest record fails its checksum, is rebuilt,
and the cache says so once; nothing edited is ever served."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from collectors.cache import TraceCache, read_kineto_cached
from collectors.kineto import read_kineto
from reports.summary.engine import analyze_paths
from tests.support.env import shared_path
from tests.support.synthetic import write_samples


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    write_samples(d, ranks=2, steps=2, seed=3)
    return d


def _manifests(cache: Path, area: str) -> list[Path]:
    return sorted((cache / area).glob("*/*/manifest.json"))


def _edit(manifest: Path, old: str, new: str) -> None:
    text = manifest.read_text()
    assert old in text, (old, manifest)
    manifest.write_text(text.replace(old, new, 1))


def test_an_edited_span_in_cached_results_is_never_served(run_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = analyze_paths([run_dir], scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in first.units] == ["built", "built"]
    span = str(first.summary["ranks"][0]["temporal"]["span_ns"])
    edited = "9" * 3 + span[3:]  # the 12996011000 -> 99996011000
    hits = [m for m in _manifests(cache, "results") if f'\\"span_ns\\":{span}' in m.read_text()]
    assert len(hits) == 1
    _edit(hits[0], f'\\"span_ns\\":{span}', f'\\"span_ns\\":{edited}')

    again = analyze_paths([run_dir], scheduler="sync", cache_dir=cache)
    assert again.summary == first.summary
    assert sorted(u.cache_status for u in again.units) == ["hit", "results"]
    assert len(again.cache_notes) == 1
    note = again.cache_notes[0]
    assert "\n" not in note and "per-rank results" in note and "checksum" in note
    assert note.startswith(str(run_dir / "rank-0.json.gz"))

    third = analyze_paths([run_dir], scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in third.units] == ["results", "results"]
    assert third.summary == first.summary and third.cache_notes == []


def test_an_edited_rank_in_a_cached_trace_is_parsed_again(tmp_path: Path) -> None:
    src = shared_path("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz")
    path = tmp_path / src.name
    shutil.copyfile(src, path)
    cache = TraceCache(tmp_path / "cache")
    (fresh,), o1 = read_kineto_cached(path, cache)
    (man,) = _manifests(cache.root, "traces")
    _edit(man, '\\"rank\\":0', '\\"rank\\":7')
    (got,), o2 = read_kineto_cached(path, cache)
    assert (o1.status, o2.status) == ("built", "rebuilt")
    assert got.rank == fresh.rank == read_kineto(path).rank == 0
    assert len(cache.notes) == 1 and "checksum" in cache.notes[0]
    assert cache.notes[0].startswith(str(path))
    assert read_kineto_cached(path, TraceCache(cache.root))[1].status == "hit"


def _stat_records(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, json.loads(p.read_text())) for p in sorted((root / "stat").glob("*.json"))]


def test_a_content_digest_record_pointing_at_another_file_is_not_believed(
    tmp_path: Path,
) -> None:
    write_samples(tmp_path / "s", ranks=2, steps=2, seed=4)
    a = tmp_path / "a" / "rank-1.json.gz"  # rank 0's content under rank 1's name
    b = tmp_path / "b" / "rank-1.json.gz"
    for p, src in ((a, "rank-0.json.gz"), (b, "rank-1.json.gz")):
        p.parent.mkdir()
        shutil.copyfile(tmp_path / "s" / src, p)
    root = tmp_path / "cache"
    cache = TraceCache(root)
    cache.digest(a)
    read_kineto_cached(b, cache)
    recs = {Path(r["path"]).parent.name: (p, r) for p, r in _stat_records(root)}
    rec_path, rec_b = recs["b"]
    rec_b["digest"] = recs["a"][1]["digest"]  # b's record now claims a's content
    rec_path.write_text(json.dumps(rec_b))

    fresh = TraceCache(root)
    (got_b,), outcome = read_kineto_cached(b, fresh)
    assert outcome.status == "hit"  # b's own entry, found after hashing b again
    assert got_b.rank == read_kineto(b).rank == 1
    assert len(fresh.notes) == 1 and "digest" in fresh.notes[0]
    assert fresh.notes[0].startswith(str(b))
    (got_a,), _ = read_kineto_cached(a, TraceCache(root))  # never b's trace under a's content
    assert got_a.rank == read_kineto(a).rank == 0
    assert TraceCache(root).known_digest(b) == TraceCache(root).digest(b)  # record rewritten


def test_the_cli_says_once_that_an_entry_was_rebuilt(
    run_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cli.main import main

    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(cache))
    args = [
        "analyze",
        str(run_dir),
        "--json",
        str(tmp_path / "s.json"),
        "--workers",
        "1",
        "--force",
    ]
    assert main([*args]) == 0
    (man,) = [m for m in _manifests(cache, "results") if "rank-1" in m.read_text()]
    _edit(man, '\\"rank\\":1', '\\"rank\\":5')
    capsys.readouterr()
    assert main([*args]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "cache" in line]
    assert len(err) == 1 and err[0].startswith("gpuscope: note: ")
    assert str(run_dir / "rank-1.json.gz") in err[0]
    assert main([*args]) == 0
    assert not [line for line in capsys.readouterr().err.splitlines() if "cache" in line]
