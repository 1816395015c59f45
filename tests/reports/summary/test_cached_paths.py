"""Paths in a summary come from the current call, never from the cache (issue 19).

Cached per-rank results are found by content; on a hit the summary's ``sources``,
``run.ranks[].source_path`` and the rank-claim error must still name the files given now, even
when the file analysed first (whose results were cached) has been deleted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors.load import load_traces
from reports.summary import build_summary
from reports.summary.engine import analyze_paths
from tests.support.synthetic import write_samples


@pytest.fixture
def dup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A trace analysed once as first/rank-0.json.gz (then deleted), and two copies of it in
    dup/x/ and dup/y/; returns (cache, x, y)."""
    write_samples(tmp_path / "s", ranks=1, steps=2, seed=8)
    first = tmp_path / "first" / "rank-0.json.gz"
    first.parent.mkdir()
    shutil.copyfile(tmp_path / "s" / "rank-0.json.gz", first)
    cache = tmp_path / "cache"
    res = analyze_paths([first], scheduler="sync", cache_dir=cache)
    assert res.summary["sources"] == [str(first)]
    x, y = tmp_path / "dup" / "x" / first.name, tmp_path / "dup" / "y" / first.name
    for p in (x, y):
        p.parent.mkdir(parents=True)
        shutil.copyfile(first, p)
    shutil.rmtree(first.parent)
    return cache, x, y


def test_a_cached_copy_names_itself_in_sources_and_run_ranks(
    dup: tuple[Path, Path, Path],
) -> None:
    cache, x, _ = dup
    res = analyze_paths([x], scheduler="sync", cache_dir=cache)
    assert res.summary["sources"] == [str(x)]
    assert [r["source_path"] for r in res.summary["run"]["ranks"]] == [str(x)]
    assert res.summary == build_summary(load_traces([x]))
    again = analyze_paths([x], scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in again.units] == ["results"]
    assert again.summary == res.summary


def test_two_copies_claiming_one_rank_are_both_named(dup: tuple[Path, Path, Path]) -> None:
    cache, x, y = dup
    for _ in range(2):  # computed, then from the cache: the same error
        res = analyze_paths([x.parent, y.parent], scheduler="sync", cache_dir=cache)
        assert [e.path for e in res.errors] == [str(y)]
        msg = res.errors[0].message
        assert msg.startswith("claims rank 0 ") and f"as does {x} " in msg
        assert res.summary["sources"] == [str(x)]
