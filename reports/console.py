"""Rich tables for ``gpuscope analyze``, rendered from the JSON summary (the same numbers).

Kernel and step names come from the trace and are untrusted: they are passed to rich as
:class:`rich.text.Text`, never as markup.  Times are shown in ms (ns / 10⁶) or µs (ns / 10³).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

TOP_KERNELS = 15
"""Kernel rows shown per rank (the JSON has them all)."""
DETAIL_RANKS = 4
"""Per-rank kernel and step tables are printed for at most this many ranks."""


def _ms(ns: int | None) -> str:
    return "–" if ns is None else f"{ns / 1e6:,.3f}"


def _us(ns: int | None) -> str:
    return "–" if ns is None else f"{ns / 1e3:,.1f}"


def _pct(p: float | None) -> str:
    return "–" if p is None else f"{p:.2f}"


def _name(s: str, width: int = 70) -> Text:
    return Text(s if len(s) <= width else s[: width - 1] + "…", overflow="ellipsis")


def breakdown_table(ranks: list[Mapping[str, Any]]) -> Table:
    """One row per rank: GPU span, idle / compute / non-compute, communication overlap."""
    t = Table(title="GPU time per rank (window's GPU events)", title_justify="left")
    for col in (
        "rank",
        "span ms",
        "idle ms",
        "idle %",
        "compute ms",
        "compute %",
        "non-compute ms",
        "non-compute %",
        "comm ms",
        "overlap %",
        "exposed comm ms",
    ):
        t.add_column(col, justify="right")
    for r in ranks:
        tp = r.get("temporal") or {}
        ov = r.get("overlap") or {}
        t.add_row(
            str(r["rank"]),
            _ms(tp.get("span_ns")),
            _ms(tp.get("idle_ns")),
            _pct(tp.get("idle_pct")),
            _ms(tp.get("compute_ns")),
            _pct(tp.get("compute_pct")),
            _ms(tp.get("non_compute_ns")),
            _pct(tp.get("non_compute_pct")),
            _ms(ov.get("comm_ns")),
            _pct(ov.get("overlap_pct")),
            _ms(ov.get("exposed_comm_ns")),
        )
    return t


def kernel_table(rank: Mapping[str, Any], top: int = TOP_KERNELS) -> Table:
    """The rank's top kernels by total time."""
    rows = rank.get("kernel_summary") or []
    title = f"Rank {rank['rank']}: top {min(top, len(rows))} of {len(rows)} kernels by total time"
    t = Table(title=title, title_justify="left")
    t.add_column("kernel", overflow="ellipsis", max_width=72)
    t.add_column("type")
    for col in ("count", "total ms", "avg µs", "median µs", "max µs", "time %"):
        t.add_column(col, justify="right")
    for k in rows[:top]:
        t.add_row(
            _name(k["name"]),
            Text(k["type"]),
            f"{k['count']:,}",
            _ms(k["total_ns"]),
            _us(k["avg_ns"]),
            _us(k["median_ns"]),
            _us(k["max_ns"]),
            _pct(k["time_pct"]),
        )
    return t


def step_table(rank: Mapping[str, Any]) -> Table:
    """The rank's ProfilerSteps: duration, compute, exposed communication, idle."""
    t = Table(title=f"Rank {rank['rank']}: steps", title_justify="left")
    for col in ("step", "duration ms", "compute ms", "exposed comm ms", "idle ms"):
        t.add_column(col, justify="right")
    for s in rank.get("steps") or []:
        t.add_row(
            str(s["step"]),
            _ms(s["duration_ns"]),
            _ms(s["compute_ns"]),
            _ms(s["exposed_comm_ns"]),
            _ms(s["idle_ns"]),
        )
    return t


def _window_line(rank: Mapping[str, Any]) -> Text:
    dev = rank.get("device") or {}
    w = rank.get("window") or {}
    steps = w.get("steps") or []
    step_txt = f"steps {steps[0]}–{steps[-1]}" if len(steps) > 1 else f"steps {steps}"
    line = Text(f"rank {rank['rank']}: ")
    line.append(str(dev.get("name") or "device unknown"))
    line.append(f"; window {_ms(w.get('start_ns'))}–{_ms(w.get('end_ns'))} ms, {step_txt}")
    return line


def print_summary(summary: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the analyses of a summary as rich tables."""
    console = console or Console()
    ranks = summary.get("ranks") or []
    if not ranks:
        console.print("no ranks to analyse", markup=False)
        return
    for r in ranks:
        console.print(_window_line(r))
    console.print(breakdown_table(ranks))
    for r in ranks[:DETAIL_RANKS]:
        if r.get("kernel_summary"):
            console.print(kernel_table(r))
        if r.get("steps"):
            console.print(step_table(r))
    if len(ranks) > DETAIL_RANKS:
        console.print(
            f"(kernel and step tables of the other {len(ranks) - DETAIL_RANKS} ranks: see --json)",
            markup=False,
        )
