"""Outputs of ``compare``: the JSON document, the console table's closing rows, HTML sections."""

from __future__ import annotations

import json

from rich.console import Console

from analyzers.compare import compare
from analyzers.compare_sides import side_from_summary, side_from_traces
from reports.compare_report import comparison_to_dict, print_comparison, render_section
from reports.summary import build_summary
from tests.support.compare_traces import ALL, base_trace, current_trace


def hand_doc(by: str = "kernel", scale: int = 1) -> dict:
    r = compare(
        side_from_traces([base_trace(scale=scale)], "base", ALL),
        side_from_traces([current_trace(scale=scale)], "current", ALL),
    )
    return comparison_to_dict(r, by)


def test_json_document_carries_the_hand_numbers() -> None:
    doc = hand_doc()
    json.dumps(doc, allow_nan=False)  # no NaN anywhere
    assert (doc["base"]["total_ns"], doc["current"]["total_ns"], doc["total_change_ns"]) == (
        2000,
        2300,
        300,
    )
    assert doc["total_change_pct"] == 15.0
    assert doc["base"]["mean_ns"] == 1000.0 and doc["current"]["mean_ns"] == 1150.0
    k = doc["views"]["kernel"]
    gemm = k["entries"][0]
    assert gemm["key"] == "gemm" and gemm["base"] == {
        "count": 2,
        "total_ns": 600,
        "per_call_ns": 300,
    }
    assert gemm["current"]["per_call_ns"] == 360 and gemm["delta_ns"] == 120
    assert gemm["share_pct"] == 40.0 and gemm["delta_pct"] == 20.0
    added = k["entries"][1]
    assert added["status"] == "added" and added["delta_pct"] is None
    assert added["base"]["per_call_ns"] is None and added["per_call_delta_pct"] is None
    assert k["counts"] == {"matched": 2, "added": 1, "removed": 1}
    assert (k["matched_ns"], k["added_ns"], k["removed_ns"], k["other_ns"]) == (120, 120, -100, 160)
    st = doc["step_time"]
    assert st["base"]["samples_ns"] == [1000, 1000] and st["current"]["samples_ns"] == [1100, 1200]
    assert st["current"]["median_ns"] == 1150.0


def test_console_rows_close_on_the_total_change() -> None:
    doc = hand_doc(scale=1000)  # the hand case in µs: ΔT = +0.300 ms
    con = Console(record=True, width=200, highlight=False)
    print_comparison(doc, con, "kernel", top=2)
    text = con.export_text()
    lines = [ln for ln in text.splitlines() if "│" in ln]
    gemm = next(ln for ln in lines if ln.startswith("│ gemm"))
    for cell in ("2→2", "0.600", "0.720", "300.0", "360.0", "+0.120", "+20.0", "+40.0"):
        assert cell in gemm
    more = next(ln for ln in lines if "… 2 more entries" in ln)
    assert "-0.100" in more and "-33.3" in more  # relu −100 µs + late 0
    other = next(ln for ln in lines if "other (not in any entry)" in ln)
    assert "+0.160" in other and "+53.3" in other  # 160 of 300
    total = next(ln for ln in lines if "total change ΔT" in ln)
    assert all(c in total for c in ("2.000", "2.300", "+0.300", "+15.0", "+100.0"))
    assert "matched +0.120 + added +0.120 + removed -0.100 + other +0.160 = ΔT +0.300 ms" in text
    assert "step times: too few steps for the gate's test" in text


def test_a_view_a_summary_lacks_is_said_in_one_line() -> None:
    summary = build_summary([base_trace()], ALL)
    r = compare(
        side_from_summary(summary, "base.json"), side_from_traces([current_trace()], "cur", ALL)
    )
    con = Console(record=True, width=120, highlight=False)
    print_comparison(comparison_to_dict(r, "op"), con, "op")
    text = con.export_text()
    assert "op view not available: BASE is a JSON summary" in text
    assert "note: BASE is a JSON summary: it carries kernel totals and step durations" in " ".join(
        text.split()
    )


def test_html_section_without_plotly_fits_another_page() -> None:
    doc = hand_doc("op")
    html = render_section(doc, "op", plotlyjs="none")
    assert "window.PlotlyConfig" not in html and "cdn.plot.ly" not in html
    for sid in ("cmp-overview", "cmp-contributions", "cmp-top-kernels", "cmp-steps-section"):
        assert f'<section id="{sid}"' in html
    # the view drawn is not repeated; the others get their tables
    assert 'id="cmp-view-op"' not in html and 'id="cmp-view-kernel"' in html
    assert "Contributions by op (name and input shapes)" in html
    assert 'id="cmp-op"' in html and "aten::softmax [[8]]" in html
