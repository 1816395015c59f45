"""Findings (reports/findings.py): each rule fires just past its threshold and not at it, with
its evidence; findings are ordered by impact and capped (docs/report.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from reports import findings as F
from tests.support.summaries import summary


def steps(duration: int, exposed: int = 0, idle: int = 0, n: int = 2) -> list[dict[str, int]]:
    return [
        {
            "step": i,
            "duration_ns": duration,
            "compute_ns": duration - exposed - idle,
            "exposed_comm_ns": exposed,
            "idle_ns": idle,
        }
        for i in range(n)
    ]


def ids(s: dict[str, Any]) -> list[str]:
    return [f["id"] for f in F.findings(s)]


def test_exposed_comm_fires_above_ten_percent_of_step_time_and_names_the_worst_collective() -> None:
    comm = {
        "by_collective": [
            {"collective": "all_reduce", "exposed_ns": 150},
            {"collective": "all_gather", "exposed_ns": 50},
        ]
    }
    at = summary({"rank": 0, "steps": steps(1000, exposed=100), "comm": comm})
    assert F.exposed_comm(at) is None
    over = summary({"rank": 0, "steps": steps(1000, exposed=101), "comm": comm})
    f = F.exposed_comm(over)
    assert f is not None and f.value == pytest.approx(10.1) and f.limit == 10.0
    assert f.impact == pytest.approx(0.101)
    assert "10.1 %" in f.evidence and "all_reduce" in f.evidence


def test_host_bound_fires_on_the_ranks_verdict_with_mean_share() -> None:
    def rank(r: int, verdict: str, share: float) -> dict[str, Any]:
        return {
            "rank": r,
            "idle": {
                "host_bound": {
                    "verdict": verdict,
                    "host_share": share,
                    "host_threshold": 0.1,
                    "host_wait_by_activity": {"data_loading_ns": 5_000_000, "python_ns": 1_000_000},
                }
            },
        }

    assert F.host_bound(summary(rank(0, "GPU-bound", 0.05))) is None
    f = F.host_bound(
        summary(rank(0, "host-bound", 0.2), rank(1, "host-bound", 0.4), rank(2, "GPU-bound", 0.0))
    )
    assert f is not None and f.impact == pytest.approx(0.3)
    assert "2 of 3 rank(s)" in f.evidence and "data_loading" in f.evidence


def test_gpu_idle_fires_below_eighty_percent_busy() -> None:
    assert F.gpu_idle(summary({"rank": 0, "steps": steps(1000, idle=200)})) is None
    f = F.gpu_idle(
        summary(
            {
                "rank": 0,
                "steps": steps(1000, idle=201),
                "idle": {"gpu": {"by_cause": {"host_wait_ns": 300, "other_ns": 0}}},
            }
        )
    )
    assert f is not None and f.value == pytest.approx(20.1)
    assert "host_wait" in f.evidence and "other" not in f.evidence


def test_low_occupancy_uses_the_hottest_flag_of_at_least_five_percent() -> None:
    flag = {
        "name": "gemm<128>",
        "block": "256x1x1",
        "theoretical_pct": 25.0,
        "limiters": ["registers"],
        "suggestion": "use 64 registers per thread",
    }
    small = summary({"rank": 0, "occupancy": {"flags": [{**flag, "time_share": 0.049}]}})
    assert F.low_occupancy(small) is None
    s = summary(
        {
            "rank": 0,
            "occupancy": {"flags": [{**flag, "time_share": 0.05}]},
            "steps": steps(1000, idle=500),
        },
        {"rank": 1, "occupancy": {"flags": [{**flag, "time_share": 0.30, "name": "hot"}]}},
    )
    f = F.low_occupancy(s)
    assert f is not None and "hot" in f.evidence and "rank 1" in f.evidence
    assert f.suggestion == "use 64 registers per thread"
    assert f.impact == pytest.approx(0.30 * 0.5)  # share × GPU busy fraction (500 / 1000)


def test_skew_fires_above_a_quarter_of_collective_time() -> None:
    def sk(skew: int, transfer: int) -> dict[str, Any]:
        return {
            "arrival_skew_ns": skew,
            "transfer_ns": transfer,
            "matched": 4,
            "per_rank": [
                {"rank": 0, "wait_ns": skew, "late_count": 0},
                {"rank": 3, "wait_ns": 0, "late_count": 4},
            ],
        }

    assert F.skew(summary({"rank": 0, "steps": steps(1000)}, comm_skew=sk(250, 750))) is None
    f = F.skew(summary({"rank": 0, "steps": steps(1000)}, comm_skew=sk(300, 700)))
    assert f is not None and f.value == pytest.approx(30.0)
    assert "rank 3 arrived last 4 time(s)" in f.evidence
    assert f.impact == pytest.approx(300 / 2000)


def test_low_busbw_only_for_large_messages_below_half_the_link() -> None:
    def row(bucket: str, pct: float) -> dict[str, Any]:
        return {
            "collective": "all_reduce",
            "size_bucket": bucket,
            "time_ns": 400,
            "median_busbw_gbps": 100.0,
            "median_busbw_link_pct": pct,
        }

    assert F.low_busbw(summary({"rank": 0, "collectives": [row("1-16MiB", 10.0)]})) is None
    assert F.low_busbw(summary({"rank": 0, "collectives": [row(">=256MiB", 50.0)]})) is None
    f = F.low_busbw(
        summary({"rank": 0, "steps": steps(1000), "collectives": [row(">=256MiB", 49.0)]})
    )
    assert f is not None and f.value == 49.0 and f.impact == pytest.approx(400 / 2000)


def test_throttling_fires_when_bands_cover_more_than_five_percent() -> None:
    def host(band_ns: int) -> dict[str, Any]:
        return {
            "host": "n0",
            "duration_ns": 1000,
            "throttle": [
                {"device": 1, "start_ns": 100, "end_ns": 100 + band_ns, "reasons": ["hw_thermal"]}
            ],
        }

    assert F.throttling(summary(run={"nvml": [host(50)]})) is None
    f = F.throttling(summary(run={"nvml": [host(51)]}))
    assert f is not None and "GPU 1 of n0" in f.evidence and "hw_thermal" in f.evidence


def test_low_roofline_needs_a_hot_point_below_half_of_attainable() -> None:
    def ops(share: float, pct: float) -> dict[str, Any]:
        return {
            "ops": {
                "modelled_gpu_time_share": 0.5,
                "points": [
                    {
                        "key": "aten::mm | [[8,8]]",
                        "time_share": share,
                        "pct_of_attainable": pct,
                        "bound": "compute",
                    }
                ],
            }
        }

    assert F.low_roofline(summary({"rank": 0, "roofline": ops(0.19, 10.0)})) is None
    assert F.low_roofline(summary({"rank": 0, "roofline": ops(0.5, 50.0)})) is None
    f = F.low_roofline(summary({"rank": 0, "roofline": ops(0.5, 49.0)}))
    # time_share is a share of the rank's GPU time: the impact as is
    assert f is not None and f.impact == pytest.approx(0.5)
    assert "of the GPU time" in f.evidence


def test_findings_are_ordered_by_impact_and_capped_at_five() -> None:
    flag = {
        "name": "k",
        "block": "1x1x1",
        "theoretical_pct": 10.0,
        "limiters": [],
        "time_share": 0.9,
        "suggestion": None,
    }
    s = summary(
        {
            "rank": 0,
            "steps": steps(1000, exposed=150, idle=300),
            "idle": {
                "host_bound": {"verdict": "host-bound", "host_share": 0.12, "host_threshold": 0.1}
            },
            "occupancy": {"flags": [flag]},
            "collectives": [
                {
                    "collective": "x",
                    "size_bucket": ">=256MiB",
                    "time_ns": 100,
                    "median_busbw_link_pct": 1.0,
                }
            ],
            "roofline": {
                "ops": {
                    "modelled_gpu_time_share": 1.0,
                    "points": [{"key": "op", "time_share": 1.0, "pct_of_attainable": 1.0}],
                }
            },
        },
        comm_skew={"arrival_skew_ns": 900, "transfer_ns": 100, "per_rank": [{"wait_ns": 10}]},
    )
    found = F.findings(s)
    assert len(found) == 5
    impacts = [f["impact"] for f in found]
    assert impacts == sorted(impacts, reverse=True)
    # low_roofline 1.0, low_occupancy 0.9 × 0.7, gpu_idle 0.3, exposed_comm 0.15, host 0.12
    assert [f["id"] for f in found] == [
        "low_roofline",
        "low_occupancy",
        "gpu_idle",
        "exposed_comm",
        "host_bound",
    ]


def test_a_healthy_run_has_no_finding() -> None:
    assert ids(summary({"rank": 0, "steps": steps(1000, exposed=10, idle=50)})) == []
