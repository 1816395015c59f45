"""Rich tables for ``gpuscope analyze``, rendered from the JSON summary (the same numbers).

Kernel and step names come from the trace and are untrusted: they are passed to rich as
:class:`rich.text.Text`, never as markup.  Times are shown in ms (ns / 10⁶) or µs (ns / 10³).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.comm_console import print_comm_sections
from reports.critical_path_console import print_fix_first
from reports.efficiency_console import print_efficiency_sections
from reports.serving_console import print_serving_section
from reports.table_text import Fast
from reports.wait_console import print_wait_sections

TOP_KERNELS = 15
"""Kernel rows shown per rank (the JSON has them all)."""
DETAIL_RANKS = 4
"""Per-rank kernel and step tables are printed for at most this many ranks."""

RankRenderer = Callable[[Mapping[str, Any], Console], None]

RANK_RENDERERS: tuple[RankRenderer, ...] = (
    print_wait_sections,
    print_comm_sections,
    print_efficiency_sections,
    print_serving_section,
)
"""Later features' per-rank console tables, called as ``fn(rank_dict, console)`` after the
foundation's tables of each detailed rank (one line each)."""


_ms = fmt.ms
_us = fmt.us
_pct = fmt.pct


def _name(s: str, width: int = 70) -> Text:
    return fmt.name_text(s, width, overflow="ellipsis")


def breakdown_table(rank: Mapping[str, Any]) -> Table:
    """One rank's GPU time: span, idle / compute / non-compute, communication and overlap."""
    tp = rank.get("temporal") or {}
    ov = rank.get("overlap") or {}
    t = Table(
        title=f"Rank {rank['rank']}: GPU time (HTA view: the analysis window's GPU events)",
        title_justify="left",
    )
    t.add_column("metric")
    t.add_column("ms", justify="right")
    t.add_column("%", justify="right")
    t.add_row("span (first GPU start to last GPU end)", _ms(tp.get("span_ns")), "")
    t.add_row("idle (no GPU event running)", _ms(tp.get("idle_ns")), _pct(tp.get("idle_pct")))
    t.add_row("compute", _ms(tp.get("compute_ns")), _pct(tp.get("compute_pct")))
    t.add_row(
        "non-compute (only comm/memory/other)",
        _ms(tp.get("non_compute_ns")),
        _pct(tp.get("non_compute_pct")),
    )
    t.add_row("communication", _ms(ov.get("comm_ns")), "")
    t.add_row(
        "  overlapped by compute (% of comm)",
        _ms(ov.get("overlap_ns")),
        _pct(ov.get("overlap_pct")),
    )
    t.add_row("  exposed (no compute beside it)", _ms(ov.get("exposed_comm_ns")), "")
    return t


def ranks_table(ranks: list[Mapping[str, Any]]) -> Table:
    """One row per rank: span, idle / compute / non-compute %, overlap %, exposed comm."""
    t = Table(title="GPU time per rank (HTA view: the analysis window)", title_justify="left")
    for col in ("rank", "span ms", "idle %", "compute %", "non-compute %", "overlap %"):
        t.add_column(col, justify="right")
    t.add_column("exposed comm ms", justify="right")
    for r in ranks:
        tp = r.get("temporal") or {}
        ov = r.get("overlap") or {}
        t.add_row(
            str(r["rank"]),
            _ms(tp.get("span_ns")),
            _pct(tp.get("idle_pct")),
            _pct(tp.get("compute_pct")),
            _pct(tp.get("non_compute_pct")),
            _pct(ov.get("overlap_pct")),
            _ms(ov.get("exposed_comm_ns")),
        )
    return t


