"""Trend HTML of the run history: each series over commits, change points, gate verdicts.

* **Environment segments** (dotted lines) and **change points** (dashed lines):
  :mod:`analyzers.gate.changepoints`;
* **Verdicts**: stored ``gpuscope gate`` outcomes, marked at their time and current value.

Times (``ns`` series) are drawn in milliseconds; hover text shows the exact stored value.
Every string from the store is HTML-escaped before it reaches the page.
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analyzers.gate.changepoints import annotate_history

_VERDICT_STYLE = {
    "fail": ("x", "#d62728"),
    "warn": ("triangle-up", "#ff7f0e"),
    "insufficient": ("circle-open", "#9467bd"),
    "improved": ("star", "#17becf"),
    "pass": ("circle", "#2ca02c"),
}


def _scale(unit: str) -> tuple[float, str]:
    return (1e-6, "ms") if unit == "ns" else (1.0, unit)


def _e(s: object) -> str:
    return html.escape("" if s is None or (isinstance(s, float) and math.isnan(s)) else str(s))


def render_history(
    history: pd.DataFrame, verdicts: pd.DataFrame, *, title: str = "gpuscope history"
) -> str:
    """A self-contained HTML page (plotly.js inlined) with one chart per series.

    Args:
        history: :meth:`reports.store.Store.history` rows (any filter).
        verdicts: :meth:`reports.store.Store.verdicts` rows; those of shown series are marked.
        title: page title (escaped).
    """
    hist = annotate_history(history)
    series = list(dict.fromkeys(zip(hist["name"], hist["key"], strict=True)))
    rows = max(len(series), 1)
    fig = make_subplots(
        rows=rows,
        cols=1,
        subplot_titles=[_e(f"{n} · {k}") for n, k in series] or ["no runs recorded"],
        vertical_spacing=min(0.08, 0.5 / rows),
    )
    table_rows: list[str] = []
    for i, (name, key) in enumerate(series, start=1):
        part = hist[(hist["name"] == name) & (hist["key"] == key)]
        factor, unit = _scale(str(part["unit"].iloc[0]))
        for branch, g in part.groupby("branch", dropna=False, sort=True):
            hover = [
                _e(f"{c or '?'} · {b or '-'} · {t:%Y-%m-%d %H:%M} · {v:g} {u}")
                for c, b, t, v, u in zip(
                    g["commit_sha"],
                    g["branch"],
                    g["recorded_at"],
                    g["value"],
                    g["unit"],
                    strict=True,
                )
            ]
            fig.add_trace(
                go.Scatter(
                    x=g["recorded_at"],
                    y=g["value"] * factor,
                    mode="lines+markers",
                    name=_e(f"{name} {key} ({branch or 'no branch'})"),
                    text=hover,
                    hoverinfo="text",
                    showlegend=False,
                ),
                row=i,
                col=1,
            )
            for _, r in g[g["change_point"]].iterrows():
                fig.add_vline(
                    x=r["recorded_at"], line_dash="dash", line_color="#d62728", row=i, col=1
                )
                table_rows.append(
                    f"<tr><td>{_e(name)}</td><td>{_e(key)}</td><td>{_e(branch)}</td>"
                    f"<td>change point</td><td>{_e(r['commit_sha'])}</td>"
                    f"<td>{_e(r['recorded_at'])}</td></tr>"
                )
            breaks = g[g["segment"].diff().fillna(0) > 0]
            for _, r in breaks.iterrows():
                fig.add_vline(
                    x=r["recorded_at"], line_dash="dot", line_color="#7f7f7f", row=i, col=1
                )
                table_rows.append(
                    f"<tr><td>{_e(name)}</td><td>{_e(key)}</td><td>{_e(branch)}</td>"
                    f"<td>environment changed</td><td>{_e(r['commit_sha'])}</td>"
                    f"<td>{_e(r['recorded_at'])}</td></tr>"
                )
        vs = verdicts[(verdicts["name"] == name) & (verdicts["key"] == key)]
        for status, vg in vs.groupby("status", sort=True):
            symbol, colour = _VERDICT_STYLE.get(str(status), ("diamond", "#000000"))
            fig.add_trace(
                go.Scatter(
                    x=vg["created_at"],
                    y=vg["current"] * factor,
                    mode="markers",
                    marker={"symbol": symbol, "size": 12, "color": colour},
                    name=_e(f"gate {status}"),
                    hoverinfo="text",
                    showlegend=False,
                    text=[
                        _e(f"gate {status} · {c or '?'} · {why}")
                        for c, why in zip(vg["commit_sha"], vg["reason"], strict=True)
                    ],
                ),
                row=i,
                col=1,
            )
        fig.update_yaxes(title_text=_e(unit), row=i, col=1)
    fig.update_layout(height=max(320, 280 * rows), margin={"t": 60, "l": 70, "r": 20, "b": 40})
    plot = fig.to_html(full_html=False, include_plotlyjs=True, default_height=f"{280 * rows}px")
    events = (
        "<table><tr><th>benchmark</th><th>series</th><th>branch</th><th>event</th>"
        "<th>commit</th><th>at</th></tr>" + "".join(table_rows) + "</table>"
        if table_rows
        else "<p>No change point or environment change found.</p>"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        "<p>Dashed red lines: change points (ruptures PELT); dotted grey lines: environment "
        "changes; markers: gate verdicts (✕ fail, ▲ warn, ○ insufficient, ★ improved, ● pass)."
        "</p>"
        f"{events}{plot}</body></html>"
    )
