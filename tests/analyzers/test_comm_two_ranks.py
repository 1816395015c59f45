"""A hand-built two-rank trace with known timings: exposed communication, skew, transfer.

The trace: ``tests/support/comm_traces.py`` (its docstring gives the timeline).

Hand-computed:
    all_reduce: d = (400, 150) → transfer 150, skew 250, late rank 1, rank 0 waits 250
    all_gather: d = (50, 200)  → transfer 50,  skew 150, late rank 0, rank 1 waits 150
    exposed rank 0: [400,700) = 300 (step 1) + 0 (step 2, all_gather under gemm)   = 300
    exposed rank 1: [600,700) = 100 (step 1) + [1250,1300) = 50 (step 2)            = 150
    all_gather: 1000 float elements in, 2 ranks → S = out bytes = 8000;
        rank 0: algbw 8000 B / 50 ns = 160 GB/s, busbw × 1/2 = 80 GB/s
"""

from __future__ import annotations

from typing import Any

import pytest

from analyzers.collectives import collectives_table
from analyzers.comm import collective_summary, exposed_by_collective
from analyzers.options import AnalysisOptions
from analyzers.parallelism import comm_by_dimension, trace_process_groups
from analyzers.skew import cross_rank_skew
from analyzers.temporal import overlap
from tests.support.comm_traces import build_rank


@pytest.fixture
def ranks() -> list[Any]:
    return [build_rank(0), build_rank(1)]


def test_exposed_communication_per_rank_per_step_and_per_type(ranks: list[Any]) -> None:
    r0, r1 = (exposed_by_collective(t) for t in ranks)
    assert (r0.exposed_ns, r1.exposed_ns) == (300, 150)
    assert (r0.comm_ns, r1.comm_ns) == (400 + 50, 150 + 200)  # broadcast is outside the window
    assert r0.exposed_ns == overlap(ranks[0]).exposed_comm_ns
    by = {(row.step, row.label): (row.comm_ns, row.exposed_ns) for row in r1.by_step.itertuples()}
    assert by[(1, "all")] == (150, 100) and by[(2, "all")] == (200, 50)
    assert by[(1, "all_reduce")] == (150, 100) and by[(2, "all_gather")] == (200, 50)
    assert by[(1, "all_gather")] == (0, 0)
    assert r0.by_label.set_index("label")["exposed_ns"].to_dict() == {
        "all_reduce": 300,
        "all_gather": 0,
    }


def test_skew_transfer_and_straggler(ranks: list[Any]) -> None:
    s = cross_rank_skew(ranks)
    m = s.matched.set_index("collective")
    assert len(m) == 2 and s.mismatched == 0  # broadcast launched in the last step: no
    assert m.loc["all_reduce", ["transfer_ns", "arrival_skew_ns", "late_rank"]].tolist() == [
        150,
        250,
        1,
    ]
    assert m.loc["all_gather", ["transfer_ns", "arrival_skew_ns", "late_rank"]].tolist() == [
        50,
        150,
        0,
    ]
    assert m.loc["all_reduce", "start_spread_ns"] == 250
    assert set(m["match_by"]) == {"ordinal"}
    w = s.waits.set_index(["key", "rank"])["wait_ns"]
    assert w.sum() == 250 + 150
    pr = s.per_rank.set_index("rank")
    assert pr.loc[0, "wait_ns"] == 250 and pr.loc[1, "wait_ns"] == 150
    assert pr.loc[0, "transfer_ns"] == pr.loc[1, "transfer_ns"] == 150 + 50
    assert pr["late_count"].to_dict() == {0: 1, 1: 1}
    ps = s.per_step.set_index("step")
    assert ps.loc[1, ["straggler", "straggler_caused_wait_ns"]].tolist() == [1, 250]
    assert ps.loc[2, ["straggler", "straggler_caused_wait_ns"]].tolist() == [0, 150]


def test_bandwidth_and_link_share_of_the_all_gather(ranks: list[Any]) -> None:
    c = collectives_table(ranks[0]).set_index("collective")
    ag = c.loc["all_gather"]
    assert (ag["in_bytes"], ag["out_bytes"], ag["message_bytes"]) == (4000, 8000, 8000)
    assert ag["algbw_gbps"] == pytest.approx(160.0)
    assert ag["busbw_gbps"] == pytest.approx(80.0)
    assert ag["busbw_link_pct"] == pytest.approx(100 * 80 / 450)  # NVLink 4: 450 GB/s
    ar = c.loc["all_reduce"]  # 2 ranks: factor 2(n-1)/n = 1; 10,000 B / 400 ns
    assert ar["busbw_gbps"] == pytest.approx(25.0)
    assert list(collectives_table(ranks[0])["step"]) == [1, 2, 3]


def test_summary_and_dimension_breakdown(ranks: list[Any]) -> None:
    s = collective_summary(ranks[1]).set_index(["collective", "size_bucket"])
    assert s.loc[("all_gather", "all"), "time_ns"] == 200
    assert s.loc[("all_reduce", "<64KiB"), "count"] == 1
    assert ("broadcast", "all") not in s.index
    groups = trace_process_groups(ranks[0])
    assert groups[["pg_name", "dimension", "source"]].values.tolist() == [
        ["0", "data", "rank_layout"]
    ]
    d = comm_by_dimension(ranks[1]).set_index("dimension")
    assert d.loc["data", ["calls", "comm_ns", "exposed_ns"]].tolist() == [2, 350, 150]


def test_all_events_option_brings_the_last_step_back(ranks: list[Any]) -> None:
    s = cross_rank_skew(ranks, AnalysisOptions(all_events=True))
    assert sorted(s.matched["collective"]) == ["all_gather", "all_reduce", "broadcast"]
    assert exposed_by_collective(ranks[0], AnalysisOptions(all_events=True)).exposed_ns == 400
