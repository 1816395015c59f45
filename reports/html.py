"""The self-contained HTML report, rendered from the JSON summary only (docs/report.md).

``render_report(summary)`` returns the page; ``write_report(summary, path)`` writes it.  The
page holds, top-down: header (and a PASS/FAIL banner when a gate result is given), what to fix
first (:mod:`reports.html_critical_path`), headline cards, findings, step breakdown, top
kernels, communication, occupancy, roofline, NVML counters, ranks × steps heatmap,
definitions.  Its data payload is embedded as
``<script type="application/json" id="gpuscope-data">`` (:mod:`reports.html_payload`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from collectors.errors import UsageError
from reports import html_figures as figs
from reports import html_sections as sec
from reports import html_tables as tab
from reports.html_critical_path import fix_first_section
from reports.html_page import page, script_json
from reports.html_payload import build_payload
from reports.html_serving import serving_section
from reports.output import write_atomic

if TYPE_CHECKING:
    from collectors.summary.schema import Summary

PLOTLYJS_MODES = ("inline", "cdn")


def _figures(p: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(div id, figure) of every figure with data, in document order."""
    built = [
        ("fig-steps", figs.steps_figure(p["steps"])),
        ("fig-kernel-types", figs.kernel_types_figure(p["kernels"])),
        ("fig-comm", figs.comm_figure(p["comm_ranks"])),
        ("fig-occupancy", figs.occupancy_figure(p["occupancy"])),
        ("fig-roofline", figs.roofline_figure(p["roofline"])),
        ("fig-counters", figs.counters_figure(p["counters"])),
        ("fig-heatmap", figs.heatmap_figure(p["heatmap"])),
    ]
    return [(i, f) for i, f in built if f is not None]


def render_report(
    summary: Mapping[str, Any],
    *,
    plotlyjs: str = "inline",
    gate: Mapping[str, Any] | None = None,
) -> str:
    """The report page as a string.

    Args:
        summary: a JSON summary (schema_version 1), as written by ``gpuscope analyze --json``.
        plotlyjs: ``inline`` (plotly.js embedded once: works offline) or ``cdn``.
        gate: a gate result document (``gpuscope gate --json``) for the PASS/FAIL banner; by
            default the summary's own ``gate`` key, if any.

    Raises:
        UsageError: an unknown *plotlyjs* mode.
    """
    if plotlyjs not in PLOTLYJS_MODES:
        raise UsageError(f"--plotlyjs must be one of {', '.join(PLOTLYJS_MODES)}, not {plotlyjs!r}")
    p = build_payload(cast("Summary", summary), gate)
    frags = figs.fragments(_figures(p), plotlyjs)
    body = "".join(
        [
            sec.header_section(p),
            fix_first_section(p),
            sec.cards_section(p),
            sec.findings_section(p),
            sec.steps_section(p, frags),
            tab.kernels_section(p, frags),
            tab.comm_section(p, frags),
            tab.occupancy_section(p, frags),
            tab.roofline_section(p, frags),
            serving_section(p),
            sec.counters_section(p, frags),
            sec.heatmap_section(p, frags),
            sec.definitions_section(sec.shown_definitions(p)),
        ]
    )
    return page("gpuscope report", body, script_json(p))


def write_report(
    summary: Mapping[str, Any],
    path: str | Path,
    *,
    plotlyjs: str = "inline",
    gate: Mapping[str, Any] | None = None,
    force: bool = False,
) -> Path:
    """Render the report and write it to *path* atomically
    (:func:`reports.output.write_atomic`); returns the path.

    Raises:
        UsageError: an unknown *plotlyjs* mode, or *path* exists without *force*, or cannot be
            written.
    """
    text = render_report(summary, plotlyjs=plotlyjs, gate=gate)
    return write_atomic(path, text, force=force, what="HTML report")
