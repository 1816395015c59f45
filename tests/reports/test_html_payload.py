"""The report's data payload (reports/html_payload.py, html_metrics.py, html_series.py).

Hand-built summaries with hand-computed expectations (docs/report.md §3, §5, §6), and the
synthetic sample, whose ground truth the generator knows by construction.
"""

from __future__ import annotations

from typing import Any

import pytest

from analyzers.headline import cards
from analyzers.stats import quantile
from collectors.load import load_traces
from reports.html_payload import (
    build_payload,
    collectives,
    header,
    kernels,
    occupancy,
    roofline,
)
from reports.html_series import heatmap, step_breakdown
from reports.summary import build_summary
from tests.support.env import SAMPLES
from tests.support.summaries import summary
from tests.support.synthetic import read_ground_truth


def step(n: int, duration: int, compute: int = 0, exposed: int = 0, idle: int = 0) -> dict:
    return {
        "step": n,
        "start_ns": 1000 * n,
        "end_ns": 1000 * n + duration,
        "duration_ns": duration,
        "compute_ns": compute,
        "exposed_comm_ns": exposed,
        "idle_ns": idle,
    }


@pytest.fixture(scope="module")
def two_rank() -> dict[str, Any]:
    return build_summary(load_traces([SAMPLES / "synthetic_2rank"]))


def test_step_time_card_is_slowest_rank_per_step_observed_median_and_p90() -> None:
    s = summary(
        {"rank": 0, "steps": [step(1, 100), step(2, 400), step(3, 200), step(4, 300)]},
        {"rank": 1, "steps": [step(1, 150), step(2, 100), step(3, 250), step(4, 900)]},
    )
    # step times: max over ranks = 150, 400, 250, 900 -> sorted 150, 250, 400, 900; the median
    # is the mean of the two middle values, (250 + 400) / 2; p90: h = 3·0.9 = 2.7 between 400
    # and 900: 400 + 0.7·500 (analyzers/stats.py, one definition with the gate), to the ns
    c = cards(s)["step_time"]
    assert c == {"median_ns": 325, "p90_ns": 750, "steps": 4, "ranks": 2}
    assert isinstance(c["median_ns"], int) and isinstance(c["p90_ns"], int)


def test_report_quantiles_are_the_gates_definition() -> None:
    assert quantile([5, 1, 3], 0.5) == 3
    assert quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == pytest.approx(9.1)
    assert quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 0.9) == 10


def test_gpu_busy_over_steps_then_over_spans_without_steps() -> None:
    s = summary(
        {"rank": 0, "steps": [step(1, 1000, idle=100), step(2, 1000, idle=300)]},
        {"rank": 1, "steps": [step(1, 2000, idle=0)]},
    )
    b = cards(s)["gpu_busy"]
    assert b["basis"] == "steps" and b["busy_ns"] == 3600 and b["total_ns"] == 4000
    assert b["pct"] == pytest.approx(90.0)
    s = summary(
        {"rank": 0, "temporal": {"span_ns": 800, "idle_ns": 200}},
        {"rank": 1, "temporal": {"span_ns": 200, "idle_ns": 0}},
    )
    b = cards(s)["gpu_busy"]
    assert b["basis"] == "span" and b["pct"] == pytest.approx(100 * 800 / 1000)
    assert cards(summary({"rank": 0}))["gpu_busy"] is None


def test_comm_card_pools_overlap_and_takes_median_of_worst_rank_exposure() -> None:
    s = summary(
        {
            "rank": 0,
            "overlap": {"comm_ns": 300, "overlap_ns": 200, "exposed_comm_ns": 100},
            "steps": [
                step(1, 1000, exposed=10),
                step(2, 1000, exposed=50),
                step(3, 1000, exposed=5),
            ],
        },
        {
            "rank": 1,
            "overlap": {"comm_ns": 100, "overlap_ns": 100, "exposed_comm_ns": 0},
            "steps": [
                step(1, 1000, exposed=30),
                step(2, 1000, exposed=0),
                step(3, 1000, exposed=70),
            ],
        },
    )
    c = cards(s)["comm"]
    assert c["overlap_pct"] == pytest.approx(75.0)  # 300 / 400
    # worst rank per step: 30, 50, 70 -> median 50; share: 165 / 6000
    assert c["exposed_per_step_ns"] == 50
    assert c["exposed_share_pct"] == pytest.approx(100 * 165 / 6000)
    assert cards(summary({"rank": 0, "overlap": {"comm_ns": 0}}))["comm"] is None


