"""Baseline choice (analyzers/gate/baseline.py): the latest environment segment, the only
benchmark of a branch, the plan's notes and document fields (docs/gating.md §3, §5)."""

from __future__ import annotations

import pytest

from analyzers.gate.baseline import (
    BaselineRuns,
    StoredRun,
    benchmark_name,
    file_baseline,
    latest_segment,
    store_baseline,
)
from analyzers.gate.environment import Environment
from collectors.errors import InputError, UsageError

A = Environment(gpu_model="H100", gpu_count=8, driver="550.54")
B = Environment(gpu_model="H100", gpu_count=8, driver="555.42")


def _run(i: int, tb: int, env: Environment) -> StoredRun:
    return StoredRun(i, f"c{i}", tb, env.fingerprint, env)


def test_the_segment_is_the_newest_runs_on_the_newest_testbed() -> None:
    runs = [_run(9, 2, B), _run(8, 2, B), _run(7, 1, A), _run(6, 2, B)]
    seg = latest_segment(runs, B)
    assert seg.run_ids == (9, 8) and seg.commits == ("c9", "c8") and seg.env == B
    assert seg.mismatch == ()


def test_a_candidate_of_another_environment_gets_no_run_and_the_differences() -> None:
    seg = latest_segment([_run(3, 1, A)], B)
    assert seg.run_ids == () and seg.env == A
    assert seg.mismatch == ("driver: 555.42 → 550.54",)
    assert latest_segment([], A).env is None


def test_the_benchmark_must_be_the_branch_only_one() -> None:
    assert benchmark_name(["llama"], "main") == "llama"
    with pytest.raises(UsageError, match=r"holds 2 benchmarks on branch 'main' \(a, b\)"):
        benchmark_name(["a", "b"], "main")
    with pytest.raises(UsageError, match="holds 0 benchmarks"):
        benchmark_name([], "main")


def test_plans_describe_their_baseline_and_note_environment_differences() -> None:
    plan = file_baseline({}, A, B, label="base.json")
    assert plan.baseline.kind == "file" and plan.info["label"] == "base.json"
    assert plan.info["environment"]["fingerprint"] == A.fingerprint
    assert plan.notes == ("baseline environment differs: driver: 550.54 → 555.42",)
    found = BaselineRuns((), (), (), A, ("driver: 555.42 → 550.54",))
    plan = store_baseline(found, name="llama", branch="main", store="h.db")
    assert plan.baseline.runs == () and "not compared" in plan.notes[0]
    assert plan.info["label"] == "h.db llama@main, last 0 run(s)"
    with pytest.raises(InputError, match="no baseline: no run of 'llama' on branch 'main'"):
        store_baseline(BaselineRuns((), (), (), None), name="llama", branch="main", store="h.db")
