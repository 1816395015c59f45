"""Plotly figures of the report, built from the report payload (never from a trace).

Each builder returns a ``plotly.graph_objects.Figure`` or None when there is nothing to draw.
Trace strings placed in figure text (axis labels, hover text) are HTML-escaped first, because
plotly interprets a subset of HTML in text.  :func:`fragments` turns the figures into HTML
``<div>`` fragments with stable ids; plotly.js goes with the first fragment only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from reports.html_page import esc, short

PARTS = (
    ("compute_ns", "compute", "#3b82c4"),
    ("exposed_comm_ns", "exposed comm", "#e07b39"),
    ("memory_other_ns", "memory / other", "#8e6bbf"),
    ("idle_ns", "idle", "#c9ced8"),
)

COUNTER_GROUPS: tuple[tuple[str, str, tuple[str, ...], float], ...] = (
    ("power", "power (W)", ("power_instant_mw", "power_usage_mw"), 1e-3),
    ("clock", "clock (MHz)", ("sm_clock_mhz", "mem_clock_mhz"), 1.0),
    (
        "util",
        "utilisation (%)",
        (
            "gpu_util_pct",
            "mem_util_pct",
            "gpm_sm_util_pct",
            "gpm_sm_occupancy_pct",
            "gpm_tensor_active_pct",
            "gpm_dram_bw_util_pct",
        ),
        1.0,
    ),
    ("temp", "temperature (°C)", ("gpu_temp_c", "memory_temp_c"), 1.0),
    ("mem", "memory used (GiB)", ("mem_used_bytes",), 1 / 2**30),
    ("pcie", "PCIe (MB/s)", ("pcie_tx_kbps", "pcie_rx_kbps"), 1e-3),
)
"""(group, axis title, fields, scale to the axis unit) of the counter subplots."""

CONFIG = {"displaylogo": False, "responsive": True}


def _layout(fig: go.Figure, height: int, **kw: Any) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        legend={"orientation": "h", "y": 1.08, "x": 0},
        font={"size": 12},
        **kw,
    )
    return fig


def steps_figure(steps: Mapping[str, Any] | None) -> go.Figure | None:
    """Stacked bars per (step, rank): compute / exposed comm / memory-other / idle, in ms, of
    the step on the GPU clock (docs/metrics.md §7)."""
    if not steps or not steps.get("rows"):
        return None
    rows = steps["rows"]
    x = [[f"step {r['step']}" for r in rows], [f"r{r['rank']}" for r in rows]]
    fig = go.Figure()
    for key, label, color in PARTS:
        fig.add_bar(
            x=x,
            y=[r[key] / 1e6 for r in rows],
            name=label,
            marker_color=color,
            hovertemplate=f"{label}: %{{y:.3f}} ms<extra>%{{x}}</extra>",
        )
    return _layout(fig, 380, barmode="stack", yaxis_title="ms (GPU clock)", bargap=0.15)


def kernel_types_figure(kernels: Mapping[str, Any] | None) -> go.Figure | None:
    """Total kernel time by kernel type (ms)."""
    if not kernels or not kernels.get("types"):
        return None
    types = kernels["types"]
    fig = go.Figure(
        go.Bar(
            x=[t["total_ns"] / 1e6 for t in types],
            y=[esc(t["type"]) for t in types],
            orientation="h",
            marker_color="#3b82c4",
            hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
        )
    )
    return _layout(
        fig, 120 + 30 * len(types), xaxis_title="ms (all ranks)", yaxis={"autorange": "reversed"}
    )


def comm_figure(comm_ranks: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """Per rank: exposed communication and time waiting for late ranks (ms)."""
    if not comm_ranks:
        return None
    x = [f"rank {r['rank']}" for r in comm_ranks]
    fig = go.Figure()
    fig.add_bar(
        x=x,
        y=[(r.get("exposed_ns") or 0) / 1e6 for r in comm_ranks],
        name="exposed comm",
        marker_color="#e07b39",
    )
    if any(r.get("wait_ns") is not None for r in comm_ranks):
        fig.add_bar(
            x=x,
            y=[(r.get("wait_ns") or 0) / 1e6 for r in comm_ranks],
            name="waiting for late ranks",
            marker_color="#c53030",
        )
    return _layout(fig, 320, barmode="group", yaxis_title="ms")


def occupancy_figure(occ: Mapping[str, Any] | None, top: int = 10) -> go.Figure | None:
    """Theoretical vs estimated achieved occupancy of the hottest kernels."""
    if not occ or not occ.get("kernels"):
        return None
    ks = occ["kernels"][:top]
    labels = [f"{i + 1}. {esc(short(k['name'], 70))}" for i, k in enumerate(ks)]
    fig = go.Figure()
    fig.add_bar(
        y=labels,
        x=[k.get("theoretical_pct") for k in ks],
        orientation="h",
        name="theoretical",
        marker_color="#3b82c4",
    )
    if any(k.get("est_achieved_pct") is not None for k in ks):
        fig.add_bar(
            y=labels,
            x=[k.get("est_achieved_pct") for k in ks],
            orientation="h",
            name="est. achieved",
            marker_color="#38a169",
        )
    return _layout(
        fig,
        140 + 34 * len(ks),
        barmode="group",
        xaxis_title="occupancy (%)",
        xaxis_range=[0, 100],
        yaxis={"autorange": "reversed", "automargin": True},
    )


def _ceilings(ceil: Mapping[str, Any] | None, xs: Sequence[float]) -> list[go.Scatter]:
    if not ceil or not xs:
        return []
    bw = (ceil.get("bytes_per_s") or {}).get("dram")
    flops = ceil.get("flops_per_s") or {}
    if not bw:
        return []
    lo, hi = min(xs) / 10, max(xs) * 10
    for peak in flops.values():
        if peak:
            lo, hi = min(lo, peak / bw / 10), max(hi, peak / bw * 10)
    out = []
    for name, peak in sorted(flops.items(), key=lambda kv: -(kv[1] or 0)):
        if not peak:
            continue
        ridge = peak / bw
        out.append(
            go.Scatter(
                x=[lo, ridge, hi],
                y=[lo * bw, peak, peak],
                mode="lines",
                name=f"{esc(name)} roof",
                line={"width": 1.5, "dash": "dot"},
                hoverinfo="skip",
            )
        )
    return out


def roofline_figure(roof: Mapping[str, Any] | None) -> go.Figure | None:
    """Log-log roofline: op points sized by time, under the device's roofs."""
    if not roof:
        return None
    pts = [p for p in roof.get("points") or [] if p.get("intensity") and p.get("flops_per_s")]
    if not pts:
        return None
    tmax = max(p["time_ns"] for p in pts)
    fig = go.Figure()
    for line in _ceilings(roof.get("ceilings"), [p["intensity"] for p in pts]):
        fig.add_trace(line)
    fig.add_trace(
        go.Scatter(
            x=[p["intensity"] for p in pts],
            y=[p["flops_per_s"] for p in pts],
            mode="markers",
            name="ops",
            marker={
                "size": [8 + 30 * math.sqrt(p["time_ns"] / tmax) for p in pts],
                "color": "#3b82c4",
                "opacity": 0.7,
                "line": {"width": 1, "color": "#fff"},
            },
            text=[esc(f"{short(p['key'], 80)} ({p.get('precision')})") for p in pts],
            customdata=[p["time_ns"] / 1e6 for p in pts],
            hovertemplate="%{text}<br>%{x:.3g} FLOP/B, %{y:.3g} FLOP/s, %{customdata:.3f} ms"
            "<extra></extra>",
        )
    )
    return _layout(
        fig,
        420,
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP / DRAM byte)"},
        yaxis={"type": "log", "title": "FLOP/s"},
    )


