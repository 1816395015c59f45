"""Outputs of ``gpuscope compare``: the JSON document, rich tables, and the HTML page/section.

Everything is rendered from the JSON-ready dict of :func:`comparison_to_dict` (the same numbers
in every output).  Names come from traces and are untrusted: rich gets them as
:class:`rich.text.Text`, HTML through :func:`reports.html_page.esc`, plotly text is escaped
first (plotly renders a subset of HTML), and the embedded payload goes through
:func:`reports.html_page.script_json`.  Times print in ms (ns / 10⁶) or µs (ns / 10³).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from collectors.errors import UsageError

if TYPE_CHECKING:
    from analyzers.compare import Comparison, SideInfo
    from analyzers.compare_match import Entry, ViewDiff
    from analyzers.compare_steps import StepDistribution

FORMAT = "gpuscope-compare"
SCHEMA_VERSION = 1
TOP_ROWS = 20
"""Entries printed per view on the console (the JSON has them all)."""
HTML_ROWS = 200
"""Entries per view in the HTML tables."""
WATERFALL_BARS = 15
TOP_KERNELS = 15
PLOTLYJS_MODES = ("inline", "cdn", "none")
"""``none``: for a section placed in a page that already loads plotly.js."""

VIEW_TITLES = {
    "kernel": "kernel",
    "op": "op (name and input shapes)",
    "category": "op category",
    "collective": "collective (type and message size)",
    "annotation": "annotation",
    "step": "step (by index)",
}
MODE_TEXT = {
    "steps": "T = Σ duration of the ProfilerSteps paired by index (first n of each rank pair); "
    "work counts in the step it was launched in",
    "window": "T = Σ duration of every window step; work counts over the whole window "
    "(a JSON summary has no per-step kernel times)",
    "span": "T = Σ GPU span of the window (first GPU start to last GPU end); no steps compared",
}


# ------------------------------------------------------------------------------------ JSON


def _round(x: float | None) -> int | None:
    return None if x is None else round(x)


def _entry(e: Entry, v: ViewDiff) -> dict[str, Any]:
    return {
        "key": e.key,
        "status": e.status,
        "names": list(e.names),
        "base": {
            "count": e.base_count,
            "total_ns": e.base_total_ns,
            "per_call_ns": _round(e.base_per_call_ns),
        },
        "current": {
            "count": e.current_count,
            "total_ns": e.current_total_ns,
            "per_call_ns": _round(e.current_per_call_ns),
        },
        "delta_ns": e.delta_ns,
        "delta_pct": e.delta_pct,
        "per_call_delta_pct": e.per_call_delta_pct,
        "share_pct": v.share_pct(e.delta_ns),
    }


def _view(v: ViewDiff) -> dict[str, Any]:
    return {
        "available": v.available,
        "note": v.note,
        "total_change_ns": v.total_change_ns,
        "matched_ns": v.matched_ns,
        "added_ns": v.added_ns,
        "removed_ns": v.removed_ns,
        "other_ns": v.other_ns,
        "unattributed_ns": v.unattributed_ns,
        "counts": {s: v.count(s) for s in ("matched", "added", "removed")},
        "entries": [_entry(e, v) for e in v.entries],
    }


def _side(s: SideInfo) -> dict[str, Any]:
    return {
        "label": s.label,
        "kind": s.kind,
        "formats": list(s.formats),
        "ranks": list(s.ranks),
        "steps_per_rank": list(s.steps_per_rank),
        "total_ns": s.total_ns,
        "units": s.units,
        "mean_ns": s.mean_ns,
    }


def _dist(d: StepDistribution) -> dict[str, Any]:
    return {
        "n": d.n,
        "samples_ns": [int(x) for x in d.samples_ns],
        "min_ns": _round(d.quantile(0.0)),
        "p10_ns": d.quantile(0.1),
        "median_ns": d.median_ns,
        "p90_ns": d.quantile(0.9),
        "max_ns": _round(d.quantile(1.0)),
        "mean_ns": d.mean_ns,
    }


def comparison_to_dict(cmp: Comparison, by: str = "kernel") -> dict[str, Any]:
    """The JSON document of a comparison (docs/compare.md "JSON")."""
    from reports.summary import tool_version

    base = cmp.base.total_ns
    t = cmp.step_test
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpuscope", "version": tool_version()},
        "by": by,
        "mode": cmp.mode,
        "definition": MODE_TEXT[cmp.mode],
        "base": _side(cmp.base),
        "current": _side(cmp.current),
        "rank_pairs": [list(p) for p in cmp.rank_pairs],
        "total_change_ns": cmp.total_change_ns,
        "total_change_pct": 100.0 * cmp.total_change_ns / base if base else None,
        "notes": list(cmp.notes),
        "step_time": {
            "base": _dist(cmp.base_steps),
            "current": _dist(cmp.current_steps),
            "test": {
                "statement": t.statement,
                "test": t.test,
                "p_value": t.p_value,
                "alpha": t.alpha,
                "gate_status": t.gate_status,
                "differ": t.differ,
            },
        },
        "views": {v.view: _view(v) for v in cmp.views},
    }


def write_json(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write the document as UTF-8 JSON (no NaN: undefined values are null)."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write the comparison: {e.strerror or e}", path=p) from e
    return p


# ------------------------------------------------------------------------------------ text


def _ms(ns: Any, signed: bool = False) -> str:
    if ns is None:
        return "–"
    return f"{ns / 1e6:+,.3f}" if signed else f"{ns / 1e6:,.3f}"


def _us(ns: Any) -> str:
    return "–" if ns is None else f"{ns / 1e3:,.1f}"


def _pct(p: Any, signed: bool = True) -> str:
    if p is None:
        return "–"
    return f"{p:+.1f}" if signed else f"{p:.1f}"


def _cut(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def _side_line(name: str, s: Mapping[str, Any]) -> str:
    fmt = "/".join(s["formats"])
    ranks = s["ranks"]
    steps = sorted(set(s["steps_per_rank"]))
    st = "/".join(map(str, steps)) if steps else "0"
    return (
        f"{name}: {s['label']} ({fmt}; {len(ranks)} rank{'s' if len(ranks) != 1 else ''}, "
        f"{st} window step{'s' if steps != [1] else ''} per rank)"
    )


def _unit(mode: str) -> str:
    return "rank-step" if mode != "span" else "rank"


def total_line(doc: Mapping[str, Any]) -> str:
    """``T`` on both sides, ΔT and the per-unit means (one line)."""
    b, c = doc["base"], doc["current"]
    what = "step time" if doc["mode"] != "span" else "GPU span"
    u = _unit(doc["mode"])

    def units(n: int) -> str:
        return f"{n} {u}{'s' if n != 1 else ''}"

    return (
        f"{what}: BASE {_ms(b['total_ns'])} ms over {units(b['units'])} → CURRENT "
        f"{_ms(c['total_ns'])} ms over {units(c['units'])}; ΔT = "
        f"{_ms(doc['total_change_ns'], True)} ms ({_pct(doc['total_change_pct'])} %); mean per "
        f"{u} {_ms(b['mean_ns'])} → {_ms(c['mean_ns'])} ms"
    )


def identity_line(view: Mapping[str, Any]) -> str:
    """matched + added + removed + other = ΔT, in ms."""
    return (
        f"matched {_ms(view['matched_ns'], True)} + added {_ms(view['added_ns'], True)} + "
        f"removed {_ms(view['removed_ns'], True)} + other {_ms(view['other_ns'], True)} = ΔT "
        f"{_ms(view['total_change_ns'], True)} ms"
    )


def unattributed_line(view: Mapping[str, Any], by: str) -> str:
    """Of ``other``: the GPU work in no entry, and the rest (not GPU work)."""
    un = view["unattributed_ns"]
    share = (
        f" ({100 * un / view['total_change_ns']:+.1f} % of ΔT)" if view["total_change_ns"] else ""
    )
    return (
        f"of other: GPU work in no {by} entry {_ms(un, True)} ms{share}; the remaining "
        f"{_ms(view['other_ns'] - un, True)} ms is not GPU work (idle, host time, overlap)"
    )


def entry_label(e: Mapping[str, Any], view: str) -> str:
    """What a row is called: the key, and for steps the ProfilerStep ids."""
    if view == "step" and e["names"]:
        return f"{e['key']} ({e['names'][0]})"
    return str(e["key"])


WIDE_COLUMNS = (
    "status",
    "count",
    "BASE ms",
    "CURRENT ms",
    "BASE µs/call",
    "CURRENT µs/call",
    "Δ ms",
    "Δ %",
    "share %",
)
NARROW_COLUMNS = ("status", "BASE ms", "CURRENT ms", "Δ ms", "share %")
NARROW_HEADERS = {"BASE ms": "base ms", "CURRENT ms": "cur ms"}


def view_table(
    doc: Mapping[str, Any], by: str, top: int = TOP_ROWS, width: int = 70, wide: bool = True
) -> Table:
    """The entries of view *by* ranked by |Δ|, then the rows that close the sum: the entries not
    shown, ``other`` and ΔT.  Narrow consoles (``wide=False``) get fewer columns."""
    v = doc["views"][by]
    rows = v["entries"]
    total = v["total_change_ns"]
    cols = WIDE_COLUMNS if wide else NARROW_COLUMNS
    t = Table(
        title=f"{VIEW_TITLES[by]}: top {min(top, len(rows))} of {len(rows)} by |contribution|",
        title_justify="left",
    )
    t.add_column(by, overflow="ellipsis", no_wrap=True, min_width=12, max_width=width)
    for col in cols:
        head = col if wide else NARROW_HEADERS.get(col, col)
        num = col != "status"
        t.add_column(head, justify="right" if num else "left", no_wrap=True, min_width=len(head))

    def share(d: int) -> str:
        return _pct(100.0 * d / total) if total else "–"

    def add(label: str, values: dict[str, str], **kw: Any) -> None:
        t.add_row(Text(_cut(label, width)), *(values.get(c, "") for c in cols), **kw)

    for e in rows[:top]:
        b, c = e["base"], e["current"]
        add(
            entry_label(e, by),
            {
                "status": e["status"],
                "count": f"{b['count']}→{c['count']}",
                "BASE ms": _ms(b["total_ns"]),
                "CURRENT ms": _ms(c["total_ns"]),
                "BASE µs/call": _us(b["per_call_ns"]),
                "CURRENT µs/call": _us(c["per_call_ns"]),
                "Δ ms": _ms(e["delta_ns"], True),
                "Δ %": _pct(e["delta_pct"]),
                "share %": _pct(e["share_pct"]),
            },
        )
    rest = rows[top:]
    if rest:
        d = sum(e["delta_ns"] for e in rest)
        add(f"… {len(rest)} more entries", {"Δ ms": _ms(d, True), "share %": share(d)})
    add(
        "other (not in any entry)",
        {"Δ ms": _ms(v["other_ns"], True), "share %": share(v["other_ns"])},
    )
    add(
        "total change ΔT",
        {
            "BASE ms": _ms(doc["base"]["total_ns"]),
            "CURRENT ms": _ms(doc["current"]["total_ns"]),
            "Δ ms": _ms(total, True),
            "Δ %": _pct(doc["total_change_pct"]),
            "share %": share(total),
        },
    )
    return t


def steps_table(doc: Mapping[str, Any]) -> Table:
    """Step-time distributions side by side (ms)."""
    st = doc["step_time"]
    t = Table(title="step time per step (slowest compared rank), ms", title_justify="left")
    t.add_column("")
    for col in ("n", "min", "p10", "median", "p90", "max", "mean"):
        t.add_column(col, justify="right")
    for name in ("base", "current"):
        d = st[name]
        t.add_row(
            name.upper(),
            str(d["n"]),
            *(_ms(d[k]) for k in ("min_ns", "p10_ns", "median_ns", "p90_ns", "max_ns", "mean_ns")),
        )
    return t


def print_comparison(
    doc: Mapping[str, Any], console: Console, by: str = "kernel", top: int = TOP_ROWS
) -> None:
    """The console output of ``gpuscope compare``."""
    console.print(Text(_side_line("BASE", doc["base"])))
    console.print(Text(_side_line("CURRENT", doc["current"])))
    pairs = doc["rank_pairs"]
    console.print(
        Text(f"compared: {len(pairs)} rank pair(s), {doc['mode']} mode — {doc['definition']}")
    )
    for n in doc["notes"]:
        console.print(Text(f"note: {n}"))
    console.print(Text(total_line(doc)))
    console.print(Text(f"step times: {doc['step_time']['test']['statement']}"))
    if doc["step_time"]["base"]["n"] or doc["step_time"]["current"]["n"]:
        console.print(steps_table(doc))
    v = doc["views"][by]
    if not v["available"]:
        console.print(Text(f"{by} view {v['note']}"))
        return
    if v["note"] and v["note"] not in doc["notes"]:
        console.print(Text(f"note: {v['note']}"))
    wide = console.width >= 150
    width = max(12, console.width - (100 if wide else 56))
    console.print(view_table(doc, by, top, width=width, wide=wide))
    console.print(Text(identity_line(v)))
    if v.get("unattributed_ns") is not None:
        console.print(Text(unattributed_line(v, by)))


# ------------------------------------------------------------------------------------ HTML


def _short_label(e: Mapping[str, Any], view: str, width: int = 48) -> str:
    return _cut(entry_label(e, view), width)


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
            ("BASE", _side_line("BASE", doc["base"]).split(": ", 1)[1]),
            ("CURRENT", _side_line("CURRENT", doc["current"]).split(": ", 1)[1]),
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


def write_html(
    doc: Mapping[str, Any], path: str | Path, by: str = "kernel", plotlyjs: str = "inline"
) -> Path:
    """Write :func:`render_page` to *path*.

    Raises:
        UsageError: the file cannot be written, or a bad *plotlyjs* / view.
    """
    text = render_page(doc, by, plotlyjs)
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write the HTML page: {e.strerror or e}", path=p) from e
    return p