def test_occupancy_throughput_and_energy_cards_by_hand() -> None:
    point = {"flop_total": 2e12, "time_ns": 10_000_000, "attainable_flops_per_s": 4e14}
    s = summary(
        {
            "rank": 0,
            "occupancy": {
                "time_weighted_theoretical_pct": 40.0,
                "time_weighted_est_achieved_pct": 30.0,
            },
            "roofline": {"ops": {"points": [point]}},
        },
        {
            "rank": 1,
            "occupancy": {
                "time_weighted_theoretical_pct": 60.0,
                "time_weighted_est_achieved_pct": None,
            },
            "roofline": {
                "ops": {
                    "points": [{**point, "attainable_flops_per_s": None, "time_ns": 30_000_000}]
                }
            },
        },
        run={
            "nvml": [
                {"host": "a", "energy_per_step_mj": 1500.0},
                {"host": "b", "energy_per_step_mj": 500.0},
            ]
        },
    )
    c = cards(s)
    assert c["occupancy"] == {
        "theoretical_pct": 50.0,
        "est_achieved_pct": 30.0,
        "ranks": 2,
        "kernel_time_share": None,  # the hand-built sections leave coverage unknown
        "upper_bound": False,
    }
    # 4e12 FLOP in 40 ms -> 100 TFLOP/s; roofline over rank 0 only: 2e12 / (4e14 * 0.01)
    assert c["throughput"]["tflops"] == pytest.approx(100.0)
    assert c["throughput"]["pct_of_roofline"] == pytest.approx(50.0)
    assert c["energy"] == {"energy_per_step_mj": 2000.0, "hosts": 2}


def test_breakdown_matches_the_generators_ground_truth(two_rank: dict[str, Any]) -> None:
    truth = {
        g["rank"]: g["windows"]["default"] for g in read_ground_truth(SAMPLES / "synthetic_2rank")
    }
    rows = step_breakdown(two_rank)["rows"]
    assert len(rows) == sum(len(t["steps"]) for t in truth.values())
    for row in rows:
        t = next(x for x in truth[row["rank"]]["steps"] if x["step"] == row["step"])
        for k in ("duration_ns", "gpu_duration_ns", "compute_ns", "exposed_comm_ns", "idle_ns"):
            assert row[k] == t[k]
        parts = row["compute_ns"] + row["exposed_comm_ns"] + row["memory_other_ns"] + row["idle_ns"]
        assert parts == row["gpu_duration_ns"]  # the four parts of the step on the GPU clock
    # the memcpy of each step runs alone in a gap: memory-only time = the window's memcpy time
    for rank, t in truth.items():
        memcpy = sum(v["total_ns"] for v in t["memcpy"].values())
        assert sum(r["memory_other_ns"] for r in rows if r["rank"] == rank) == memcpy


def test_kernel_table_pools_ranks_like_the_ground_truth(two_rank: dict[str, Any]) -> None:
    pooled: dict[str, dict[str, int]] = {}
    for g in read_ground_truth(SAMPLES / "synthetic_2rank"):
        for name, k in g["windows"]["default"]["kernels"].items():
            p = pooled.setdefault(name, {"count": 0, "total_ns": 0, "min_ns": 10**18, "max_ns": 0})
            p["count"] += k["count"]
            p["total_ns"] += k["total_ns"]
            p["min_ns"] = min(p["min_ns"], k["min_ns"])
            p["max_ns"] = max(p["max_ns"], k["max_ns"])
    k = kernels(two_rank)
    assert {r["name"] for r in k["rows"]} == set(pooled)
    total = sum(p["total_ns"] for p in pooled.values())
    for r in k["rows"]:
        p = pooled[r["name"]]
        assert (r["count"], r["total_ns"], r["min_ns"], r["max_ns"]) == (
            p["count"],
            p["total_ns"],
            p["min_ns"],
            p["max_ns"],
        )
        assert r["avg_ns"] == round(p["total_ns"] / p["count"])
        assert r["time_pct"] == pytest.approx(100 * p["total_ns"] / total)
        assert r["ranks"] == 2
    assert [r["total_ns"] for r in k["rows"]] == sorted(
        (r["total_ns"] for r in k["rows"]), reverse=True
    )
    assert sum(t["total_ns"] for t in k["types"]) == total
    comm = sum(p["total_ns"] for n, p in pooled.items() if n.startswith("nccl"))
    assert next(t for t in k["types"] if t["type"] == "COMMUNICATION")["total_ns"] == comm


