"""The JSON summary's communication keys (``collectives``, ``comm``, ``comm_skew``).

Uses the hand-built two-rank trace of ``tests/support/comm_traces.py``, whose figures are
computed by hand in ``tests/analyzers/test_comm_two_ranks.py``; here they must come out unchanged
through the summary, as valid JSON.
"""

from __future__ import annotations

import json

from collectors.model import TraceMeta, make_trace
from reports.summary import build_summary
from reports.summary.registry import RANK_SECTIONS, RUN_SECTIONS
from tests.support.comm_traces import build_rank


def test_summary_carries_collectives_comm_and_skew() -> None:
    s = build_summary([build_rank(0), build_rank(1)])
    text = json.dumps(s, allow_nan=False)
    s = json.loads(text)
    r0, r1 = s["ranks"]
    assert r0["comm"]["calls_in_window"] == 2
    summary = {(x["collective"], x["size_bucket"]): x for x in r1["collectives"]}
    assert summary[("all_gather", "all")]["time_ns"] == 200
    assert summary[("all_gather", "all")]["median_busbw_gbps"] == 8000 / 200 / 2
    assert (r0["comm"]["exposed_ns"], r1["comm"]["exposed_ns"]) == (300, 150)
    assert r0["comm"]["exposed_ns"] == r0["overlap"]["exposed_comm_ns"]
    assert {x["collective"]: x["exposed_ns"] for x in r0["comm"]["by_collective"]} == {
        "all_reduce": 300,
        "all_gather": 0,
    }
    assert r0["comm"]["process_groups"][0]["ranks"] == [0, 1]
    sk = s["comm_skew"]
    assert (sk["matched"], sk["mismatched"], sk["match_by"]) == (2, 0, ["ordinal"])
    assert (sk["arrival_skew_ns"], sk["transfer_ns"]) == (250 + 150, 150 + 50)
    assert [(x["step"], x["straggler"]) for x in sk["per_step"]] == [(1, 1), (2, 0)]
    # steps of the per-step table equal the foundation's steps (same window, same clipping)
    steps = {x["step"]: x["exposed_comm_ns"] for x in r1["steps"]}
    mine = {x["step"]: x["exposed_ns"] for x in r1["comm"]["by_step"] if x["collective"] == "all"}
    assert mine == steps


def test_ranks_without_communication_get_no_comm_keys() -> None:
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={"name": ["gemm"], "kind": ["kernel"], "start_ns": [0], "end_ns": [10], "stream": [7]},
    )
    s = build_summary([t])
    assert "collectives" not in s["ranks"][0] and "comm" not in s["ranks"][0]
    assert "comm_skew" not in s


def test_sections_are_registered_once() -> None:
    keys = [k for k, _ in RANK_SECTIONS]
    assert keys.count("collectives") == keys.count("comm") == 1
    assert [k for k, _ in RUN_SECTIONS].count("comm_skew") == 1
