"""The report's "What to fix first" section: right after the header, the what-ifs in the
summary's order with their assumptions, the path by cause; a line when there is no path."""

from __future__ import annotations

import re

from analyzers.options import AnalysisOptions
from reports.html import render_report
from reports.html_payload import build_payload
from reports.summary import build_summary
from tests.support.critical_path_traces import training_run


def _text(html: str, sec: str) -> str:
    i = html.index(f'<section id="{sec}"')
    return re.sub(r"<[^>]+>", " ", html[i : html.index("</section>", i)])


def test_fix_first_section_lists_the_what_ifs_in_the_summarys_order() -> None:
    s = build_summary(training_run(late_rank=1, delay=150_000), AnalysisOptions())
    cp = s["critical_path"]
    p = build_payload(s)
    rows = p["fix_first"]["rows"]
    assert [r["change"] for r in rows] == [w["change"] for w in cp["what_to_fix_first"]][:10]
    late = next(r for r in rows if r["kind"] == "rank_on_time")
    assert abs(late["recovered_ns_per_step"] - 150_000) <= 1_500
    html = render_report(s, plotlyjs="cdn")
    assert html.index('id="fix-first"') < html.index('id="cards"')
    text = _text(html, "fix-first")
    pos = [text.index(r["change"]) for r in rows]
    assert pos == sorted(pos)
    for r in rows:
        assert r["assumptions"].split(";")[0].replace("'", "&#x27;") in text
    assert "late_rank" in text and "Critical path by cause" in text


def test_fix_first_section_without_steps_says_so() -> None:
    s = build_summary(training_run(), AnalysisOptions())
    del s["critical_path"]
    html = render_report(s, plotlyjs="cdn")
    assert build_payload(s)["fix_first"] is None
    assert "No ProfilerStep in any rank" in _text(html, "fix-first")
