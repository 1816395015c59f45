"""The self-contained HTML report, rendered from the JSON summary only (docs/report.md).

``render_report(summary)`` returns the page; ``write_report(summary, path)`` writes it.  The
page holds, top-down: header (and a PASS/FAIL banner when a gate result is given), headline
cards, findings, step breakdown, top kernels, communication, occupancy, roofline, NVML
counters, ranks × steps heatmap, definitions.  Its data payload is embedded as
``<script type="application/json" id="gpuscope-data">`` (:mod:`reports.html_payload`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collectors.errors import UsageError
from reports import html_figures as figs
from reports.html_defs import DEFINITIONS
from reports.html_page import (
    Col,
    esc,
    fixed,
    integer,
    mib,
    ms,
    no_data,
    note,
    page,
    pct,
    script_json,
    section,
    short,
    table,
)
from reports.html_payload import build_payload
from reports.html_series import MAX_BREAKDOWN_RANKS, MAX_BREAKDOWN_STEPS, MAX_COUNTER_POINTS

PLOTLYJS_MODES = ("inline", "cdn")


def _header(p: Mapping[str, Any]) -> str:
    h = p["header"]
    tool = h.get("tool") or {}
    rows = [
        ("gpuscope", f"{tool.get('version', '?')} (summary schema {h.get('schema_version')})"),
        (
            "ranks",
            f"{h['ranks']}" + (f" (world size {h['world_size']})" if h.get("world_size") else ""),
        ),
        ("GPUs", "; ".join(f"{g['count']} × {g['name']}" for g in h["gpus"]) or "unknown"),
        ("hosts", ", ".join(h["hosts"]) or "unknown"),
        (
            "steps analysed",
            ", ".join(map(str, h["steps"]))
            if len(h["steps"]) <= 20
            else f"{h['steps'][0]} … {h['steps'][-1]} ({len(h['steps'])} steps)",
        ),
        ("trace format", ", ".join(h["source_formats"]) or "unknown"),
    ]
    if h.get("versions"):
        rows.append(("versions", ", ".join(f"{k} {v}" for k, v in h["versions"].items() if v)))
    if h.get("command"):
        rows.append(("command", h["command"]))
    if h.get("git_commit"):
        rows.append(("git commit", h["git_commit"]))
    src = ", ".join(h["sources"])
    if h["sources_total"] > len(h["sources"]):
        src += f" … (+{h['sources_total'] - len(h['sources'])} more)"
    rows.append(("sources", src or "–"))
    grid = "".join(f"<span>{esc(k)}</span><b>{esc(v)}</b>" for k, v in rows)
    body = f'<h1>gpuscope report</h1><div class="meta">{grid}</div>'
    g = p.get("gate")
    if g:
        status = str(g["status"]).lower()
        cls = status if status in ("pass", "fail", "warn", "insufficient") else "insufficient"
        word = {
            "pass": "PASS",
            "fail": "FAIL",
            "warn": "PASS with warnings",
            "insufficient": "INSUFFICIENT DATA",
        }.get(status, status.upper())
        items = "".join(f"<li>{esc(x.get('message') or x.get('key'))}</li>" for x in g["problems"])
        base = f" vs {g['baseline']}" if g.get("baseline") else ""
        body += (
            f'<div class="banner {cls}" id="gate-banner">'
            f"Gate {esc(g.get('name') or '')}{esc(base)}: "
            f"{esc(word)}{f'<ul>{items}</ul>' if items else ''}</div>"
        )
    return f'<header id="header">{body}</header>'


def _card(label: str, value: str | None, detail: str, empty: str) -> str:
    if value is None:
        return (
            f'<div class="card empty"><div class="label">{esc(label)}</div>'
            f'<div class="value">n/a</div><div class="detail">{esc(empty)}</div></div>'
        )
    return (
        f'<div class="card"><div class="label">{esc(label)}</div>'
        f'<div class="value">{esc(value)}</div><div class="detail">{esc(detail)}</div></div>'
    )


def _cards(p: Mapping[str, Any]) -> str:
    c = p["cards"]
    st, busy, comm, occ, thr, en = (
        c[k] for k in ("step_time", "gpu_busy", "comm", "occupancy", "throughput", "energy")
    )
    out = [
        _card(
            "step time (median)",
            st and f"{ms(st['median_ns'])} ms",
            st and f"p90 {ms(st['p90_ns'])} ms · {st['steps']} steps × {st['ranks']} ranks",
            "no ProfilerStep in the window",
        ),
        _card(
            "GPU busy",
            busy and f"{pct(busy['pct'])} %",
            busy and ("of step time" if busy["basis"] == "steps" else "of the GPU span"),
            "no GPU activity",
        ),
        _card(
            "comm overlap",
            comm and f"{pct(comm['overlap_pct'])} %",
            comm
            and (
                f"exposed {ms(comm['exposed_per_step_ns'])} ms/step"
                + (
                    f" ({pct(comm['exposed_share_pct'])} % of step time)"
                    if comm.get("exposed_share_pct") is not None
                    else ""
                )
            ),
            "no communication kernel",
        ),
        _card(
            "occupancy (time-weighted)",
            occ and f"{pct(occ['theoretical_pct'])} %",
            occ
            and (
                "theoretical; est. achieved "
                + (
                    f"{pct(occ['est_achieved_pct'])} %"
                    if occ["est_achieved_pct"] is not None
                    else "n/a"
                )
            ),
            "no launch configuration in the trace",
        ),
        _card(
            "achieved TFLOP/s",
            thr and f"{fixed(thr['tflops'])}",
            thr
            and (
                "per GPU, modelled ops; "
                + (
                    f"{pct(thr['pct_of_roofline'])} % of roofline"
                    if thr["pct_of_roofline"] is not None
                    else "roofline unknown"
                )
            ),
            "no modelled op (roofline)",
        ),
        _card(
            "energy / step",
            en and f"{fixed(en['energy_per_step_mj'] / 1000, 2)} J",
            en and f"all GPUs of {en['hosts']} node(s)",
            "no NVML energy data",
        ),
    ]
    return section("cards", "Headline", f'<div class="cards">{"".join(out)}</div>')


def _findings(p: Mapping[str, Any]) -> str:
    fs = p["findings"]
    if not fs:
        return section(
            "findings",
            "Findings",
            no_data("No rule fired: no threshold of docs/report.md §4 was crossed."),
        )
    items = "".join(
        f'<div class="finding" id="finding-{esc(f["id"])}"><h3>{i}. {esc(f["title"])}</h3>'
        f'<p><span class="k">evidence</span> {esc(f["evidence"])}</p>'
        f'<p><span class="k">threshold</span> {esc(f["threshold"])}</p>'
        f'<p><span class="k">try</span> {esc(f["suggestion"])}</p></div>'
        for i, f in enumerate(fs, start=1)
    )
    return section("findings", "Findings", items)


def _fig(frags: Mapping[str, str], div_id: str) -> str:
    return frags.get(div_id, "")


def _steps(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    s = p["steps"]
    if not s:
        return section(
            "steps",
            "Step breakdown",
            no_data("No ProfilerStep in the analysis window.") + _ranges(p),
        )
    body = _fig(frags, "fig-steps")
    if s["steps_shown"] < s["steps_total"] or s["ranks_shown"] < s["ranks_total"]:
        body += note(
            f"Showing {s['steps_shown']} of {s['steps_total']} steps and {s['ranks_shown']} of "
            f"{s['ranks_total']} ranks (evenly spaced, at most {MAX_BREAKDOWN_STEPS} steps and "
            f"{MAX_BREAKDOWN_RANKS} ranks); every step and rank is in the heatmap and summary.json."
        )
    return section("steps", "Step breakdown (per step and rank, ms)", body + _ranges(p))


RANGE_COLS = (
    Col("range", "name", short, numeric=False),
    Col("kind", "kind", str, numeric=False, wrap=False),
    Col("count", "count", integer),
    Col("total ms", "total_ns", ms),
    Col("max ms", "max_ns", ms),
    Col("ranks", "ranks", integer),
)


def _ranges(p: Mapping[str, Any]) -> str:
    r = p["ranges"]
    if not r:
        return note("No NVTX or user range in the traces.")
    body = "<h3>Annotated ranges (NVTX, user; all ranks)</h3>"
    body += f'<div class="scroll">{table("range-table", RANGE_COLS, r["rows"])}</div>'
    if r["names_total"] > len(r["rows"]):
        body += note(f"{len(r['rows'])} of {r['names_total']} range names shown.")
    return body


KERNEL_COLS = (
    Col("kernel", "name", short, numeric=False),
    Col("type", "type", str, numeric=False, wrap=False),
    Col("calls", "count", integer),
    Col("total ms", "total_ns", ms),
    Col("avg µs", "avg_ns", lambda v: fixed(v / 1e3 if v is not None else None)),
    Col("min µs", "min_ns", lambda v: fixed(v / 1e3 if v is not None else None)),
    Col("max µs", "max_ns", lambda v: fixed(v / 1e3 if v is not None else None)),
    Col("time %", "time_pct", pct),
    Col("ranks", "ranks", integer),
)


def _kernels(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    k = p["kernels"]
    if not k:
        return section("kernels", "Top kernels", no_data("No kernel in the analysis window."))
    body = f'<div class="scroll">{table("kernel-table", KERNEL_COLS, k["rows"])}</div>'
    if k["rest"]["names"]:
        body += note(
            f"{k['rest']['names']} more kernel names ({integer(k['rest']['count'])} calls, "
            f"{ms(k['rest']['total_ns'])} ms) are in summary.json; click a header to sort."
        )
    body += "<h3>Kernel types</h3>" + _fig(frags, "fig-kernel-types")
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


def _comm(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    if not p["collectives"] and not p["comm_ranks"]:
        return section("communication", "Communication", no_data("No communication kernel."))
    body = ""
    if p["collectives"]:
        body += "<h3>Collectives</h3>" + table("collective-table", COLL_COLS, p["collectives"])
    else:
        body += no_data("No collective metadata (communication kernels only).")
    body += '<h3>Per rank</h3><div class="scroll">'
    body += table("comm-rank-table", COMM_RANK_COLS, p["comm_ranks"]) + "</div>"
    body += _fig(frags, "fig-comm")
    if p["comm_skew_steps"]:
        body += "<h3>Straggler per step</h3>" + table(
            "straggler-table", STRAGGLER_COLS, p["comm_skew_steps"]
        )
    return section("communication", "Communication", body)


OCC_RANK_COLS = (
    Col("rank", "rank", integer),
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
    Col("theoretical %", "theoretical_pct", pct),
    Col("est. achieved %", "est_achieved_pct", pct),
    Col("limiters", "limiters", lambda v: ", ".join(v or []), numeric=False),
)


def _occupancy(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    o = p["occupancy"]
    if not o:
        return section(
            "occupancy", "Occupancy", no_data("No kernel with a launch configuration in the trace.")
        )
    body = '<div class="narrow scroll">' + table(
        "occupancy-rank-table", OCC_RANK_COLS, o["per_rank"]
    )
    body += "</div>" + _fig(frags, "fig-occupancy")
    body += (
        '<div class="scroll">' + table("occupancy-table", OCC_KERNEL_COLS, o["kernels"]) + "</div>"
    )
    return section("occupancy", "Occupancy (theoretical vs achieved, limiters)", body)


def _roofline(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    fig = _fig(frags, "fig-roofline")
    if not fig:
        return section("roofline", "Roofline", no_data("No modelled op with FLOP and DRAM bytes."))
    r = p["roofline"]
    extra = (
        note(f"{len(r['points'])} of {r['points_total']} op shapes shown.")
        if (r["points_total"] > len(r["points"]))
        else ""
    )
    return section("roofline", "Roofline (op shapes, all ranks)", fig + extra)


def _counters(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    c = p["counters"]
    fig = _fig(frags, "fig-counters")
    if not c or not fig:
        return section("counters", "GPU counters (NVML)", no_data("No NVML counter samples."))
    msg = []
    if c["decimated"]:
        msg.append(
            f"Series down-sampled (min-max buckets, ≤ 1000 points per series, "
            f"≤ {MAX_COUNTER_POINTS:,} in all); full resolution in RUN/counters/<host>.csv.gz "
            "or gpuscope export --perfetto."
        )
    if len(c["throttle"]) < c["throttle_total"]:
        msg.append(
            f"{len(c['throttle'])} of {c['throttle_total']} throttle bands drawn (the longest)."
        )
    if len(c["step_marks"]) < c["step_marks_total"]:
        msg.append(f"{len(c['step_marks'])} of {c['step_marks_total']} step marks drawn.")
    return section("counters", "GPU counters (NVML)", fig + "".join(note(m) for m in msg))


def _heatmap(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    h = p["heatmap"]
    if not h:
        return section("heatmap", "Ranks × steps", no_data("Single rank or no steps: no heatmap."))
    body = _fig(frags, "fig-heatmap")
    if h["binned"]:
        body += note("Columns are means over groups of consecutive steps.")
    return section("heatmap", "Ranks × steps (step duration, ms)", body)


def _definitions(ids: list[str]) -> str:
    items = "".join(
        f'<dt id="def-{esc(i)}">{esc(DEFINITIONS[i][0])}</dt><dd>{esc(DEFINITIONS[i][1])} '
        f'<span class="ref">({esc(DEFINITIONS[i][2])})</span></dd>'
        for i in ids
    )
    return section("definitions", "Definitions", f'<dl class="defs">{items}</dl>')


def shown_definitions(p: Mapping[str, Any]) -> list[str]:
    """Ids of :data:`DEFINITIONS` for the figures the page shows, in page order."""
    c = p["cards"]
    ids = [
        k
        for k, ck in (
            ("step_time", "step_time"),
            ("gpu_busy", "gpu_busy"),
            ("overlap", "comm"),
            ("occupancy", "occupancy"),
            ("throughput", "throughput"),
            ("energy", "energy"),
        )
        if c[ck]
    ]
    ids += ["findings"]
    ids += ["breakdown"] if p["steps"] else []
    ids += ["ranges"] if p["ranges"] else []
    ids += ["kernels", "kernel_types"] if p["kernels"] else []
    ids += ["collectives"] if p["collectives"] else []
    ids += ["comm_ranks"] if p["comm_ranks"] else []
    ids += ["occupancy_kernels"] if p["occupancy"] else []
    ids += ["roofline"] if p["roofline"] else []
    ids += ["counters"] if p["counters"] else []
    ids += ["heatmap"] if p["heatmap"] else []
    return ids


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
    p = build_payload(summary, gate)
    frags = figs.fragments(_figures(p), plotlyjs)
    body = "".join(
        [
            _header(p),
            _cards(p),
            _findings(p),
            _steps(p, frags),
            _kernels(p, frags),
            _comm(p, frags),
            _occupancy(p, frags),
            _roofline(p, frags),
            _counters(p, frags),
            _heatmap(p, frags),
            _definitions(shown_definitions(p)),
        ]
    )
    return page("gpuscope report", body, script_json(p))


def write_report(
    summary: Mapping[str, Any],
    path: str | Path,
    *,
    plotlyjs: str = "inline",
    gate: Mapping[str, Any] | None = None,
) -> Path:
    """Render the report and write it to *path* (atomically); returns the path.

    Raises:
        UsageError: an unknown *plotlyjs* mode, or *path* cannot be written.
    """
    text = render_report(summary, plotlyjs=plotlyjs, gate=gate)
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write the HTML report: {e.strerror or e}", path=p) from e
    return p