def test_kernel_table_keeps_the_50_largest_and_sums_the_rest() -> None:
    rows = [
        {
            "name": f"k{i:03d}",
            "type": "COMPUTATION",
            "count": 1,
            "total_ns": 1000 - i,
            "min_ns": 1000 - i,
            "max_ns": 1000 - i,
        }
        for i in range(80)
    ]
    k = kernels(summary({"rank": 0, "kernel_summary": rows}))
    assert [r["name"] for r in k["rows"]] == [f"k{i:03d}" for i in range(50)]
    assert k["rest"] == {"names": 30, "count": 30, "total_ns": sum(1000 - i for i in range(50, 80))}


def test_breakdown_draws_evenly_spaced_steps_and_ranks_of_a_large_run() -> None:
    ranks = [
        {"rank": r, "steps": [step(n, 100 + n, idle=n) for n in range(120)]} for r in range(20)
    ]
    b = step_breakdown(summary(*ranks))
    steps = sorted({r["step"] for r in b["rows"]})
    rks = sorted({r["rank"] for r in b["rows"]})
    assert (b["steps_total"], b["ranks_total"], b["steps_shown"], b["ranks_shown"]) == (
        120,
        20,
        50,
        16,
    )
    assert len(steps) == 50 and steps[0] == 0 and steps[-1] == 119
    assert len(rks) == 16 and rks[0] == 0 and rks[-1] == 19
    assert len(b["rows"]) == 50 * 16
    row = next(r for r in b["rows"] if r["step"] == 119 and r["rank"] == 19)
    assert row["duration_ns"] == 219 and row["idle_ns"] == 119 and row["memory_other_ns"] == 100


def test_heatmap_cells_are_step_durations_and_bins_means_beyond_500_steps() -> None:
    s = summary(
        {"rank": 0, "steps": [step(1, 10), step(2, 20)]}, {"rank": 1, "steps": [step(1, 30)]}
    )
    h = heatmap(s)
    assert h["ranks"] == [0, 1] and h["columns"] == ["1", "2"] and not h["binned"]
    assert h["duration_ns"] == [[10, 20], [30, None]]
    assert heatmap(summary({"rank": 0, "steps": [step(1, 10)]})) is None
    big = summary(*[{"rank": r, "steps": [step(n, n + r) for n in range(1001)]} for r in range(2)])
    h = heatmap(big)
    assert h["binned"] and len(h["columns"]) == 500
    # array_split(1001 steps, 500): the first group holds steps 0, 1, 2
    assert h["columns"][0] == "0–2"
    assert h["duration_ns"][1][0] == round((1 + 2 + 3) / 3)
    assert h["columns"][-1] == "999–1000"
    assert h["duration_ns"][0][-1] == round((999 + 1000) / 2)


def test_collectives_pool_counts_and_take_median_of_rank_medians() -> None:
    def row(bucket: str, count: int, busbw: float, pct: float, mx: float) -> dict:
        return {
            "collective": "all_reduce",
            "size_bucket": bucket,
            "count": count,
            "bytes": 1 << 20,
            "time_ns": 1000 * count,
            "median_busbw_gbps": busbw,
            "max_busbw_gbps": mx,
            "median_busbw_link_pct": pct,
        }

    s = summary(
        {"rank": 0, "collectives": [row("all", 2, 100.0, 20.0, 150.0)]},
        {"rank": 1, "collectives": [row("all", 3, 300.0, 60.0, 310.0)]},
        {"rank": 2, "collectives": [row("all", 1, 200.0, 40.0, 220.0)]},
    )
    (c,) = collectives(s)
    assert (c["count"], c["bytes"], c["time_ns"], c["ranks"]) == (6, 3 << 20, 6000, 3)
    assert c["median_busbw_gbps"] == 200.0 and c["median_busbw_link_pct"] == 40.0
    assert c["max_busbw_gbps"] == 310.0


def test_occupancy_kernels_pool_time_and_weight_achieved_by_time() -> None:
    k = {
        "name": "gemm",
        "block": "256x1x1",
        "registers": 128,
        "smem_bytes": 0,
        "theoretical_pct": 25.0,
        "limiters": ["registers"],
    }
    s = summary(
        {
            "rank": 0,
            "occupancy": {
                "time_weighted_theoretical_pct": 25.0,
                "by_kernel": [{**k, "calls": 2, "time_ns": 300, "est_achieved_pct": 10.0}],
            },
        },
        {
            "rank": 1,
            "occupancy": {
                "time_weighted_theoretical_pct": 25.0,
                "by_kernel": [{**k, "calls": 1, "time_ns": 100, "est_achieved_pct": 30.0}],
            },
        },
    )
    (row,) = occupancy(s)["kernels"]
    assert (row["calls"], row["time_ns"], row["limiters"]) == (3, 400, ["registers"])
    assert row["est_achieved_pct"] == pytest.approx((10 * 300 + 30 * 100) / 400)


