"""Findings ordered by the time the what-if that removes their cause recovers
(analyzers/critical_path/fix_order.py, docs/critical-path.md §6)."""

from __future__ import annotations

from typing import Any

from analyzers.critical_path.fix_order import FINDING_WHAT_IFS
from analyzers.findings import RULES
from reports import findings as F
from reports.critical_path_section import critical_path_of
from tests.support.critical_path_traces import training_run
from tests.support.summaries import summary


def _fix(kind: str, ns: float, category: str | None = None, rank: int | None = None) -> dict:
    return {
        "change": f"{kind} {category or ''} {rank if rank is not None else ''}",
        "kind": kind,
        "category": category,
        "rank": rank,
        "recovered_ns_per_step": ns,
        "recovered_share": ns / 1000,
        "predicted_ns_by_step": {"0": int(1000 - ns)},
        "assumptions": "a",
    }


def _run(critical_path: dict[str, Any] | None) -> dict[str, Any]:
    """Seven rules fire (the impact order is low_roofline, low_occupancy, gpu_idle,
    exposed_comm, host_bound, skew, low_busbw)."""
    flag = {
        "name": "sm90_xmma_gemm_f32f32",
        "block": "1x1x1",
        "theoretical_pct": 10.0,
        "limiters": [],
        "time_share": 0.9,
        "suggestion": None,
    }
    top: dict[str, Any] = {
        "comm_skew": {
            "arrival_skew_ns": 900,
            "transfer_ns": 100,
            "per_rank": [{"rank": 1, "wait_ns": 10, "late_count": 3}],
        }
    }
    if critical_path is not None:
        top["critical_path"] = critical_path
    return summary(
        {
            "rank": 0,
            "steps": [
                {
                    "step": i,
                    "duration_ns": 1000,
                    "compute_ns": 550,
                    "exposed_comm_ns": 150,
                    "idle_ns": 300,
                }
                for i in range(2)
            ],
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
                    "points": [
                        {
                            "key": "op",
                            "name": "aten::add",
                            "time_share": 1.0,
                            "pct_of_attainable": 1.0,
                        }
                    ],
                }
            },
        },
        **top,
    )


def test_every_rule_but_throttling_has_a_what_if() -> None:
    ids = {rule.__name__ for rule in RULES}
    assert set(FINDING_WHAT_IFS) == ids - {"throttling", "unattributed_graphs"}


def test_findings_follow_the_recovered_time_of_their_what_if_then_impact() -> None:
    assert [f["id"] for f in F.findings(_run(None))] == [
        "low_roofline",
        "low_occupancy",
        "gpu_idle",
        "exposed_comm",
        "host_bound",
    ]
    cp = {
        "what_to_fix_first": [
            _fix("overlap_comm", 400),
            _fix("rank_on_time", 50, rank=0),
            _fix("rank_on_time", 350, rank=1),  # the finding's late rank
            _fix("cuda_graphs", 300),
            _fix("faster", 200, category="GEMM"),  # the occupancy flag's kernel
            _fix("faster", 900, category="attention"),  # no finding's category
            _fix("faster", 100, category="elementwise"),  # aten::add's
        ]
    }
    found = F.findings(_run(cp))
    # exposed 400, skew 350 (rank 1), gpu_idle / host_bound 300 (impact 0.3 > 0.12),
    # low_occupancy 200; low_roofline 100 and low_busbw (no busbw what-if) fall off the 5
    assert [f["id"] for f in found] == [
        "exposed_comm",
        "skew",
        "gpu_idle",
        "host_bound",
        "low_occupancy",
    ]


def test_a_non_overlapped_allreduce_puts_exposed_communication_first() -> None:
    traces = training_run(transfer=1_000_000)  # 1 ms exposed; 2x faster GEMMs recover 0.6 ms
    cp = critical_path_of(traces)
    assert cp is not None
    top = cp["what_to_fix_first"][0]
    assert top["kind"] == "overlap_comm"
    s = _run(cp)
    assert F.findings(s)[0]["id"] == "exposed_comm"