def kernel_table(
    rank: Mapping[str, Any], top: int = TOP_KERNELS, name_width: int = 70, wide: bool = True
) -> Table:
    """The rank's top kernels by total time; names cut to *name_width* characters.

    Narrow consoles (``wide=False``) get count, total and share only.
    """
    rows = rank.get("kernel_summary") or []
    title = f"Rank {rank['rank']}: top {min(top, len(rows))} of {len(rows)} kernels by total time"
    t = Table(title=title, title_justify="left")
    t.add_column("kernel", overflow="ellipsis", no_wrap=True, min_width=20)
    t.add_column("type", no_wrap=True)
    cols = ["count", "total ms", "avg µs", "median µs", "max µs", "% kernel time"]
    if not wide:
        cols = ["count", "total ms", "% kernel time"]
    for col in cols:
        t.add_column(col, justify="right", no_wrap=True)
    for k in rows[:top]:
        values = {
            "count": f"{k['count']:,}",
            "total ms": _ms(k["total_ns"]),
            "avg µs": _us(k["avg_ns"]),
            "median µs": _us(k["median_ns"]),
            "max µs": _us(k["max_ns"]),
            "% kernel time": _pct(k["time_pct"]),
        }
        t.add_row(_name(k["name"], name_width), Text(k["type"]), *(values[c] for c in cols))
    return t


def _behind(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def step_table(rank: Mapping[str, Any]) -> Table:
    """The rank's ProfilerSteps: host duration, and on the GPU clock its GPU duration, compute,
    exposed communication, idle and the GPU's lag (docs/metrics.md §7)."""
    steps = rank.get("steps") or []
    gpu_clock = all("gpu_duration_ns" in s for s in steps)
    view = "GPU figures on the GPU clock" if gpu_clock else "GPU time clipped to the step"
    t = Table(title=f"Rank {rank['rank']}: steps ({view})", title_justify="left")
    cols = ["step", "host ms", "GPU ms", "compute ms", "exposed comm ms", "idle ms"]
    if gpu_clock:
        cols += ["lag ms", "steps behind"]
    for col in cols:
        t.add_column(col, justify="right")
    for s in steps:
        row = [
            str(s["step"]),
            _ms(s["duration_ns"]),
            _ms(s.get("gpu_duration_ns", s["duration_ns"])),
            _ms(s["compute_ns"]),
            _ms(s["exposed_comm_ns"]),
            _ms(s["idle_ns"]),
        ]
        if gpu_clock:
            row += [_ms(s.get("launch_lag_ns")), _behind(s.get("steps_behind"))]
        t.add_row(*row)
    return t


def _window_line(rank: Mapping[str, Any]) -> Text:
    dev = rank.get("device") or {}
    w = rank.get("window") or {}
    steps = w.get("steps") or []
    if not steps:
        step_txt = "no ProfilerStep"
    elif len(steps) == 1:
        step_txt = f"ProfilerStep {steps[0]}"
    else:
        step_txt = f"ProfilerSteps {steps[0]}–{steps[-1]} ({len(steps)})"
    start, end = w.get("start_ns"), w.get("end_ns")
    length = _ms(end - start) if start is not None and end is not None else "–"
    line = Text(f"rank {rank['rank']}: ")
    line.append(str(dev.get("name") or "device unknown"))
    line.append(f"; launch window {length} ms, {step_txt}")
    return line


def print_summary(summary: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the analyses of a summary as rich tables."""
    console = console or Console()
    ranks = summary.get("ranks") or []
    if not ranks:
        console.print("no ranks to analyse", markup=False)
        return
    if summary.get("critical_path"):  # what to fix first, before everything else
        print_fix_first(summary["critical_path"], console)
    for r in ranks[:DETAIL_RANKS]:
        console.print(_window_line(r))
        for note in [*(r.get("notes") or []), *((r.get("integrity") or {}).get("notes") or [])]:
            console.print(f"rank {r['rank']}: note: {note}", markup=False)
    if len(ranks) > 1:
        console.print(Fast(ranks_table(ranks)))
    for r in ranks[:DETAIL_RANKS]:
        console.print(Fast(breakdown_table(r)))
        if r.get("kernel_summary"):
            wide = console.width >= 120
            name_width = max(20, console.width - (88 if wide else 50))
            console.print(Fast(kernel_table(r, name_width=name_width, wide=wide)))
        if r.get("steps"):
            console.print(Fast(step_table(r)))
        for render in RANK_RENDERERS:
            render(r, console)
    if len(ranks) > DETAIL_RANKS:
        console.print(
            f"(details of the other {len(ranks) - DETAIL_RANKS} ranks: see --json)",
            markup=False,
        )
