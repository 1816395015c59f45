"""Structure of the HTML report, read back with the standard library's ``html.parser``:
section order, figure divs, plotly.js exactly once (inline) or from the CDN, the embedded
payload, one-line empty sections, and trace strings escaped (docs/report.md §8)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reports.html import render_report, write_report
from reports.html_payload import build_payload
from tests.support.html_summaries import ALL_FIGURES, EVIL_KERNELS, EVIL_RANGES, XSS_IMG

SECTIONS = [
    "header",
    "fix-first",
    "cards",
    "findings",
    "steps",
    "kernels",
    "communication",
    "occupancy",
    "roofline",
    "serving",
    "counters",
    "heatmap",
    "definitions",
]


class Page(HTMLParser):
    """Start tags with their attributes, script contents, and the text of every element id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.text: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script, self._buf = dict(attrs), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._buf)))
            self._script = None

    def handle_data(self, data: str) -> None:
        (self._buf if self._script is not None else self.text).append(data)

    def ids(self, tag: str) -> list[str]:
        return [str(a["id"]) for t, a in self.tags if t == tag and a.get("id")]


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    p.close()
    return p


def test_the_fixture_summaries_are_valid_summaries(
    sample_summary: dict[str, Any], hostile_summary: dict[str, Any]
) -> None:
    import msgspec

    from collectors.summary.schema import Summary

    for s in (sample_summary, hostile_summary):
        raw = msgspec.json.encode(s)
        assert msgspec.json.decode(raw, type=Summary) == msgspec.json.decode(raw)


def test_sections_in_order_and_every_figure_once(sample_summary: dict[str, Any]) -> None:
    page = parse(render_report(sample_summary))
    assert [t for t, _ in page.tags].count("html") == 1
    assert page.ids("header") + page.ids("section") == SECTIONS
    figures = [i for i in page.ids("div") if i.startswith("fig-")]
    assert figures == ALL_FIGURES


def test_inline_mode_embeds_plotlyjs_once_and_loads_nothing(sample_summary: dict[str, Any]) -> None:
    text = render_report(sample_summary)
    page = parse(text)
    assert not [a for a, _ in page.scripts if a.get("src")]
    assert not [
        a
        for t, a in page.tags
        if t in ("link", "img", "iframe")
        and any(str(v).startswith(("http:", "https:", "//")) for v in a.values() if v)
    ]
    big = [c for _, c in page.scripts if len(c) > 1_000_000]
    assert len(big) == 1 and "plotly" in big[0][:2000].lower()


def test_cdn_mode_loads_plotlyjs_from_the_cdn_once(sample_summary: dict[str, Any]) -> None:
    page = parse(render_report(sample_summary, plotlyjs="cdn"))
    srcs = [a["src"] for a, _ in page.scripts if a.get("src")]
    assert len(srcs) == 1 and str(srcs[0]).startswith("https://cdn.plot.ly/")
    assert max(len(c) for _, c in page.scripts) < 1_000_000


def test_payload_block_is_the_report_payload(sample_summary: dict[str, Any]) -> None:
    page = parse(render_report(sample_summary))
    (block,) = [c for a, c in page.scripts if a.get("id") == "gpuscope-data"]
    assert next(a for a, _ in page.scripts if a.get("id") == "gpuscope-data")["type"] == (
        "application/json"
    )
    assert json.loads(block) == json.loads(json.dumps(build_payload(sample_summary)))


def test_sections_show_what_the_payload_holds(sample_summary: dict[str, Any]) -> None:
    p = build_payload(sample_summary)
    page = parse(render_report(sample_summary))
    text = " ".join(page.text)
    for row in p["kernels"]["rows"]:
        assert row["name"][:80] in text
    assert "all_reduce" in text and "16-256MiB" in text
    assert p["counters"]["throttle"] and p["counters"]["step_marks"]
    assert [f["id"] for f in p["findings"]] == [
        i.removeprefix("finding-") for i in page.ids("div") if i.startswith("finding-")
    ]
    defs = page.ids("dt")
    assert {
        "def-step_time",
        "def-gpu_busy",
        "def-energy",
        "def-counters",
        "def-heatmap",
        "def-kernels",
        "def-roofline",
        "def-occupancy_kernels",
        "def-breakdown",
    } <= set(defs)


def test_empty_sections_say_so_in_one_line() -> None:
    page = parse(render_report({"schema_version": 1, "ranks": [], "sources": []}))
    assert page.ids("header") + page.ids("section") == SECTIONS
    assert not [i for i in page.ids("div") if i.startswith("fig-")]
    nodata = [a for t, a in page.tags if t == "p" and a.get("class") == "nodata"]
    assert len(nodata) == len(SECTIONS) - 3  # all but header, cards and definitions
    assert not [c for _, c in page.scripts if len(c) > 1_000_000]


def test_trace_strings_are_escaped_everywhere(hostile_summary: dict[str, Any]) -> None:
    text = render_report(hostile_summary)
    assert "<img" not in text
    page = parse(text)
    n_scripts = sum(1 for t, _ in page.tags if t == "script")
    assert text.count("</script>") == n_scripts
    assert not [t for t, _ in page.tags if t == "img"]
    shown = " ".join(page.text)
    for s in (*EVIL_KERNELS, *EVIL_RANGES, f"host{XSS_IMG}"):
        assert s in shown, s  # rendered as text, after the parser decodes the entities
    (block,) = [c for a, c in page.scripts if a.get("id") == "gpuscope-data"]
    payload = json.loads(block)
    assert {r["name"] for r in payload["kernels"]["rows"]} >= set(EVIL_KERNELS)
    assert "\\u003c/script\\u003e" in block and "\\u0026" in block


def test_sort_script_never_writes_html() -> None:
    from reports.html_page import SORT_JS

    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in SORT_JS


def test_write_report_writes_the_rendered_page(tmp_path: Path, hostile_summary: dict) -> None:
    out = write_report(hostile_summary, tmp_path / "sub" / "r.html", plotlyjs="cdn")
    assert out.read_text(encoding="utf-8") == render_report(hostile_summary, plotlyjs="cdn")
    assert not list(out.parent.glob(".*tmp"))


def test_unknown_plotlyjs_mode_is_a_usage_error(hostile_summary: dict) -> None:
    from collectors.errors import UsageError

    with pytest.raises(UsageError, match="--plotlyjs"):
        render_report(hostile_summary, plotlyjs="directory")


def test_hostile_trace_reaches_every_section(hostile_summary: dict[str, Any]) -> None:
    p = build_payload(hostile_summary)
    assert p["occupancy"] and p["steps"] and p["heatmap"] and p["ranges"]
    assert {r["name"] for r in p["ranges"]["rows"]} == set(EVIL_RANGES)
    assert np.isclose(sum(t["pct"] for t in p["kernels"]["types"]), 100.0)