def counters_figure(counters: Mapping[str, Any] | None) -> go.Figure | None:
    """NVML counters over time, one subplot per unit, step marks and throttle bands.

    Drawn values are rounded (x to the µs, y to 5 significant digits); the payload keeps them
    as the summary has them."""
    if not counters or not counters.get("series"):
        return None
    groups = [g for g in COUNTER_GROUPS if any(s["field"] in g[2] for s in counters["series"])]
    if not groups:
        return None
    fig = make_subplots(
        rows=len(groups),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        subplot_titles=[g[1] for g in groups],
    )
    for i, (_, _, fields, scale) in enumerate(groups, start=1):
        for s in counters["series"]:
            if s["field"] not in fields:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[round(t / 1e9, 6) for t in s["t_ns"]],
                    y=[float(f"{v * scale:.5g}") for v in s["value"]],
                    mode="lines",
                    line={"width": 1},
                    name=esc(f"{s['host']} gpu{s['device']} {s['field']}"),
                ),
                row=i,
                col=1,
            )
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": m["t_ns"] / 1e9,
            "x1": m["t_ns"] / 1e9,
            "y0": 0,
            "y1": 1,
            "line": {"width": 1, "dash": "dash", "color": "#9aa3b2"},
        }
        for m in counters.get("step_marks") or []
    ]
    shapes += [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": b["start_ns"] / 1e9,
            "x1": max(b["end_ns"], b["start_ns"] + 1) / 1e9,
            "y0": 0,
            "y1": 1,
            "fillcolor": "rgba(197,48,48,0.15)",
            "line": {"width": 0},
            "layer": "below",
        }
        for b in counters.get("throttle") or []
    ]
    fig = _layout(fig, 170 * len(groups) + 120, shapes=shapes, showlegend=True)
    fig.update_layout(
        legend={"orientation": "h", "y": -0.08, "yanchor": "top"}, margin={"t": 40, "b": 110}
    )
    fig.update_xaxes(title_text="s since first sample", row=len(groups), col=1)
    return fig


def heatmap_figure(hm: Mapping[str, Any] | None) -> go.Figure | None:
    """Step duration (ms) per rank and step."""
    if not hm:
        return None
    z = [[None if v is None else v / 1e6 for v in row] for row in hm["duration_ns"]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"step {c}" for c in hm["columns"]],
            y=[f"rank {r}" for r in hm["ranks"]],
            colorscale="Viridis",
            colorbar={"title": {"text": "ms"}},
            hovertemplate="%{y}, %{x}: %{z:.3f} ms<extra></extra>",
        )
    )
    return _layout(fig, max(260, 60 + 22 * len(hm["ranks"])), yaxis={"autorange": "reversed"})


def fragments(figures: Sequence[tuple[str, go.Figure]], plotlyjs: str = "inline") -> dict[str, str]:
    """``{div_id: html}`` in the given (document) order; plotly.js travels with the first."""
    out: dict[str, str] = {}
    for i, (div_id, fig) in enumerate(figures):
        include: bool | str = False
        if i == 0:
            include = True if plotlyjs == "inline" else "cdn"
        out[div_id] = pio.to_html(
            fig, full_html=False, include_plotlyjs=include, div_id=div_id, config=CONFIG
        )
    return out
