"""HTML of the report's sections that are not tables: header and gate banner, headline cards,
findings, step breakdown (with the annotated ranges), counters, heatmap, definitions.

Each function takes the report payload (and the figure fragments) and returns one
``<section>``; every payload string goes through :func:`reports.html_page.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.html_defs import DEFINITIONS
from reports.html_page import (
    Col,
    esc,
    fixed,
    integer,
    ms,
    no_data,
    note,
    pct,
    section,
    short,
    table,
)
from reports.html_series import MAX_BREAKDOWN_RANKS, MAX_BREAKDOWN_STEPS, MAX_COUNTER_POINTS


def header_section(p: Mapping[str, Any]) -> str:
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


def _share(x: float | None) -> str:
    return "?" if x is None else f"{pct(100 * x)} %"


def _busy_detail(busy: Mapping[str, Any]) -> str:
    if busy["basis"] == "steps":
        return f"of step time ({busy.get('view') or 'GPU clock'})"
    return f"of the GPU span ({busy.get('view') or 'HTA window'})"


def _comm_detail(comm: Mapping[str, Any]) -> str:
    out = f"overlap: {comm.get('overlap_view') or 'HTA window'}"
    if comm.get("exposed_per_step_ns") is not None:
        out += f"; exposed {ms(comm['exposed_per_step_ns'])} ms/step"
        if comm.get("exposed_share_pct") is not None:
            out += f" ({pct(comm['exposed_share_pct'])} % of step time"
            out += f", {comm.get('step_view') or 'GPU clock'})"
    return out


def _occ_detail(occ: Mapping[str, Any]) -> str:
    est = occ["est_achieved_pct"]
    out = "theoretical; est. achieved " + (f"{pct(est)} %" if est is not None else "n/a")
    out += f"; covers {_share(occ.get('kernel_time_share'))} of kernel time"
    if occ.get("upper_bound"):
        out += "; upper bound (registers/LDS not recorded)"
    return out


def _thr_detail(thr: Mapping[str, Any]) -> str:
    roof = thr["pct_of_roofline"]
    out = "per GPU, modelled ops; " + (
        f"{pct(roof)} % of roofline" if roof is not None else "roofline unknown"
    )
    out += f"; covers {_share(thr.get('gpu_time_share'))} of GPU time"
    out += f", {_share(thr.get('exact_share'))} of it exact"
    if roof is not None and thr.get("roofline_gpu_time_share") is not None:
        out += f"; roofline covers {_share(thr['roofline_gpu_time_share'])} of GPU time"
    return out


def _lag_detail(lag: Mapping[str, Any]) -> str:
    behind = lag["median_steps_behind"]
    most = lag["max_steps_behind"]
    out = f"median launch→start, {lag['steps']} step(s)"
    if behind is not None:
        out = f"GPU {fixed(behind, 2)} steps behind the CPU (max {fixed(most, 2)}); " + out
    return out


def cards_section(p: Mapping[str, Any]) -> str:
    c = p["cards"]
    st, busy, comm, occ, thr, en = (
        c[k] for k in ("step_time", "gpu_busy", "comm", "occupancy", "throughput", "energy")
    )
    lag = c.get("lag")
    out = [
        _card(
            "step time (median)",
            st and f"{ms(st['median_ns'])} ms",
            st
            and f"p90 {ms(st['p90_ns'])} ms · {st['steps']} steps × {st['ranks']} ranks "
            "(ProfilerStep ranges)",
            "no ProfilerStep in the window",
        ),
        _card(
            "GPU busy",
            busy and f"{pct(busy['pct'])} %",
            busy and _busy_detail(busy),
            "no GPU activity",
        ),
        _card(
            "comm overlap",
            comm and f"{pct(comm['overlap_pct'])} %",
            comm and _comm_detail(comm),
            "no communication kernel",
        ),
        _card(
            "occupancy (time-weighted)",
            occ and f"{'≤ ' if occ.get('upper_bound') else ''}{pct(occ['theoretical_pct'])} %",
            occ and _occ_detail(occ),
            "no launch configuration in the trace",
        ),
        _card(
            "achieved TFLOP/s",
            thr and f"{fixed(thr['tflops'])}",
            thr and _thr_detail(thr),
            "no modelled op (roofline)",
        ),
        _card(
            "GPU lag",
            lag and f"{ms(lag['median_launch_lag_ns'])} ms",
            lag and _lag_detail(lag),
            "no GPU work linked to a launch in a step",
        ),
        _card(
            "energy / step",
            en and f"{fixed(en['energy_per_step_mj'] / 1000, 2)} J",
            en and f"all GPUs of {en['hosts']} node(s)",
            "no NVML energy data",
        ),
    ]
    body = f'<div class="cards">{"".join(out)}</div>' + integrity_notes(p)
    return section("cards", "Headline", body)


def integrity_notes(p: Mapping[str, Any]) -> str:
    """The ranks' integrity notes (docs/metrics.md §10) under the cards, one line each."""
    rows = p.get("integrity") or []
    if not rows:
        return ""
    items = "".join(f"<li>rank {esc(r['rank'])}: {esc(n)}</li>" for r in rows for n in r["notes"])
    return f'<div class="integrity" id="integrity-notes"><h3>Trace notes</h3><ul>{items}</ul></div>'


def findings_section(p: Mapping[str, Any]) -> str:
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


def steps_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
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
    title = "Step breakdown (per step and rank, ms, steps on the GPU clock)"
    return section("steps", title, body + _ranges(p))


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


def counters_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
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


def heatmap_section(p: Mapping[str, Any], frags: Mapping[str, str]) -> str:
    h = p["heatmap"]
    if not h:
        return section("heatmap", "Ranks × steps", no_data("Single rank or no steps: no heatmap."))
    body = _fig(frags, "fig-heatmap")
    if h["binned"]:
        body += note("Columns are means over groups of consecutive steps.")
    return section("heatmap", "Ranks × steps (step duration, ms)", body)


def definitions_section(ids: list[str]) -> str:
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
            ("lag", "lag"),
            ("energy", "energy"),
        )
        if c.get(ck)
    ]
    ids += ["integrity"] if p.get("integrity") else []
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
