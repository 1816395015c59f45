"""Finding rules for GPU-bound work (analyzers/findings_serving.py, docs/report.md §4): the
thresholds on hand summaries, and what fires on the shared serving traces."""

from __future__ import annotations

from typing import Any

import pytest

from analyzers import findings as rules
from analyzers.findings_serving import (
    CATEGORY_SHARE,
    GPU_BOUND_BUSY,
    dominant_category,
    unattributed_graphs,
)
from analyzers.inputs import AnalysisInputs
from analyzers.serving.graphs import Capture
from collectors.kineto import read_kineto
from reports.findings import findings as worded
from reports.summary import build_summary
from tests.support.serving_data import CAPTURED, SERVING, inference
from tests.support.summaries import summary


def _cat(name: str, ns: int, modelled: int = 0, roof: float | None = None) -> dict[str, Any]:
    return {
        "category": name,
        "kernels": 1,
        "time_ns": ns,
        "share": None,
        "modelled_ns": modelled,
        "model_flops": 0.0,
        "roof_ns": roof,
        "pct_of_roof": 100 * roof / modelled if roof is not None and modelled else None,
    }


def _summary(busy: int, span: int, cats: list, graph_ns: int = 0, attributed: int = 0) -> Any:
    work = sum(c["time_ns"] for c in cats)
    serving = {
        "busy_ns": busy,
        "gpu_work_ns": work,
        "categories": cats,
        "phases": [],
        "mfu": None,
        "graphs": {
            "method": "kernel-name" if not attributed else "capture",
            "launches": 3,
            "graph_kernel_ns": graph_ns,
            "attributed_ns": attributed,
        },
    }
    return summary({"rank": 0, "temporal": {"span_ns": span}, "serving": serving})


def test_a_category_at_the_threshold_of_gpu_bound_work_fires_with_its_headroom():
    cats = [_cat("MoE", 40), _cat("GEMM", 35, modelled=35, roof=14.0), _cat("other", 25)]
    f = dominant_category(_summary(busy=50, span=100, cats=cats))
    assert f is not None and f.value == pytest.approx(100 * CATEGORY_SHARE)
    assert f.impact == pytest.approx(0.4 * 0.5)
    assert [c.category for c in f.top] == ["MoE", "GEMM", "other"]
    gemm = f.top[1]
    assert gemm.pct_of_roof == pytest.approx(40.0) and gemm.headroom_ns == 21
    assert f.top[0].pct_of_roof is None and f.top[0].modelled_share == 0.0
    text = rules.findings(_summary(busy=50, span=100, cats=cats))
    assert [x.id for x in text] == ["dominant_category"]


@pytest.mark.parametrize(
    ("busy", "top_ns"), [(49, 40), (50, 39)], ids=["not GPU-bound", "below the share"]
)
def test_below_either_threshold_nothing_fires(busy, top_ns):
    cats = [_cat("MoE", top_ns), _cat("GEMM", 100 - top_ns - 30), _cat("other", 30)]
    assert busy / 100 < GPU_BOUND_BUSY or top_ns / 100 < CATEGORY_SHARE
    assert dominant_category(_summary(busy=busy, span=100, cats=cats)) is None


def test_replays_without_a_capture_op_fire_above_a_fifth_of_the_gpu_work():
    cats = [_cat("GEMM", 100)]
    f = unattributed_graphs(_summary(busy=100, span=100, cats=cats, graph_ns=20))
    assert f is not None and f.value == pytest.approx(20.0) and f.method == "kernel-name"
    assert unattributed_graphs(_summary(100, 100, cats, graph_ns=20, attributed=1)) is None


def _shared(rel: str, capture: bool) -> Any:
    t = read_kineto(inference(rel))
    caps = {}
    if capture:
        cap = next(c for e, c in CAPTURED.values() if e == rel)
        caps = {t.rank: (Capture(read_kineto(inference(cap))),)}
    return build_summary([t], inputs=AnalysisInputs(graph_captures=caps))


def test_vllm_gpu_bound_moe_decode_fires_and_names_its_roof_and_mfu():
    s = _shared(SERVING["vllm"], capture=True)
    f = dominant_category(s)
    assert f is not None and f.top[0].category == "MoE" and f.value > 80
    assert unattributed_graphs(s) is None  # the capture attributes every replay
    (w,) = [x for x in worded(s) if x["id"] == "dominant_category"]
    assert "MoE 80.4 % (no FLOP model)" in w["evidence"]
    assert "at 47.7 % of its roof" in w["evidence"]
    assert "of MI300X OAM 192 GB fp16_tensor" in w["evidence"]
    blind = _shared(SERVING["vllm"], capture=False)
    g = unattributed_graphs(blind)
    assert g is not None and g.value == pytest.approx(96.0, abs=0.1)
    assert any(x["id"] == "unattributed_graphs" for x in worded(blind))


def test_sglang_decode_waits_on_the_host_so_no_gpu_bound_finding():
    s = _shared(SERVING["sglang_decode"], capture=True)
    busy = s["ranks"][0]["serving"]["busy_ns"] / s["ranks"][0]["temporal"]["span_ns"]
    assert busy < GPU_BOUND_BUSY
    assert dominant_category(s) is None
