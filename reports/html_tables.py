"""HTML of the report's table sections: top kernels, communication, occupancy, roofline.

Column specs (:class:`reports.html_page.Col`) say which payload key each column shows and how;
the tables sort on a header click (reports/html_page.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.html_page import (
    Col,
    fixed,
    integer,
    mib,
    ms,
    no_data,
    note,
    pct,
    section,
    short,
    table,
    us,
)

KERNEL_COLS = (
    Col("kernel", "name", short, numeric=False),
    Col("type", "type", str, numeric=False, wrap=False),
    Col("calls", "count", integer),
    Col("total ms", "total_ns", ms),
    Col("avg µs", "avg_ns", us),
    Col("min µs", "min_ns", us),
    Col("max µs", "max_ns", us),
    Col("% kernel time", "time_pct", pct),
    Col("ranks", "ranks", integer),
)


def kernels_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    k = p["kernels"]
    if not k:
        return section("kernels", "Top kernels", no_data("No kernel in the analysis window."))
    body = f'<div class="scroll">{table("kernel-table", KERNEL_COLS, k["rows"])}</div>'
    if k["rest"]["names"]:
        body += note(
            f"{k['rest']['names']} more kernel names ({integer(k['rest']['count'])} calls, "
            f"{ms(k['rest']['total_ns'])} ms) are in summary.json; click a header to sort."
        )
    body += "<h3>Kernel types</h3>" + frags.get("fig-kernel-types", "")
    return section("kernels", "Top kernels (all ranks)", body)


COLL_COLS = (
    Col("collective", "collective", str, numeric=False, wrap=False),
    Col("size", "size_bucket", str, numeric=False, wrap=False),
    Col("calls", "count", integer),
    Col("MiB", "bytes", mib),
    Col("time ms", "time_ns", ms),
    Col("median busbw GB/s", "median_busbw_gbps", fixed),
    Col("max busbw GB/s", "max_busbw_gbps", fixed),
    Col("% link peak", "median_busbw_link_pct", pct),
    Col("ranks", "ranks", integer),
)
COMM_RANK_COLS = (
    Col("rank", "rank", integer),
    Col("comm ms", "comm_ns", ms),
    Col("exposed ms", "exposed_ns", ms),
    Col("overlap %", "overlap_pct", pct),
    Col("wait ms", "wait_ns", ms),
    Col("transfer ms", "transfer_ns", ms),
    Col("arrived last", "late_count", integer),
)
STRAGGLER_COLS = (
    Col("step", "step", integer),
    Col("collectives", "collectives", integer),
    Col("skew ms", "arrival_skew_ns", ms),
    Col("transfer ms", "transfer_ns", ms),
    Col("straggler rank", "straggler", integer),
    Col("wait caused ms", "straggler_caused_wait_ns", ms),
)


def comm_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    if not p["collectives"] and not p["comm_ranks"]:
        return section("communication", "Communication", no_data("No communication kernel."))
    body = ""
    if p["collectives"]:
        body += "<h3>Collectives</h3>" + table("collective-table", COLL_COLS, p["collectives"])
    else:
        body += no_data("No collective metadata (communication kernels only).")
    body += '<h3>Per rank</h3><div class="scroll">'
    body += table("comm-rank-table", COMM_RANK_COLS, p["comm_ranks"]) + "</div>"
    body += frags.get("fig-comm", "")
    if p["comm_skew_steps"]:
        body += "<h3>Straggler per step</h3>" + table(
            "straggler-table", STRAGGLER_COLS, p["comm_skew_steps"]
        )
    return section("communication", "Communication", body)


UPPER_BOUND_TITLE = (
    "≤: an upper bound — a limit could not be applied (AMD traces record no registers or LDS; "
    "docs/efficiency.md §1b)"
)
OCC_RANK_COLS = (
    Col("rank", "rank", integer),
    Col("", "bound", str, numeric=False, wrap=False, title=UPPER_BOUND_TITLE),
    Col("theoretical %", "theoretical_pct", pct),
    Col("est. achieved %", "est_achieved_pct", pct),
    Col("coverage %", "coverage", lambda v: pct(v * 100 if v is not None else None)),
)
OCC_KERNEL_COLS = (
    Col("kernel", "name", short, numeric=False),
    Col("block", "block", str, numeric=False, wrap=False),
    Col("regs", "registers", integer),
    Col("smem B", "smem_bytes", integer),
    Col("calls", "calls", integer),
    Col("time ms", "time_ns", ms),
    Col("", "bound", str, numeric=False, wrap=False, title=UPPER_BOUND_TITLE),
    Col("theoretical %", "theoretical_pct", pct),
    Col("est. achieved %", "est_achieved_pct", pct),
    Col("limiters", "limiters", lambda v: ", ".join(v or []), numeric=False),
)


def occupancy_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    o = p["occupancy"]
    if not o:
        return section(
            "occupancy", "Occupancy", no_data("No kernel with a launch configuration in the trace.")
        )
    body = '<div class="narrow scroll">' + table(
        "occupancy-rank-table", OCC_RANK_COLS, o["per_rank"]
    )
    body += "</div>" + frags.get("fig-occupancy", "")
    body += (
        '<div class="scroll">' + table("occupancy-table", OCC_KERNEL_COLS, o["kernels"]) + "</div>"
    )
    return section("occupancy", "Occupancy (theoretical vs achieved, limiters)", body)


def roofline_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    fig = frags.get("fig-roofline", "")
    if not fig:
        return section("roofline", "Roofline", no_data("No modelled op with FLOP and DRAM bytes."))
    r = p["roofline"]
    extra = (
        note(f"{len(r['points'])} of {r['points_total']} op shapes shown.")
        if (r["points_total"] > len(r["points"]))
        else ""
    )
    return section("roofline", "Roofline (op shapes, all ranks)", fig + extra)
