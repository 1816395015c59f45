"""What the report and the console make of the roofline points: a model error is neither
plotted nor counted as achieved, time shares print as shares of GPU time, and the console
states the coverage of every headline."""

from __future__ import annotations

import io

from rich.console import Console

from analyzers import headline
from analyzers.gpu_peaks import find_peaks
from analyzers.op_models import op_costs, op_groups
from analyzers.roofline import op_roofline
from collectors.peaks import load_peaks
from reports import html_payload
from reports.efficiency_console import print_efficiency_sections
from tests.support.op_traces import Op, op_trace

B = "c10::BFloat16"


def _rank() -> tuple[dict, object]:
    t = op_trace(
        [
            Op("aten::linear", [[128, 1024], [1024, 1024], [1024]], [B, B, B], 26_000),
            Op("aten::mm", [[16384, 16384], [16384, 16384]], [B, B], 1_000),  # above the roof
            Op("aten::_custom_kernel", [[4]], ["float"], 973_000),
        ]
    )
    r = op_roofline(op_groups(op_costs(t)), find_peaks(load_peaks(), t.gpu_device.name))
    ops = {
        "modelled_gpu_time_share": 27_000 / 1_000_000,
        "points": [p.to_dict() for p in r],
        "coverage": r.coverage.to_dict(),
    }
    return {"rank": 0, "roofline": {"ops": ops}}, r


def test_model_errors_are_neither_plotted_nor_counted_as_achieved() -> None:
    rank, r = _rank()
    summary = {"ranks": [rank]}
    card = headline.throughput_card(summary)
    linear = next(p for p in r if p.name == "aten::linear")
    assert card is not None and card["time_ns"] == 26_000
    assert card["tflops"] * 1e12 == linear.flops_per_s_total
    plotted = html_payload.roofline(summary)
    assert plotted is not None and [p["name"] for p in plotted["points"]] == ["aten::linear"]


def test_console_prints_shares_of_gpu_time_and_the_coverage() -> None:
    rank, _ = _rank()
    out = io.StringIO()
    print_efficiency_sections(rank, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "op models cover 2.7 % of GPU time; 2.7 % exact" in text
    assert "over 2.6 % of GPU time (2.6 % exact)" in text
    assert "1 point(s) above their roof (0.1 %) left out" in text
    linear = next(line for line in text.splitlines() if "aten::linear" in line)
    assert "exact" in linear and linear.rstrip(" │").endswith("2.6")
    mm = next(line for line in text.splitlines() if "aten::mm" in line)
    assert "model error" in mm and "above roof" in mm
