"""The HTML page and sections of ``gpuscope compare``, from the JSON document of
:mod:`reports.compare_json`.  Names come from traces and are untrusted: HTML gets them through
:func:`reports.html_page.esc`, plotly text is escaped first (plotly renders a subset of HTML),
and the embedded payload goes through :func:`reports.html_page.script_json`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.errors import UsageError
from reports.compare_console import cut, entry_label, identity_line, side_line, total_line
from reports.compare_json import VIEW_TITLES

HTML_ROWS = 200
"""Entries per view in the HTML tables."""
WATERFALL_BARS = 15
TOP_KERNELS = 15
PLOTLYJS_MODES = ("inline", "cdn", "none")
"""``none``: for a section placed in a page that already loads plotly.js."""


def _short_label(e: Mapping[str, Any], view: str, width: int = 48) -> str:
    return cut(entry_label(e, view), width)


def waterfall_figure(doc: Mapping[str, Any], by: str, bars: int = WATERFALL_BARS) -> Any:
    """Waterfall: the top entries' Δ, the rest, ``other`` and the total ΔT (ms)."""
    import plotly.graph_objects as go

    from reports.html_page import esc

    v = doc["views"][by]
    rows = v["entries"][:bars]
    rest = v["entries"][bars:]
    labels = [esc(_short_label(e, by)) for e in rows]
    hover = [esc(entry_label(e, by)) for e in rows]
    values = [e["delta_ns"] / 1e6 for e in rows]
    if rest:
        labels.append(f"{len(rest)} more")
        hover.append(f"{len(rest)} more entries")
        values.append(sum(e["delta_ns"] for e in rest) / 1e6)
    labels += ["other", "ΔT"]
    hover += ["other: not in any entry (idle, overlap, host time…)", "total change"]
    values += [v["other_ns"] / 1e6, v["total_change_ns"] / 1e6]
    fig = go.Figure(
        go.Waterfall(
            orientation="h",
            y=labels,
            x=values,
            measure=["relative"] * (len(values) - 1) + ["total"],
            hovertext=hover,
            hovertemplate="%{hovertext}: %{x:+.3f} ms<extra></extra>",
            increasing={"marker": {"color": "#c53030"}},
            decreasing={"marker": {"color": "#2f855a"}},
            totals={"marker": {"color": "#2b6cb0"}},
        )
    )
    fig.update_layout(
        template="plotly_white",
        height=max(260, 60 + 26 * len(values)),
        margin={"l": 20, "r": 20, "t": 30, "b": 40},
        xaxis={"title": {"text": "contribution to ΔT (ms)"}},
        yaxis={"autorange": "reversed", "automargin": True},
        font={"size": 12},
    )
    return fig


def top_kernels(doc: Mapping[str, Any], n: int = TOP_KERNELS) -> list[Mapping[str, Any]]:
    """The kernel entries with the largest total on either side."""
    rows = doc["views"]["kernel"]["entries"] if doc["views"]["kernel"]["available"] else []
    return sorted(
        rows, key=lambda e: (-max(e["base"]["total_ns"], e["current"]["total_ns"]), e["key"])
    )[:n]


def kernels_figure(doc: Mapping[str, Any]) -> Any:
    """Side-by-side bars of the top kernels' totals (ms) on both sides."""
    import plotly.graph_objects as go

    from reports.html_page import esc

    rows = top_kernels(doc)
    if not rows:
        return None
    labels = [esc(_short_label(e, "kernel")) for e in rows]
    fig = go.Figure()
    for side, color in (("base", "#8a94a6"), ("current", "#2b6cb0")):
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=labels,
                x=[e[side]["total_ns"] / 1e6 for e in rows],
                name=side.upper(),
                marker={"color": color},
                hovertext=[esc(e["key"]) for e in rows],
                hovertemplate="%{hovertext}: %{x:.3f} ms<extra>" + side.upper() + "</extra>",
            )
        )
    fig.update_layout(
        template="plotly_white",
        barmode="group",
        height=max(260, 60 + 40 * len(rows)),
        margin={"l": 20, "r": 20, "t": 50, "b": 40},
        xaxis={"title": {"text": "total time over the compared part (ms)"}},
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        font={"size": 12},
    )
    return fig


def steps_figure(doc: Mapping[str, Any]) -> Any:
    """Box plots of both sides' per-step samples (ms)."""
    import plotly.graph_objects as go

    st = doc["step_time"]
    if not (st["base"]["n"] and st["current"]["n"]):
        return None
    fig = go.Figure()
    for side, color in (("base", "#8a94a6"), ("current", "#2b6cb0")):
        fig.add_trace(
            go.Box(
                x=[s / 1e6 for s in st[side]["samples_ns"]],
                name=side.upper(),
                boxpoints="all",
                marker={"color": color},
                hovertemplate="%{x:.3f} ms<extra></extra>",
            )
        )
    fig.update_layout(
        template="plotly_white",
        height=240,
        showlegend=False,
        margin={"l": 20, "r": 20, "t": 20, "b": 40},
        xaxis={"title": {"text": "step time (ms)"}},
        font={"size": 12},
    )
    return fig


def _rows(doc: Mapping[str, Any], view: str, limit: int = HTML_ROWS) -> list[dict[str, Any]]:
    out = []
    for e in doc["views"][view]["entries"][:limit]:
        b, c = e["base"], e["current"]
        out.append(
            {
                "name": entry_label(e, view),
                "status": e["status"],
                "b_count": b["count"],
                "c_count": c["count"],
                "b_total": b["total_ns"],
                "c_total": c["total_ns"],
                "b_call": b["per_call_ns"],
                "c_call": c["per_call_ns"],
                "delta": e["delta_ns"],
                "delta_pct": e["delta_pct"],
                "share": e["share_pct"],
            }
        )
    return out


