"""Multi-rank: injected causes are blamed with their rank and size, and the what-if that removes
each predicts the step time of the same run generated without it; real traces replay exactly."""

from __future__ import annotations

import pytest

from analyzers.critical_path.analysis import CriticalPath, critical_path_analysis
from collectors.load import load_traces
from tests.support.critical_path_traces import step_times, training_run
from tests.support.env import SAMPLES, shared_path

DELTA = 150_000  # ns


def _per_step(r: CriticalPath, cause: str, rank: int | None = None) -> float:
    total = sum(
        s.duration_ns
        for p in r.paths
        for s in p.segments
        if s.cause == cause and (rank is None or s.rank == rank)
    )
    return total / len(r.paths)


def _what_if(r: CriticalPath, kind: str, rank: int = -1):
    return next(w for w in r.ranking if w.change.kind == kind and w.change.rank == rank)


def _within(x: float, truth: float, rel: float) -> bool:
    return abs(x - truth) <= rel * abs(truth)


def test_rank_delayed_before_allreduce_is_blamed_and_on_time_what_if_matches_clean_run() -> None:
    run = training_run(late_rank=1, delay=DELTA)
    clean = step_times(training_run())
    r = critical_path_analysis(run)
    assert r.replayed_ns == r.measured_ns == step_times(run)
    assert _within(_per_step(r, "late_rank", rank=1), DELTA, 0.01)
    assert _per_step(r, "late_rank", rank=0) == 0
    w = _what_if(r, "rank_on_time", rank=1)
    assert _within(w.recovered_ns, DELTA, 0.01)
    for step, t in clean.items():
        assert _within(w.predicted_ns[step], t, 0.02)


def test_short_kernels_with_launch_gaps_blamed_and_cuda_graphs_what_if_matches_fast_host() -> None:
    run = training_run(n_gemm=1, n_small=100, small_host=20_000)
    fast = step_times(training_run(n_gemm=1, n_small=100, small_host=2_000))
    r = critical_path_analysis(run)
    assert r.replayed_ns == r.measured_ns
    causes = r.cause_ns
    assert max(causes, key=lambda c: causes[c]) == "launch_gap"
    delta = sum(step_times(run).values()) / len(fast) - sum(fast.values()) / len(fast)
    w = _what_if(r, "cuda_graphs")
    assert r.ranking[0] is w
    assert _within(w.recovered_ns, delta, 0.01)
    for step, t in fast.items():
        assert _within(w.predicted_ns[step], t, 0.02)


def test_allreduce_not_overlapped_is_exposed_comm_and_overlap_what_if_matches_overlapped_run() -> (
    None
):
    transfer = 400_000
    run = training_run(transfer=transfer)
    overlapped = step_times(training_run(transfer=transfer, overlapped=True))
    r = critical_path_analysis(run)
    assert _within(_per_step(r, "exposed_communication"), transfer, 0.01)
    w = _what_if(r, "overlap_comm")
    for step, t in overlapped.items():
        assert _within(w.predicted_ns[step], t, 0.02)


def test_faster_category_what_if_scales_only_that_category() -> None:
    run = training_run()
    r = critical_path_analysis(run)
    w = next(w for w in r.ranking if w.change.kind == "faster" and w.change.category == "gemm")
    # 4 GEMMs of 300 µs on the path, 2x faster: 600 µs per step
    assert w.recovered_ns == pytest.approx(600_000, rel=1e-9)


@pytest.mark.parametrize("folder", ["synthetic_2rank", "synthetic_8rank"])
def test_sample_multi_rank_runs_replay_to_measured_step_times(folder: str) -> None:
    traces = load_traces([SAMPLES / folder])
    r = critical_path_analysis(traces)
    assert len(r.graph.joins) > 0
    assert r.measured_ns and r.replayed_ns == r.measured_ns
    for p in r.paths:
        assert sum(s.duration_ns for s in p.segments) == p.duration_ns
    assert r.ranking


@pytest.mark.parametrize(
    "path",
    [
        ("nccl_parser_config", "nccl_data.json.gz"),
        ("trace_filter", "sampled_rank-0.json.gz"),
        ("negative_queue_length_values_check", "rank0.json.gz"),
    ],
)
def test_real_multi_rank_job_traces_path_ranking_and_exact_replay(path: tuple[str, str]) -> None:
    traces = load_traces([shared_path("kineto", "hta", *path)])
    r = critical_path_analysis(traces)
    assert r.measured_ns and r.replayed_ns == r.measured_ns
    for p in r.paths:
        assert sum(s.duration_ns for s in p.segments) == p.duration_ns
    assert r.ranking and all(w.recovered_ns >= 0 for w in r.ranking)
