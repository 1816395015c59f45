"""Gate outputs: JUnit XML valid against the CI schema, Markdown, annotations, JSON document."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from rich.console import Console

from analyzers.gate.baseline import Baseline
from analyzers.gate.metrics import MetricValue, extract_metrics
from analyzers.gate.verdicts import decide
from reports import gate_outputs as out
from tests.support.summaries import kernel_row, make_summary, sim_summary
from tests.support.validators import JUNIT_XSD as XSD
from tests.support.validators import xmlschema_module as _xmlschema

EVIL = 'void gemm<float, 128>(x|y) & "z" [*_`] \x07<script>alert(1)</script>\nnext'


def _doc(strict: bool = False) -> dict:
    """A result with one of each outcome, and a kernel with a hostile name."""
    rng = np.random.default_rng(1)
    cur = extract_metrics(
        make_summary(
            [[int(x) for x in rng.normal(107e6, 2e6, 30)]],
            idle_pct=[5.0],
            overlap_pct=[60.0],
            kernels=[[kernel_row(EVIL, rng.normal(50_000, 500, 200))]],
        )
    )
    base = extract_metrics(
        make_summary(
            [[int(x) for x in rng.normal(100e6, 2e6, 30)]],
            idle_pct=[5.0],
            overlap_pct=[60.0],
            kernels=[[kernel_row(EVIL, rng.normal(50_000, 500, 200))]],
        )
    )
    result = decide(cur, Baseline("file", (base,)))
    return out.gate_document(
        result,
        name="llama<8b>",
        strict=strict,
        baseline={"kind": "file", "label": "base.json", "run_ids": [], "commits": []},
        current={"source": "cur.json", "commit": "abc123", "environment": {"fingerprint": "f"}},
        notes=["baseline environment differs: driver: 550 → 555"],
    )


def test_document_has_one_verdict_per_series_and_is_strict_json() -> None:
    doc = _doc()
    statuses = {v["key"]: v["status"] for v in doc["verdicts"]}
    assert statuses["step_time_ns"] == "fail"
    assert statuses["overlap_pct"] == "insufficient"  # no samples, single baseline
    assert statuses[f"kernel_time_ns[{EVIL}]"] == "pass"
    assert doc["status"] == "fail" and doc["exit_code"] == 1
    assert doc["counts"]["fail"] == 1 and doc["counts"]["insufficient"] == 1
    json.dumps(doc, allow_nan=False)


def test_infinite_effect_is_null_in_json_but_explained_in_the_message() -> None:
    cur = {"exposed_comm_ns": MetricValue("exposed_comm_ns", "exposed_comm_ns", 5e6)}
    base = {"exposed_comm_ns": MetricValue("exposed_comm_ns", "exposed_comm_ns", 0.0)}
    doc = out.gate_document(
        decide(cur, Baseline("file", (base,))), name="n", strict=False, baseline={}, current={}
    )
    (v,) = doc["verdicts"]
    assert v["effect"] is None and "+∞ %" in v["message"]
    json.dumps(doc, allow_nan=False)


def test_junit_validates_against_the_ci_schema_with_one_testcase_per_series() -> None:
    doc = _doc()
    xml = out.junit_xml(doc)
    _xmlschema().XMLSchema(XSD).validate(xml)
    root = ET.fromstring(xml.split("?>", 1)[1])
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(doc["verdicts"])
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"
    assert suite.get("name") == "perf.llama<8b>"
    by_name = {c.get("name"): c for c in cases}
    assert by_name["step_time_ns"].find("failure") is not None
    assert by_name["overlap_pct"].find("skipped") is not None
    # the hostile name survives minus the control character XML cannot carry
    assert "kernel_time_ns[" + EVIL.replace("\x07", "") + "]" in by_name
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["commit"] == "abc123" and props["fingerprint"] == "f"


def test_schema_rejects_what_ci_would_reject() -> None:
    # the fixture schema is not vacuous: a testsuite without its required counts is invalid
    bad = '<testsuites><testsuite name="x"><testcase name="a"/></testsuite></testsuites>'
    assert not _xmlschema().XMLSchema(XSD).is_valid(bad)


def test_markdown_table_keeps_its_shape_and_carries_no_html() -> None:
    md = out.markdown(_doc())
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
    header = rows[0]
    n_cells = header.count(" | ") + 1
    for row in rows[1:]:
        # an escaped pipe is "\|": split only on unescaped ones
        cells = [c for c in row.replace("\\|", "").strip("|").split("|")]
        assert len(cells) == n_cells, row
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "**FAIL**" in md
    assert "driver: 550 → 555" in md


def test_github_annotations_are_escaped_workflow_commands() -> None:
    lines = out.github_annotations(_doc())
    assert any(ln.startswith("::error title=perf regression%3A step_time_ns::") for ln in lines)
    assert any(ln.startswith("::notice ") and "overlap_pct" in ln for ln in lines)
    for ln in lines:
        assert "\n" not in ln and "\r" not in ln
        title = ln.split("::", 2)[1]
        assert "," not in title and ":" not in title.split("=", 1)[1]


def test_terminal_table_prints_names_literally() -> None:
    buf = io.StringIO()
    out.render_table(_doc(), Console(file=buf, width=250, color_system=None))
    text = buf.getvalue()
    assert "[*_`]" in text  # not swallowed as rich markup
    assert "gate FAIL" in text and "exit 1" in text


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (412_000_000.0, "ns", "412.000 ms"),
        (1_500.0, "ns", "1.500 µs"),
        (999.0, "ns", "999 ns"),
        (2.5e9, "ns", "2.5000 s"),
        (12.345, "%", "12.35 %"),
        (180.25, "GB/s", "180.2 GB/s"),
        (None, "ns", "–"),
    ],
)
def test_value_formatting(value: float | None, unit: str, shown: str) -> None:
    assert out.format_value(value, unit) == shown


def test_effect_formatting_never_shows_negative_zero() -> None:
    assert out.format_effect(-0.001, "absolute") == "+0.00 pp"
    assert out.format_effect(5.1, "relative") == "+5.10 %"
    assert out.format_effect(-3.0, "relative") == "-3.00 %"


def test_strict_document_exit_code_for_insufficient_only() -> None:
    rng = np.random.default_rng(3)
    s = sim_summary(rng)
    s["ranks"][0]["overlap"] = {"overlap_pct": 50.0}
    cur = extract_metrics(s)
    result = decide(cur, Baseline("file", (cur,)))
    kw = {"name": "n", "baseline": {}, "current": {}}
    assert out.gate_document(result, strict=False, **kw)["exit_code"] == 0
    assert out.gate_document(result, strict=True, **kw)["exit_code"] == 3


def test_html_report_shows_the_same_verdict_as_a_banner() -> None:
    html_mod = pytest.importorskip("reports.html")
    doc = _doc()
    page = html_mod.render_report(make_summary([[100, 200]]), gate=doc)
    banner = page[page.index('id="gate-banner"') :].split("</div>", 1)[0]
    assert "FAIL" in banner and "llama&lt;8b&gt;" in banner
    (fail,) = [v for v in doc["verdicts"] if v["status"] == "fail"]
    assert fail["message"].replace("&", "&amp;") in banner
    assert "<script>alert" not in page
