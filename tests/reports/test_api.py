"""The notebook API (reports.api.TraceAnalysis) on the 8-rank synthetic sample: every number it
returns is the number ``gpuscope analyze --json`` writes for the same traces (the CLI run in a
subprocess is the reference), and the per-rank figures are the sample's ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzers.options import AnalysisOptions
from reports.api import TraceAnalysis
from tests.support.cli import gpuscope
from tests.support.env import SAMPLES
from tests.support.synthetic import read_ground_truth

RUN = SAMPLES / "synthetic_8rank"


@pytest.fixture(scope="module")
def cli_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("api") / "summary.json"
    proc = gpuscope("analyze", RUN, "--json", out, "--no-cache")
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ta() -> TraceAnalysis:
    return TraceAnalysis(trace_dir=RUN)


def _rank(doc: dict[str, Any], rank: int) -> dict[str, Any]:
    (r,) = [r for r in doc["ranks"] if r["rank"] == rank]
    return r


def test_the_summary_is_the_clis_json(ta: TraceAnalysis, cli_json: dict[str, Any]) -> None:
    assert ta.ranks == list(range(8))
    assert json.loads(json.dumps(ta.summary())) == cli_json


def test_temporal_and_overlap_frames_hold_each_ranks_json_numbers(
    ta: TraceAnalysis, cli_json: dict[str, Any]
) -> None:
    temporal, overlap = ta.temporal_breakdown(), ta.comm_comp_overlap()
    assert list(temporal["rank"]) == list(overlap["rank"]) == ta.ranks
    for row in temporal.to_dict("records"):
        want = _rank(cli_json, row.pop("rank"))["temporal"]
        assert row == want
    for row in overlap.to_dict("records"):
        want = _rank(cli_json, row.pop("rank"))["overlap"]
        assert row == want


def test_per_rank_results_match_the_json_and_the_ground_truth(
    ta: TraceAnalysis, cli_json: dict[str, Any]
) -> None:
    truth = {t["rank"]: t["windows"]["default"] for t in read_ground_truth(RUN)}
    for rank in ta.ranks:
        j = _rank(cli_json, rank)
        w = ta.window(rank)
        assert {"start_ns": w.start_ns, "end_ns": w.end_ns, "steps": list(w.steps)} == j["window"]
        ks = ta.kernel_summary(rank)
        assert [(str(r.name), int(r.count), int(r.total_ns)) for r in ks.itertuples()] == [
            (k["name"], k["count"], k["total_ns"]) for k in j["kernel_summary"]
        ]
        steps = ta.steps(rank)
        assert steps["duration_ns"].tolist() == [s["duration_ns"] for s in j["steps"]]
        assert ta.overlap(rank).exposed_comm_ns == truth[rank]["overlap"]["exposed_comm_ns"]
        assert ta.comm(rank).exposed_ns == j["comm"]["exposed_ns"]
        cs = ta.collective_summary(rank).itertuples()
        got = [(r.collective, r.size_bucket, int(r.count), int(r.time_ns)) for r in cs]
        keys = ("collective", "size_bucket", "count", "time_ns")
        want = [tuple(c[k] for k in keys) for c in j["collectives"]]
        assert got == want
        table = ta.collectives(rank)  # every collective of the trace, the window's among them
        assert len(table) >= max(c["count"] for c in j["collectives"]) > 0
        idle = ta.idle(rank)
        assert idle.gpu.idle_ns == j["idle"]["gpu"]["idle_ns"]
        launch = ta.launch(rank)
        assert launch.hta.n == j["launch"]["hta"]["launches"]
        assert len(launch.launches) == j["launch"]["all"]["ops"]


def test_efficiency_memory_and_serving_results_match_the_json(
    ta: TraceAnalysis, cli_json: dict[str, Any]
) -> None:
    for rank in ta.ranks:
        j = _rank(cli_json, rank)
        occ = ta.occupancy(rank)
        assert occ.time_weighted_pct == j["occupancy"]["time_weighted_theoretical_pct"]
        assert occ.kernels == j["occupancy"]["kernels"] > 0
        roof = ta.roofline(rank)
        assert roof is not None and len(roof) == j["roofline"]["ops"]["points_total"]
        assert [p.to_dict() for p in roof] == j["roofline"]["ops"]["points"]
        assert len(ta.memory(rank).steps) == len(j["memory"]["steps"])
        serving = ta.serving(rank)  # not a serving run: every GPU activity, categorised
        trace = ta.trace(rank)
        assert len(serving.kops) == len(trace.gpu)
        nccl = trace.gpu["name"].astype(str).str.startswith("nccl").sum()
        assert (serving.kops["category"] == "communication").sum() == nccl > 0


def test_critical_path_step_times_are_the_slowest_ranks(
    ta: TraceAnalysis, cli_json: dict[str, Any]
) -> None:
    slowest: dict[int, int] = {}
    for r in cli_json["ranks"]:
        for s in r["steps"]:
            slowest[s["step"]] = max(slowest.get(s["step"], 0), s["duration_ns"])
    measured = ta.critical_path().measured_ns
    assert {k: measured[k] for k in slowest} == slowest


def test_cross_rank_skew_is_the_jsons(ta: TraceAnalysis, cli_json: dict[str, Any]) -> None:
    skew = ta.skew()
    assert len(skew.matched) == cli_json["comm_skew"]["matched"] > 0


def test_options_reach_every_analysis() -> None:
    every = TraceAnalysis(trace_dir=RUN, options=AnalysisOptions(all_events=True))
    default = TraceAnalysis(traces=every.traces)
    assert len(every.steps(0)) == len(default.steps(0)) + 1  # the last step comes back


def test_one_source_of_traces_is_required(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        TraceAnalysis()
    with pytest.raises(ValueError, match="exactly one"):
        TraceAnalysis(trace_dir=RUN, paths=[RUN])
    with pytest.raises(KeyError, match="no rank 9"):
        TraceAnalysis(trace_dir=RUN).trace(9)
