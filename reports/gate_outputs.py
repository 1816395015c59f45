"""Renderings of a gate result, all from one JSON document (:func:`gate_document`).

* :func:`gate_document`: the verdict as JSON (``gpuscope gate --json``, :func:`document_json`;
  also the ``gate`` key a summary can carry for the HTML report's PASS/FAIL banner);
* :func:`render_table`: a rich table for the terminal;
* :func:`junit_xml`: JUnit XML, one ``<testcase classname="perf.<benchmark>" name="<series>">``
  per series: ``<failure>`` for a regression, ``<skipped>`` for insufficient data;
* :func:`markdown`: a pull-request comment / ``$GITHUB_STEP_SUMMARY`` section;
* :func:`github_annotations`: ``::error`` / ``::warning`` / ``::notice`` workflow commands.
"""

from __future__ import annotations

import html
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from analyzers.gate.verdicts import GateResult

DOCUMENT_SCHEMA = 1
STATUS_LABEL = {
    "pass": "pass",
    "improved": "improved",
    "warn": "WARN",
    "fail": "FAIL",
    "insufficient": "insufficient data",
}
_STATUS_STYLE = {
    "pass": "green",
    "improved": "cyan",
    "warn": "yellow",
    "fail": "bold red",
    "insufficient": "magenta",
}
_TEST_LABEL = {"mann-whitney": "Mann–Whitney U", "welch": "Welch t", "prediction-t": "pred. t"}


# --- numbers ----------------------------------------------------------------------------------
def format_value(value: float | None, unit: str) -> str:
    """A metric value for humans: ns as ns/µs/ms/s, % with 2 decimals, others with 4 digits."""
    if value is None or not math.isfinite(value):
        return "–"
    if unit == "ns":
        a = abs(value)
        if a >= 1e9:
            return f"{value / 1e9:.4f} s"
        if a >= 1e6:
            return f"{value / 1e6:.3f} ms"
        if a >= 1e3:
            return f"{value / 1e3:.3f} µs"
        return f"{value:.0f} ns"
    if unit == "%":
        return f"{value:.2f} %"
    return f"{value:.4g} {unit}"


def format_effect(effect: float | None, compare: str) -> str:
    """Signed change, positive = worse: ``+5.10 %`` (relative) or ``+3.20 pp`` (absolute)."""
    if effect is None:
        return "–"
    if math.isinf(effect):
        return "+∞ %" if effect > 0 else "−∞ %"
    text = f"{effect:+.2f}"
    if text == "-0.00":
        text = "+0.00"
    return f"{text} {'pp' if compare == 'absolute' else '%'}"


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def verdict_message(v: Mapping[str, Any]) -> str:
    """One line: ``step_time_ns +5.10 % (104.418 ms vs 99.355 ms, 1 baseline run; Mann–Whitney
    U p=1.6e-10): fail: beyond threshold, noise and significance``."""
    unit, cmp_ = v["unit"], v["compare"]
    parts = [
        f"{format_value(v['current'], unit)} vs {format_value(v['baseline'], unit)}",
        f"{v['baseline_runs']} baseline run{'s' if v['baseline_runs'] != 1 else ''}",
    ]
    if v["p_value"] is not None:
        parts[-1] += f"; {_TEST_LABEL.get(v['test'], v['test'])} p={v['p_value']:.2g}"
    return (
        f"{v['key']} {format_effect(v['effect'], cmp_)} ({', '.join(parts)}): "
        f"{STATUS_LABEL[v['status']]}: {v['reason']}"
    )