def test_header_lists_gpus_hosts_versions_and_caps_sources() -> None:
    dev = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132}
    s = summary(
        *[{"rank": r, "device": dev, "window": {"steps": [3, 4]}} for r in range(3)],
        sources=[f"/t/rank-{i}.json" for i in range(25)],
        run={
            "ranks": [
                {
                    "rank": r,
                    "hostname": f"node{r % 2}",
                    "source_format": "kineto",
                    "source_version": "1.0.1",
                    "world_size": 3,
                }
                for r in range(3)
            ],
            "meta": {
                "command": ["torchrun", "train.py"],
                "git_commit": "abc",
                "versions": {"torch": "2.13.0"},
            },
        },
    )
    h = header(s)
    assert h["gpus"] == [{"name": "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", "count": 3}]
    assert h["hosts"] == ["node0", "node1"] and h["world_size"] == 3
    assert h["source_formats"] == ["kineto 1.0.1"] and h["steps"] == [3, 4]
    assert h["command"] == "torchrun train.py" and h["versions"] == {"torch": "2.13.0"}
    assert len(h["sources"]) == 20 and h["sources_total"] == 25


def test_gate_banner_from_the_argument_or_the_summarys_gate_key() -> None:
    gate = {
        "status": "fail",
        "name": "llama",
        "verdicts": [
            {"key": "step_time_ns", "status": "fail", "message": "step time +12 %"},
            {"key": "overlap_pct", "status": "pass", "message": "ok"},
        ],
    }
    p = build_payload(summary(gate=gate))
    assert p["gate"]["status"] == "fail"
    assert p["gate"]["problems"] == [
        {"key": "step_time_ns", "status": "fail", "message": "step time +12 %"}
    ]
    assert build_payload(summary(), {"status": "pass"})["gate"]["status"] == "pass"
    assert build_payload(summary())["gate"] is None


def test_empty_summary_gives_an_empty_payload_without_errors() -> None:
    p = build_payload(summary())
    assert all(v is None for v in p["cards"].values())
    for key in ("steps", "ranges", "kernels", "occupancy", "roofline", "counters", "heatmap"):
        assert p[key] is None
    assert p["collectives"] == [] and p["comm_ranks"] == [] and p["findings"] == []


def test_roofline_points_pool_by_key_and_precision_under_the_union_of_roofs() -> None:
    def pt(prec: str, flop: float, time: float, dram: float, peaks: dict) -> dict:
        return {
            "key": "aten::mm | [[8,8]]",
            "name": "aten::mm",
            "dominant_precision": prec,
            "calls": 1,
            "flop_total": flop,
            "time_ns": time,
            "bytes": {"dram": dram},
            "ceilings": {"flops_per_s": peaks, "bytes_per_s": {"dram": 3e12}},
        }

    s = summary(
        {
            "rank": 0,
            "roofline": {
                "ops": {
                    "points": [
                        pt("tensor", 4e9, 1000.0, 1e6, {"fp32": 6.7e13, "tensor": 4.95e14}),
                        pt("fp32", 1e9, 500.0, 1e6, {"fp32": 6.7e13}),
                    ]
                }
            },
        },
        {
            "rank": 1,
            "roofline": {
                "ops": {
                    "points": [pt("tensor", 2e9, 3000.0, 1e6, {"fp32": 6.7e13, "tensor": 4.95e14})]
                }
            },
        },
    )
    r = roofline(s)
    assert r["points_total"] == 2
    t, f = r["points"]
    assert (t["precision"], t["flop"], t["time_ns"], t["bytes"]) == ("tensor", 6e9, 4000.0, 2e6)
    assert t["intensity"] == pytest.approx(3000.0) and t["flops_per_s"] == pytest.approx(1.5e15)
    assert (f["precision"], f["calls"], f["intensity"]) == ("fp32", 1, pytest.approx(1000.0))
    assert r["ceilings"] == {
        "flops_per_s": {"fp32": 6.7e13, "tensor": 4.95e14},
        "bytes_per_s": {"dram": 3e12},
    }