def _entries_table(doc: Mapping[str, Any], view: str) -> str:
    from reports.html_page import Col, ms, short, table, us

    def signed_ms(x: Any) -> str:
        return "–" if x is None else f"{x / 1e6:+,.3f}"

    def signed_pct(x: Any) -> str:
        return "–" if x is None else f"{x:+.1f}"

    cols = [
        Col(VIEW_TITLES[view], "name", lambda s: short(s, 110), numeric=False),
        Col("status", "status", str, numeric=False, wrap=False),
        Col("BASE count", "b_count", lambda x: f"{x:,}"),
        Col("CURRENT count", "c_count", lambda x: f"{x:,}"),
        Col("BASE ms", "b_total", ms),
        Col("CURRENT ms", "c_total", ms),
        Col("BASE µs/call", "b_call", us),
        Col("CURRENT µs/call", "c_call", us),
        Col("Δ ms", "delta", signed_ms),
        Col("Δ %", "delta_pct", signed_pct),
        Col("share of ΔT %", "share", signed_pct),
    ]
    return table(f"cmp-{view}", cols, _rows(doc, view))


def _fragments(figs: list[tuple[str, Any]], plotlyjs: str) -> dict[str, str]:
    """``{div_id: html}``; plotly.js travels with the first figure (inline or cdn), or not."""
    import plotly.io as pio

    from reports.html_figures import CONFIG

    out = {}
    for i, (div_id, fig) in enumerate(figs):
        include: bool | str = False
        if i == 0 and plotlyjs != "none":
            include = True if plotlyjs == "inline" else "cdn"
        out[div_id] = pio.to_html(
            fig, full_html=False, include_plotlyjs=include, div_id=div_id, config=CONFIG
        )
    return out


def render_section(doc: Mapping[str, Any], by: str = "kernel", plotlyjs: str = "inline") -> str:
    """The comparison as HTML ``<section>`` elements (plotly.js once, with the first figure,
    unless *plotlyjs* is ``none``); ids start ``cmp-`` so the sections fit in another page.

    Raises:
        UsageError: an unknown *plotlyjs* mode or view.
    """
    from reports.html_page import esc, no_data, note, section

    if plotlyjs not in PLOTLYJS_MODES:
        raise UsageError(f"--plotlyjs must be one of {', '.join(PLOTLYJS_MODES)}, not {plotlyjs!r}")
    if by not in doc["views"]:
        raise UsageError(f"unknown view {by!r}")
    v = doc["views"][by]
    figs = []
    if v["available"]:
        figs.append(("cmp-waterfall", waterfall_figure(doc, by)))
    kf = kernels_figure(doc)
    if kf is not None:
        figs.append(("cmp-kernels", kf))
    sf = steps_figure(doc)
    if sf is not None:
        figs.append(("cmp-steps", sf))
    frags = _fragments(figs, plotlyjs)

    head = "".join(
        f"<div><b>{esc(k)}</b></div><div>{esc(val)}</div>"
        for k, val in (
            ("BASE", side_line("BASE", doc["base"]).split(": ", 1)[1]),
            ("CURRENT", side_line("CURRENT", doc["current"]).split(": ", 1)[1]),
            ("compared", f"{len(doc['rank_pairs'])} rank pair(s), {doc['mode']} mode"),
            ("definition", doc["definition"]),
            ("total", total_line(doc)),
        )
    )
    parts = [f'<div class="meta">{head}</div>']
    parts += [note(f"note: {n}") for n in doc["notes"]]
    out = [section("cmp-overview", "Comparison", "".join(parts))]

    body = []
    if not v["available"]:
        body.append(no_data(f"{by} view {v['note']}"))
    else:
        if v["note"]:
            body.append(note(v["note"]))
        body.append(frags["cmp-waterfall"])
        body.append(f"<p>{esc(identity_line(v))}</p>")
        body.append(f'<div class="scroll">{_entries_table(doc, by)}</div>')
    out.append(section("cmp-contributions", f"Contributions by {VIEW_TITLES[by]}", "".join(body)))

    kb = [frags["cmp-kernels"]] if "cmp-kernels" in frags else [no_data("no kernels to show")]
    out.append(section("cmp-top-kernels", "Top kernels side by side", "".join(kb)))

    st = doc["step_time"]
    sb = [f"<p>{esc(st['test']['statement'])}</p>"]
    if "cmp-steps" in frags:
        sb.append(frags["cmp-steps"])
    if doc["views"]["step"]["available"]:
        sb.append(f'<div class="scroll">{_entries_table(doc, "step")}</div>')
    out.append(section("cmp-steps-section", "Step times", "".join(sb)))

    for view in ("kernel", "op", "category", "collective", "annotation"):
        if view not in doc["views"] or view == by:
            continue
        vv = doc["views"][view]
        if not vv["available"]:
            inner = no_data(f"{view} view {vv['note']}")
        else:
            inner = (note(vv["note"]) if vv["note"] else "") + (
                f"<p>{esc(identity_line(vv))}</p>"
                f'<div class="scroll">{_entries_table(doc, view)}</div>'
            )
        out.append(section(f"cmp-view-{view}", f"By {VIEW_TITLES[view]}", inner))
    return "".join(out)


def render_page(doc: Mapping[str, Any], by: str = "kernel", plotlyjs: str = "inline") -> str:
    """A self-contained HTML page of the comparison, with the JSON document embedded."""
    from reports.html_page import esc, page, script_json

    title = f"gpuscope compare: {doc['base']['label']} vs {doc['current']['label']}"
    body = f"<h1>{esc(title)}</h1>" + render_section(doc, by, plotlyjs)
    return page(title, body, script_json(doc))
