"""``analyze_paths(..., scheduler=ADDRESS)`` on a Dask ``LocalCluster`` (2 worker processes):
the same summary as the local sequential path, a corrupt file reported by name."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.errors import UsageError
from collectors.load import load_traces
from reports.summary import build_summary
from reports.summary.engine import analyze_paths
from tests.support.synthetic import write_samples

distributed = pytest.importorskip("distributed")

RANKS = 4


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit="3GiB",
    ) as c:
        yield c


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("dask_ranks")
    write_samples(d, ranks=RANKS, steps=3, seed=5)
    return d


@pytest.fixture(scope="module")
def reference(ranks_dir: Path) -> dict[str, Any]:
    return build_summary(load_traces([ranks_dir]))


def test_dask_local_cluster_gives_the_local_summary(
    cluster: Any, ranks_dir: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    assert reference["comm_skew"]["matched"] > 0  # the cross-rank section has work to do
    res = analyze_paths([ranks_dir], scheduler=cluster.scheduler_address, use_cache=False)
    assert res.summary == reference
    assert (res.scheduler, res.workers, res.errors) == (cluster.scheduler_address, 2, [])
    workers = {u.worker for u in res.units}
    assert 1 <= len(workers) <= 2
    cached = analyze_paths(
        [ranks_dir], scheduler=cluster.scheduler_address, cache_dir=tmp_path / "cache"
    )
    assert cached.summary == reference
    assert {u.cache_status for u in cached.units} == {"built"}


def test_dask_reports_a_corrupt_file_by_name_and_analyses_the_rest(
    cluster: Any, ranks_dir: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    d = tmp_path / "run"
    shutil.copytree(ranks_dir, d)
    bad = d / "rank-9.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 64)
    res = analyze_paths([d], scheduler=cluster.scheduler_address, use_cache=False)
    assert res.summary == json.loads(json.dumps(reference).replace(str(ranks_dir), str(d)))
    assert [e.path for e in res.errors] == [str(bad)]
    assert res.exit_code == 2


def test_an_unreachable_scheduler_is_a_usage_error(ranks_dir: Path) -> None:
    with pytest.raises(UsageError) as err:
        analyze_paths([ranks_dir], scheduler="tcp://127.0.0.1:9", use_cache=False)
    assert "tcp://127.0.0.1:9" in str(err.value)