# --- the document -----------------------------------------------------------------------------
def gate_document(
    result: GateResult,
    *,
    name: str,
    strict: bool,
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The gate's verdict as a JSON-ready dict (no NaN/inf: they become ``null``).

    Args:
        result: the decision.
        name: the benchmark name.
        strict: whether insufficient data fails the gate (exit 3).
        baseline: ``{"kind", "label", "run_ids", "commits", "environment"}``.
        current: ``{"source", "commit", "environment"}``.
        notes: lines worth showing next to the verdict (environment differences, ...).
    """
    verdicts = []
    for v in result.verdicts:
        raw = asdict(v)
        verdicts.append(
            {**{k: _finite(x) for k, x in raw.items()}, "message": verdict_message(raw)}
        )
    counts = {s: sum(1 for v in result.verdicts if v.status == s) for s in STATUS_LABEL}
    return {
        "schema_version": DOCUMENT_SCHEMA,
        "kind": "gpuscope.gate",
        "name": name,
        "status": result.status,
        "exit_code": result.exit_code(strict),
        "strict": strict,
        "alpha": result.alpha,
        "noise_k": result.noise_k,
        "counts": counts,
        "baseline": dict(baseline),
        "current": dict(current),
        "notes": list(notes),
        "verdicts": verdicts,
    }


def document_json(doc: Mapping[str, Any]) -> str:
    """The document as the JSON text ``gpuscope gate --json`` writes (one trailing newline)."""
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def headline(doc: Mapping[str, Any]) -> str:
    """``gate FAIL: 1 regression, 2 warnings, 0 insufficient of 7 series (exit 1)``."""
    c = doc["counts"]
    n = len(doc["verdicts"])
    return (
        f"gate {doc['status'].upper()}: {c['fail']} regression(s), {c['warn']} warning(s), "
        f"{c['insufficient']} insufficient, {c['improved']} improved of {n} series "
        f"(exit {doc['exit_code']})"
    )


# --- terminal ---------------------------------------------------------------------------------
def render_table(doc: Mapping[str, Any], console: Console) -> None:
    """Print the verdicts as a rich table and the headline."""
    table = Table(title=Text(f"gpuscope gate: {doc['name']} vs {doc['baseline'].get('label', '')}"))
    numeric = ("baseline", "current", "change", "p")
    for col in ("series", "baseline", "current", "change", "p", "test", "verdict", "why"):
        table.add_column(
            col,
            justify="right" if col in numeric else "left",
            no_wrap=col in (*numeric, "test", "verdict"),
            overflow="fold",
        )
    for v in doc["verdicts"]:
        # user strings (kernel names) go in as Text: never parsed as rich markup
        table.add_row(
            Text(v["key"]),
            format_value(v["baseline"], v["unit"]),
            format_value(v["current"], v["unit"]),
            format_effect(v["effect"], v["compare"]),
            "–" if v["p_value"] is None else f"{v['p_value']:.2g}",
            _TEST_LABEL.get(v["test"], "–") if v["test"] else "–",
            Text(STATUS_LABEL[v["status"]], style=_STATUS_STYLE[v["status"]]),
            Text(v["reason"]),
        )
    console.print(table)
    for note in doc["notes"]:
        console.print(f"note: {note}", markup=False, highlight=False)
    console.print(headline(doc), markup=False, highlight=False)


# --- JUnit ------------------------------------------------------------------------------------
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _x(s: Any) -> str:
    """Text safe for XML 1.0 (characters XML cannot hold are dropped; escaping is ET's)."""
    return _XML_BAD.sub("", str(s))


def junit_xml(doc: Mapping[str, Any]) -> str:
    """JUnit XML (Jenkins/Ant ``junit-10.xsd`` shape) with one test case per series."""
    verdicts = doc["verdicts"]
    fails = sum(v["status"] == "fail" for v in verdicts)
    skips = sum(v["status"] == "insufficient" for v in verdicts)
    suite_name = f"perf.{doc['name']}"
    root = ET.Element(
        "testsuites",
        name="gpuscope gate",
        tests=str(len(verdicts)),
        failures=str(fails),
        errors="0",
        time="0",
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_x(suite_name),
        tests=str(len(verdicts)),
        failures=str(fails),
        errors="0",
        skipped=str(skips),
        time="0",
    )
    props = ET.SubElement(suite, "properties")
    prop_values = {
        "status": doc["status"],
        "baseline": doc["baseline"].get("label"),
        "baseline_commits": ",".join(str(c) for c in doc["baseline"].get("commits") or [] if c),
        "commit": doc["current"].get("commit"),
        "fingerprint": (doc["current"].get("environment") or {}).get("fingerprint"),
        "alpha": doc["alpha"],
    }
    for k, val in prop_values.items():
        if val not in (None, ""):
            ET.SubElement(props, "property", name=k, value=_x(val))
    for v in verdicts:
        case = ET.SubElement(
            suite, "testcase", classname=_x(suite_name), name=_x(v["key"]), time="0"
        )
        msg = _x(v["message"])
        if v["status"] == "fail":
            el = ET.SubElement(case, "failure", message=msg, type="PerformanceRegression")
            el.text = msg
        elif v["status"] == "insufficient":
            ET.SubElement(case, "skipped", message=_x(f"insufficient data: {v['reason']}"))
        else:
            ET.SubElement(case, "system-out").text = msg
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --- Markdown ---------------------------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def md_escape(s: Any) -> str:
    """Text safe inside a GitHub-flavoured Markdown table cell (no HTML, no markup, no pipes)."""
    t = html.escape(" ".join(str(s).split()), quote=True)
    return _MD_SPECIAL.sub(r"\\\1", t)


_MD_ICON = {"pass": "✅", "improved": "🚀", "warn": "⚠️", "fail": "❌", "insufficient": "❔"}


def markdown(doc: Mapping[str, Any], report_url: str | None = None) -> str:
    """A Markdown summary: headline, a table of every series, notes, and the report link."""
    lines = [
        f"### gpuscope gate: {md_escape(doc['name'])} — {_MD_ICON.get(doc['status'], '')} "
        f"**{md_escape(doc['status'].upper())}**",
        "",
        f"Baseline: {md_escape(doc['baseline'].get('label', ''))}. "
        f"α = {doc['alpha']:g}, noise factor {doc['noise_k']:g}.",
        "",
        "| series | baseline | current | change | p | verdict | why |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for v in doc["verdicts"]:
        p = "–" if v["p_value"] is None else f"{v['p_value']:.2g}"
        cells = [
            md_escape(v["key"]),
            md_escape(format_value(v["baseline"], v["unit"])),
            md_escape(format_value(v["current"], v["unit"])),
            md_escape(format_effect(v["effect"], v["compare"])),
            md_escape(p),
            f"{_MD_ICON[v['status']]} {md_escape(STATUS_LABEL[v['status']])}",
            md_escape(v["reason"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"> {md_escape(n)}" for n in doc["notes"]]
    lines.append(md_escape(headline(doc)))
    if report_url:
        lines += ["", f"[Full report]({report_url.replace(')', '%29').replace(' ', '%20')})"]
    return "\n".join(lines) + "\n"


# --- GitHub Actions ---------------------------------------------------------------------------
def _gh_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(doc: Mapping[str, Any]) -> list[str]:
    """Workflow commands: ``::error`` per regression, ``::warning`` per warning, ``::notice``
    per series without enough data (escaped as GitHub's toolkit escapes them)."""
    kind = {
        "fail": ("error", "perf regression"),
        "warn": ("warning", "perf warning"),
        "insufficient": ("notice", "perf: insufficient data"),
    }
    out = []
    for v in doc["verdicts"]:
        if v["status"] in kind:
            level, title = kind[v["status"]]
            prop = _gh_prop(f"{title}: {v['key']}")
            out.append(f"::{level} title={prop}::{_gh_data(v['message'])}")
    return out
