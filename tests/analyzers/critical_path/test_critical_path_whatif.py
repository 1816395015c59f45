"""Multi-rank: injected causes are blamed with their rank and size, and the what-if that removes
each predicts the step time of the same run generated without it; real traces replay exactly."""

from __future__ import annotations

import pytest

from analyzers.critical_path.analysis import CriticalPath, critical_path_analysis, what_if
from analyzers.critical_path.simulate import GRAPH_NODE_NS, Change
from collectors.load import load_traces
from tests.support.critical_path_traces import MSG_BYTES, step_times, training_run
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


def test_short_kernels_with_launch_gaps_blamed_and_cuda_graphs_what_if_matches_graph_run() -> None:
    """The run without launch gaps is the same step with the short kernels replayed from a CUDA
    graph (GRAPH_NODE_NS between them); removing all launch cost instead would be 12 % short."""
    shape = {"n_gemm": 1, "gemm_ns": 20_000, "n_small": 100}
    run = training_run(small_host=20_000, **shape)
    graphed = step_times(training_run(graph_node_ns=GRAPH_NODE_NS, **shape))
    r = critical_path_analysis(run)
    assert r.replayed_ns == r.measured_ns
    causes = r.cause_ns
    assert max(causes, key=lambda c: causes[c]) == "launch_gap"
    delta = sum(step_times(run).values()) / len(graphed) - sum(graphed.values()) / len(graphed)
    w = _what_if(r, "cuda_graphs")
    assert r.ranking[0] is w
    assert _within(w.recovered_ns, delta, 0.01)
    for step, t in graphed.items():
        assert _within(w.predicted_ns[step], t, 0.02)
    free = what_if(r.graph, Change("cuda_graphs", node_ns=0))
    for step, t in graphed.items():  # no per-node cost: overstates the gain by ~99 nodes x 1 µs
        assert free.predicted_ns[step] < t - 90 * GRAPH_NODE_NS


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
    w = next(w for w in r.ranking if w.change.kind == "faster" and w.change.category == "GEMM")
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


@pytest.mark.parametrize("world", [2, 4])
def test_busbw_what_if_predicts_the_run_whose_allreduce_runs_at_that_bus_bandwidth(
    world: int,
) -> None:
    """An all-reduce of S = 4 MiB at B GB/s takes S × 2(n−1)/n / B ns once the last rank
    arrived (nccl-tests' bus bandwidth); the what-if predicts the run generated so."""
    busbw = 50.0
    run = training_run(world=world)  # 400 µs transfers
    at_busbw = step_times(training_run(world=world, busbw_gbps=busbw))
    r = critical_path_analysis(run, busbw_gbps=busbw)
    w = next(w for w in r.ranking if w.change.kind == "busbw")
    assert w.change.busbw_gbps == busbw
    transfer = round(MSG_BYTES * 2 * (world - 1) / world / busbw)
    assert transfer == {2: 83_886, 4: 125_829}[world]
    assert dict(w.change.transfer_ns) == {j.node: transfer for j in r.graph.joins}
    assert len(r.graph.joins) == 3  # one all-reduce per step
    for step, t in at_busbw.items():
        assert _within(w.predicted_ns[step], t, 0.02)
    assert _within(w.recovered_ns, 400_000 - transfer, 0.02)
