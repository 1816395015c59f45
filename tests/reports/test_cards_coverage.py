"""Coverage and provenance on the derived headlines (docs/report.md §3): the achieved TFLOP/s,
% of roofline and occupancy cards state the share of GPU (kernel) time they cover and how much
of it is exact, from the summary's ``roofline.ops.coverage``; AMD's occupancy upper bound shows
as "≤" on the page; the cards say which view (GPU clock, HTA window) they use."""

from __future__ import annotations

import re

import pytest

from analyzers.headline import cards
from collectors.kineto import read_kineto
from collectors.summary.schema import RooflineCoverage
from reports.html import render_report
from reports.summary import build_summary
from tests.support.env import shared_path
from tests.support.summaries import complete, summary

MS = 1_000_000


def _coverage(**kw: object) -> dict:
    return complete(kw, RooflineCoverage)


def test_throughput_card_covers_every_modelled_op_with_its_share_of_gpu_time() -> None:
    s = summary(
        {
            "rank": 0,
            "roofline": {
                "ops": {
                    "points": [],
                    "coverage": _coverage(
                        gpu_time_ns=40 * MS,
                        achieved_ns=10 * MS,
                        achieved_exact_ns=4 * MS,
                        achieved_flops_per_s=2e14,
                        roofline_ns=10 * MS,
                        roofline_exact_ns=4 * MS,
                        pct_of_roofline=50.0,
                    ),
                }
            },
        },
        {
            "rank": 1,
            "roofline": {
                "ops": {
                    "points": [],
                    "coverage": _coverage(
                        gpu_time_ns=60 * MS,
                        achieved_ns=30 * MS,
                        achieved_exact_ns=30 * MS,
                        achieved_flops_per_s=1e14,
                    ),
                }
            },
        },
    )
    c = cards(s)["throughput"]
    # 2e12 + 3e12 FLOP in 40 ms; 40 of 100 ms of GPU time, 34 of the 40 exact
    assert c["tflops"] == pytest.approx(125.0)
    assert c["gpu_time_share"] == pytest.approx(0.4)
    assert c["exact_share"] == pytest.approx(0.85)
    assert c["pct_of_roofline"] == pytest.approx(50.0)  # rank 0's, the only roofline time
    assert c["roofline_gpu_time_share"] == pytest.approx(0.1)
    page = render_report(s, plotlyjs="cdn")
    assert "covers 40.0 % of GPU time, 85.0 % of it exact" in page


def test_a_shared_amd_trace_states_coverage_and_the_occupancy_upper_bound() -> None:
    path = shared_path(
        "kineto", "tracelens", "mi300", "Falconsai_nsfw_image_detection__1016002.json.gz"
    )
    doc = build_summary([read_kineto(path)])
    rank = doc["ranks"][0]
    cov = rank["roofline"]["ops"]["coverage"]
    assert cov["gpu_time_ns"] > 0 and 0 < cov["achieved_ns"] <= cov["gpu_time_ns"]
    c = cards(doc)
    assert c["throughput"]["gpu_time_share"] == pytest.approx(cov["achieved_share"])
    assert c["throughput"]["exact_share"] == pytest.approx(
        cov["achieved_exact_ns"] / cov["achieved_ns"]
    )
    occ = rank["occupancy"]
    assert occ["upper_bound"] is True  # ROCm traces record no registers or LDS
    assert c["occupancy"]["upper_bound"] is True
    assert c["occupancy"]["kernel_time_share"] == pytest.approx(occ["coverage"])
    page = render_report(doc, plotlyjs="cdn")
    value = f"≤ {c['occupancy']['theoretical_pct']:.1f} %"
    assert re.search(r'<div class="value">' + re.escape(value) + "</div>", page)
    assert page.count('<td class="txt nw" title="≤">≤</td>') >= 2  # per rank and per kernel
    assert "of step time (GPU clock)" in page  # the busy card says which view it uses
    assert "overlap: HTA window" in page or "no communication kernel" in page
