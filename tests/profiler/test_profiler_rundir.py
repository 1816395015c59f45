"""meta.json: merging the per-rank metadata, against hand-written rank files."""

from __future__ import annotations

import json
from pathlib import Path

from profiler import rundir


def _rank(run: Path, rank: int, host: str, times: list[int], nvml: dict | None) -> None:
    d = run / "ranks"
    d.mkdir(parents=True, exist_ok=True)
    meta = {
        "schema_version": 1, "rank": rank, "local_rank": rank % 2, "world_size": 4,
        "host": host, "step_times_ns": times, "nvml": nvml, "trace": None,
    }  # fmt: skip
    (d / f"rank-{rank}.json").write_text(json.dumps(meta))


def test_meta_merges_ranks_hosts_and_one_nvml_status_per_node(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _rank(run, 3, "b", [5, 1, 4], None)
    _rank(run, 0, "a", [10, 30, 20, 40], {"available": False, "reason": "x"})
    _rank(run, 2, "b", [7], {"available": True, "polls": 12, "driver_version": "570.1"})
    _rank(run, 1, "a", [], None)
    (run / "ranks" / "rank-9.json").write_text("{not json")  # unreadable: skipped
    meta = rundir.write_meta(run, command=["python", "t.py"], exit_code=3)
    assert json.loads((run / "meta.json").read_text()) == meta
    assert [r["rank"] for r in meta["ranks"]] == [0, 1, 2, 3]
    assert meta["world_size"] == 4 and meta["hosts"] == ["a", "b"]
    assert meta["nvml"] == {"a": {"available": False, "reason": "x"},
                            "b": {"available": True, "polls": 12,
                                  "driver_version": "570.1"}}  # fmt: skip
    assert meta["exit_code"] == 3 and meta["command"] == ["python", "t.py"]
    r0 = meta["ranks"][0]
    assert "step_times_ns" not in r0 and "nvml" not in r0
    # the median of 10, 20, 30, 40 is (20 + 30) / 2 (analyzers/stats.py, the gate's median)
    assert r0["step_time"] == {"count": 4, "median_ns": 25, "min_ns": 10, "max_ns": 40}
    assert meta["ranks"][3]["step_time"] == {"count": 3, "median_ns": 4, "min_ns": 1, "max_ns": 5}
    assert meta["ranks"][1]["step_time"] is None
    # the driver version comes from the node's NVML sampler
    assert [r["versions"]["driver"] for r in meta["ranks"]] == [None, None, "570.1", "570.1"]


def test_analyse_without_traces_explains_why(tmp_path: Path) -> None:
    out = rundir.analyse(tmp_path)
    assert out.summary is None and out.traces == []
    assert "no trace captured" in out.notes[0]
