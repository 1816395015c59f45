"""The per-rank results store: exact round trips, versions passed in by the caller."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from collectors.cache.errors import CacheCorruptError
from collectors.cache.results import RankResult, ResultStore
from collectors.model import DeviceInfo, TraceMeta


def _ranks() -> list[RankResult]:
    meta = TraceMeta(rank=3, source_format="kineto", source_path="/t/rank-3.json", devices=[
        DeviceInfo(id=0, name="NVIDIA H100 80GB HBM3", sm_count=132)])  # fmt: skip
    table = pd.DataFrame({"a": np.array([1, 2], dtype=np.int64), "b": [0.5, float("nan")]})
    entry = {"rank": 3, "window": {"start_ns": 10**18, "steps": [1, 2]}, "x": None}
    return [RankResult(3, entry, meta, {"table": table, "obj": {"ranks": [(1, 2)]}})]


def test_ranks_read_back_exactly_under_the_callers_versions(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, lambda: {"analysis": "v1"})
    assert store.write_ranks("ab" * 20, _ranks()) > 0
    (got,) = store.read_ranks("ab" * 20)
    (want,) = _ranks()
    assert (got.rank, got.entry, got.meta) == (want.rank, want.entry, want.meta)
    pd.testing.assert_frame_equal(got.parts["table"], want.parts["table"], check_exact=True)
    assert got.parts["obj"] == {"ranks": [(1, 2)]}


def test_an_entry_of_other_versions_is_refused(tmp_path: Path) -> None:
    ResultStore(tmp_path, lambda: {"analysis": "v1"}).write_ranks("cd" * 20, _ranks())
    with pytest.raises(CacheCorruptError, match="version"):
        ResultStore(tmp_path, lambda: {"analysis": "v2"}).read_ranks("cd" * 20)


def test_without_versions_results_are_listed_but_never_read(tmp_path: Path) -> None:
    ResultStore(tmp_path, lambda: {"analysis": "v1"}).write_ranks("ef" * 20, _ranks())
    blind = ResultStore(tmp_path)
    assert blind.info().entries == 1
    with pytest.raises(ValueError, match="versions"):
        blind.read_ranks("ef" * 20)


def test_a_sole_ranks_run_sections_read_back_and_an_unstorable_one_is_left_out(
    tmp_path: Path,
) -> None:
    store = ResultStore(tmp_path, lambda: {"analysis": "v1"})
    (r,) = _ranks()
    r.alone = {"critical_path": {"paths": [{"step": 1, "ns": 10**15}]}, "bad": np.int64(3)}
    assert store.write_ranks("ef" * 20, [r]) > 0
    (got,) = store.read_ranks("ef" * 20)
    assert got.alone == {"critical_path": {"paths": [{"step": 1, "ns": 10**15}]}}
    assert got.parts["obj"] == {"ranks": [(1, 2)]}  # the rest written as ever
