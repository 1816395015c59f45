"""The report's "What to fix first" section (top of the page), from the summary's
``critical_path`` section (docs/critical-path.md §5).

:func:`fix_first_payload` is the payload key ``fix_first``: the what-ifs ranked by predicted
recovered time per step (at most :data:`TOP_FIXES`, each with its assumptions), the critical
path's time by cause, and the section's notes.  :func:`fix_first_section` renders it; every
string goes through :func:`reports.html_page.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.html_page import Col, esc, ms, no_data, note, pct, section, table

TOP_FIXES = 10


def fix_first_payload(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``fix_first`` payload (None when the summary has no ``critical_path``)."""
    cp = summary.get("critical_path")
    if not isinstance(cp, Mapping):
        return None
    mean = float(cp.get("measured_ns_per_step") or 0.0)
    fixes = list(cp.get("what_to_fix_first") or [])
    rows = []
    for i, w in enumerate(fixes[:TOP_FIXES], start=1):
        pred = list((w.get("predicted_ns_by_step") or {}).values())
        rows.append(
            {
                "rank": i,
                "change": w["change"],
                "kind": w["kind"],
                "recovered_ns_per_step": w["recovered_ns_per_step"],
                "recovered_pct": 100 * w["recovered_share"],
                "predicted_ns_per_step": sum(pred) / len(pred) if pred else None,
                "assumptions": w["assumptions"],
            }
        )
    causes = [
        {"cause": c, "ns_per_step": ns, "pct": 100 * ns / mean if mean > 0 else None}
        for c, ns in sorted((cp.get("cause_ns_per_step") or {}).items(), key=lambda kv: -kv[1])
        if ns > 0
    ]
    return {
        "rows": rows,
        "rows_total": len(fixes),
        "measured_ns_per_step": mean,
        "steps": len(cp.get("steps") or []),
        "ranks": list(cp.get("ranks") or []),
        "replay_exact": bool(cp.get("replay_exact")),
        "causes": causes,
        "notes": list(cp.get("notes") or []),
    }


FIX_COLS = (
    Col("#", "rank", str),
    Col("change", "change", str, numeric=False),
    Col("recovered ms/step", "recovered_ns_per_step", ms),
    Col("% of step", "recovered_pct", pct),
    Col("predicted step ms", "predicted_ns_per_step", ms),
    Col("assumes", "assumptions", str, numeric=False),
)
CAUSE_COLS = (
    Col("cause", "cause", str, numeric=False, wrap=False),
    Col("ms/step", "ns_per_step", ms),
    Col("% of step", "pct", pct),
)


def fix_first_section(p: Mapping[str, Any]) -> str:
    """``<section id="fix-first">``: the ranked what-ifs, then the path by cause."""
    f = p.get("fix_first")
    title = "What to fix first"
    if not f:
        return section(
            "fix-first",
            title,
            no_data("No ProfilerStep in any rank: no critical path (docs/critical-path.md)."),
        )
    body = (
        f"<p>Each change replayed through the dependency graph of every step across "
        f"{len(f['ranks'])} rank(s), {f['steps']} step(s), ranked by the predicted step time it "
        f"recovers (measured {esc(ms(f['measured_ns_per_step']))} ms per step).</p>"
    )
    body += f'<div class="scroll">{table("fix-first-table", FIX_COLS, f["rows"])}</div>'
    if f["rows_total"] > len(f["rows"]):
        body += note(f"{len(f['rows'])} of {f['rows_total']} what-ifs shown (summary.json).")
    if not f["replay_exact"]:
        body += note("The replay with no change differs from the measured step times.")
    body += "<h3>Critical path by cause (mean per step)</h3>"
    body += table("fix-first-causes", CAUSE_COLS, f["causes"])
    body += "".join(note(n) for n in f["notes"])
    return section("fix-first", f"{title} (predicted recovered time per step)", body)
