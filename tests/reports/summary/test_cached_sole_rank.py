"""A run of one rank re-analysed from the per-rank results cache takes its run sections as
they were cached (the critical path of that rank alone), instead of combining the cached parts
again; a run of two ranks still combines them.  Either way the summary equals the first one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reports.summary import many_ranks
from reports.summary.engine import analyze_paths
from tests.support.synthetic import write_samples


def _no_combine(*args: object, **kwargs: object) -> object:
    raise AssertionError("the cached parts were combined again")


def test_a_sole_rank_from_the_cache_takes_its_cached_run_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_samples(tmp_path / "s", ranks=1, steps=3, seed=5)
    trace, cache = tmp_path / "s" / "rank-0.json.gz", tmp_path / "cache"
    first = analyze_paths([trace], scheduler="sync", cache_dir=cache)
    assert first.summary["critical_path"]
    red = many_ranks.RUN_REDUCERS["critical_path"]
    patched = dataclasses.replace(red, combine=_no_combine)
    monkeypatch.setitem(many_ranks.RUN_REDUCERS, "critical_path", patched)
    again = analyze_paths([trace], scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in again.units] == ["results"]
    assert again.summary == first.summary


def test_two_ranks_from_the_cache_still_combine_their_parts(tmp_path: Path) -> None:
    write_samples(tmp_path / "s", ranks=2, steps=3, seed=6)
    paths, cache = sorted((tmp_path / "s").glob("rank-*.json.gz")), tmp_path / "cache"
    alone = analyze_paths([paths[0]], scheduler="sync", cache_dir=cache)  # rank 0 cached alone
    both = analyze_paths(paths, scheduler="sync", cache_dir=cache)
    assert both.summary["critical_path"] != alone.summary["critical_path"]
    again = analyze_paths(paths, scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in again.units] == ["results", "results"]
    assert again.summary == both.summary
