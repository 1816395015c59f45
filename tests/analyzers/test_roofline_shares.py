"""Roofline shares and headline coverage: every time share is of the trace's GPU time, every
derived headline states the GPU time it covers and how much of it is exact, and a point above
its roof is a model error that is never counted as achieved."""

from __future__ import annotations

import json

import pytest

from analyzers.gpu_peaks import find_peaks
from analyzers.op_models import op_costs, op_groups
from analyzers.roofline import op_roofline
from collectors.peaks import load_peaks
from tests.support.op_traces import Op, op_trace

B = "c10::BFloat16"
LINEAR_FLOP = 2 * 128 * 1024 * 1024 + 128 * 1024
ADD_FLOP = 128 * 1024
CONV_FLOP = 2 * 8 * 16 * 16 * 8 * 9  # no Concrete Inputs: output = input size, an estimate
MM_FLOP = 2 * 16384**3  # claimed in 1 µs: above any roof


def _trace():
    return op_trace(
        [
            Op("aten::linear", [[128, 1024], [1024, 1024], [1024]], [B, B, B], 26_000),
            Op("aten::add", [[128, 1024], [128, 1024], []], [B, B, "Scalar"], 4_660, ["", "", "1"]),
            Op(
                "aten::conv2d",
                [[1, 8, 16, 16], [8, 8, 3, 3], [], [], [], [], []],
                [B, B, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
                5_000,
            ),
            Op("aten::mm", [[16384, 16384], [16384, 16384]], [B, B], 1_000),
            # work no model covers
            Op("aten::_custom_kernel", [[4]], ["float"], 963_340),
        ]
    )


def _points():
    t = _trace()
    return op_roofline(op_groups(op_costs(t)), find_peaks(load_peaks(), t.gpu_device.name))


def test_time_shares_are_of_the_gpu_time_not_of_the_modelled_time() -> None:
    points = {p.name: p for p in _points()}
    # 26 µs of 1 ms of GPU time: 2.6 %, where a share of the 36.66 µs modelled said 70.9 %
    assert points["aten::linear"].time_share == pytest.approx(0.026)
    assert points["aten::add"].time_share == pytest.approx(0.00466)
    assert sum(p.time_share for p in points.values()) == pytest.approx(0.03666)


def test_coverage_of_every_headline_and_its_exact_part() -> None:
    r = _points()
    c = r.coverage
    assert c.gpu_time_ns == 1_000_000
    assert (c.modelled_ns, c.exact_ns) == (36_660, 31_660)  # the conv is an estimate
    # achieved TFLOP/s leaves out the model error (mm): linear, add and conv
    assert (c.achieved_ns, c.achieved_exact_ns) == (35_660, 30_660)
    assert c.share(c.achieved_ns) == pytest.approx(0.03566)
    flop = LINEAR_FLOP + ADD_FLOP + CONV_FLOP
    assert c.achieved_flops_per_s == pytest.approx(flop / 35_660e-9)
    peaks = find_peaks(load_peaks(), "NVIDIA H100 80GB HBM3")
    assert peaks is not None
    attained = sum(p.attainable_flops_per_s * p.time_ns * 1e-9 for p in r if p.model_error is None)
    assert c.roofline_ns == 35_660
    assert c.pct_of_roofline == pytest.approx(100 * flop / attained)
    assert (c.model_errors, c.model_error_ns) == (1, 1_000)
    d = c.to_dict()
    assert d["achieved_share"] == pytest.approx(0.03566)
    assert d["achieved_exact_share"] == pytest.approx(0.03066)
    json.dumps(d, allow_nan=False)


def test_a_point_above_its_roof_is_a_model_error_and_ranked_last() -> None:
    r = _points()
    mm = next(p for p in r if p.name == "aten::mm")
    assert mm.pct_of_attainable is not None and mm.pct_of_attainable > 100
    assert mm.model_error is not None and "above its roof" in mm.model_error
    assert mm.headroom_ns is None
    assert r[len(r) - 1].name == "aten::mm"
    d = mm.to_dict()
    assert d["model_error"] == mm.model_error and d["exact"] is True
    others = [p for p in r if p.name != "aten::mm"]
    assert all(p.model_error is None and p.headroom_ns is not None for p in others)


def test_points_say_whether_their_cost_is_exact_and_why_not() -> None:
    conv = next(p for p in _points() if p.name == "aten::conv2d")
    assert conv.exact is False and "stride/padding not recorded" in conv.model_note
    d = conv.to_dict()
    assert d["exact"] is False and d["model_note"] == conv.model_note


def test_without_a_gpu_time_shares_are_unknown_rather_than_of_the_modelled_time() -> None:
    t = _trace()
    groups = op_groups(op_costs(t))
    groups.attrs.clear()
    r = op_roofline(groups, None)
    assert all(p.time_share is None for p in r)
    assert r.coverage.share(r.coverage.modelled_ns) is None
    assert op_roofline(groups, None, gpu_time_ns=2_000_000)[0].time_share is not None
