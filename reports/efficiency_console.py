"""Console output of kernel efficiency (definitions of every number: docs/efficiency.md).

* :func:`print_efficiency_sections`: rich tables of the ``occupancy`` and ``roofline`` summary
  sections (one rank each), for ``gpuscope analyze``;
* :func:`occupancy_lines` / :func:`occupancy_json`: ``gpuscope occupancy``;
* :func:`gpu_peak_lines`: ``gpuscope roofline --list-gpus``;
* :func:`ncu_roofline_lines`: ``gpuscope roofline FILE``.

Kernel names are untrusted and reach rich as :class:`rich.text.Text`, never as markup; the plain
text lines are echoed as they are.

Rendered from the JSON summary (the numbers of ``--json``, defined in docs/efficiency.md).
Kernel names are untrusted and reach rich as :class:`rich.text.Text`, never as markup.  Every
headline says the share of GPU time it covers: occupancy the kernel time with a launch
configuration, the roofline the GPU time of the modelled ops (and, when the section carries
the analyzer's ``coverage``, how much of it is exact and how much enters achieved TFLOP/s).
A point above its roof shows as a model error, without achieved figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.table_text import Fast

TOP = 5


def _pct(x: float | None) -> str:
    return fmt.pct(x, 1)


def _share(x: Any) -> str:
    return _pct(None if x is None else 100 * x)


def _name(s: Any, width: int = 60) -> Text:
    return fmt.name_text(s, width)


def _coverage_line(rank: Any, ops: Mapping[str, Any]) -> str:
    """What the roofline covers, as shares of the rank's GPU time."""
    cov = ops.get("coverage") or {}
    parts = [f"op models cover {_share(ops.get('modelled_gpu_time_share'))} % of GPU time"]
    if cov:
        parts.append(f"{_share(cov.get('exact_share'))} % exact")
        tflops = cov.get("achieved_flops_per_s")
        if tflops is not None:
            parts.append(
                f"achieved {tflops / 1e12:.2f} TFLOP/s over {_share(cov.get('achieved_share'))} "
                f"% of GPU time ({_share(cov.get('achieved_exact_share'))} % exact)"
            )
        if cov.get("pct_of_roofline") is not None:
            parts.append(
                f"{_pct(cov.get('pct_of_roofline'))} % of roofline over "
                f"{_share(cov.get('roofline_share'))} %"
            )
        if cov.get("model_errors"):
            parts.append(
                f"{cov['model_errors']} point(s) above their roof "
                f"({_share(cov.get('model_error_share'))} %) left out"
            )
    return f"Rank {rank}: " + "; ".join(parts)


def print_efficiency_sections(rank: Mapping[str, Any], console: Console) -> None:
    """Occupancy flags and the top roofline points of one rank, when the sections exist."""
    occ = rank.get("occupancy")
    if occ and occ.get("kernels_with_config"):
        bound = "≤ " if occ.get("upper_bound") else ""  # AMD: registers/LDS not recorded
        console.print(
            f"Rank {rank['rank']}: occupancy ({occ.get('arch') or 'unknown arch'}): "
            f"time-weighted theoretical {bound}{_pct(occ.get('time_weighted_theoretical_pct'))} %, "
            f"CUPTI estimate {_pct(occ.get('time_weighted_est_achieved_pct'))} %, "
            f"over {_share(occ.get('coverage'))} % of kernel time",
            markup=False,
        )
        for note in occ.get("notes") or []:
            console.print(Text(f"  note: {note}"))
        flags = occ.get("flags") or []
        if flags:
            t = Table(title=f"Rank {rank['rank']}: hot kernels at low theoretical occupancy")
            for col in ("kernel", "time %", "occupancy %", "limiter"):
                t.add_column(col, justify="right" if col in ("time %", "occupancy %") else "left")
            for f in flags[:TOP]:
                t.add_row(
                    _name(f.get("name")),
                    _pct(100 * f["time_share"] if f.get("time_share") is not None else None),
                    _pct(f.get("theoretical_pct")),
                    Text(", ".join(f.get("limiters") or [])),
                )
            console.print(Fast(t))
            if flags[0].get("suggestion"):
                console.print(Text(f"  try (top kernel): {flags[0]['suggestion']}"))
    roof = rank.get("roofline")
    ops = (roof or {}).get("ops") or {}
    points = ops.get("points") or []
    if points:
        console.print(_coverage_line(rank["rank"], ops), markup=False)
        t = Table(title=f"Rank {rank['rank']}: roofline of the top ops (from op shapes)")
        cols = ("op", "model", "bound", "TFLOP/s", "DRAM TB/s", "% of attainable", "% GPU time")
        for col in cols:
            t.add_column(col, justify="left" if col in ("op", "model", "bound") else "right")
        for p in points[:TOP]:
            tflops = p.get("flops_per_s_total")
            tbps = (p.get("bytes_per_s") or {}).get("dram")
            error = bool(p.get("model_error"))
            exact = p.get("exact")
            t.add_row(
                _name(p.get("name")),
                Text("–" if exact is None else ("exact" if exact else "estimate")),
                Text("model error" if error else str(p.get("bound") or "–")),
                "–" if tflops is None or error else f"{tflops / 1e12:.2f}",
                "–" if tbps is None or error else f"{tbps / 1e12:.3f}",
                "above roof" if error else _pct(p.get("pct_of_attainable")),
                _share(p.get("time_share")),
            )
        console.print(Fast(t))
        missing = ((roof or {}).get("ops") or {}).get("gpu_peaks_missing")
        if missing:
            console.print(Text(f"  no roofline ceilings: {missing}"))
        notes = [p for p in points[:TOP] if p.get("exact") is False and p.get("model_note")]
        for p in notes:
            console.print(Text(f"  estimate: {p.get('name')}: {p['model_note']}"))


# --- gpuscope occupancy / roofline ------------------------------------------------------------
def _fmt(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x / scale:,.{digits}f}"


def occupancy_json(r: Any, wi: Any) -> dict[str, Any]:
    """``gpuscope occupancy --json``: the result (:class:`analyzers.occupancy`) and its what-if
    (*wi*: suggestions and curves)."""
    out: dict[str, Any] = r.to_dict()
    out["what_if"] = {
        "suggestions": [
            {
                "change": s.change,
                "from": s.current,
                "to": s.to,
                "occupancy_pct": s.occupancy_pct,
                "best": s.best,
                "best_occupancy_pct": s.best_occupancy_pct,
            }
            for s in wi.suggestions
        ],
        "curves": {
            c.varied: {"values": list(c.values), "occupancy_pct": list(c.occupancy_pct)}
            for c in wi.curves
        },
    }
    return out


def occupancy_lines(
    r: Any, wi: Any, *, threads: int, regs: int, smem: int, dyn_smem: int, unlimited: int
) -> list[str]:
    """``gpuscope occupancy``: the launch, its limits, occupancy and what would raise it."""

    def lim_text(v: int) -> str:
        return "none" if v == unlimited else str(v)

    limits = ", ".join(f"{k.replace('_', ' ')} {lim_text(v)}" for k, v in r.limits().items())
    lines = [
        f"{r.arch}: {threads} threads/block, {regs} registers/thread, "
        f"{smem} B static + {dyn_smem} B dynamic shared memory" + (" (opt-in)" if r.optin else ""),
        f"active blocks/SM  {r.active_blocks}   (limited by {', '.join(r.limiters)})",
        f"active warps/SM   {r.active_warps} of {r.max_warps}",
        f"occupancy         {r.occupancy_pct:.2f} %",
        f"limits (blocks/SM): {limits}",
        f"allocated per block: {r.alloc_regs_per_block} registers, "
        f"{r.alloc_smem_per_block} B shared memory (SM shared memory {r.smem_per_sm_config} B)",
    ]
    if wi.suggestions:
        lines.append("to raise occupancy:")
        lines += [f"  {s.text()}" for s in wi.suggestions]
    else:
        lines.append("no change of block size, registers or shared memory raises occupancy")
    return lines


def _columns(head: tuple[str, ...] | list[str], rows: list[Any]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [head, *rows]
    ]


def gpu_peak_lines(table: Any, precisions: tuple[str, ...]) -> list[str]:
    """``gpuscope roofline --list-gpus``: the :class:`analyzers.gpu_peaks.PeakTable`."""
    keys = [f"{p}_tflops" for p in precisions] + ["mem_bw_gbs"]
    head = ["GPU", *[k.replace("_tflops", "").replace("_gbs", " GB/s") for k in keys]]
    rows = []
    for g in table.gpus:
        cells = [g.name]
        for k in keys:
            v = g.values.get(k)
            cells.append("-" if v is None else f"{v:g}" + (" [u]" if g.is_unverified(k) else ""))
        rows.append(cells)
    return [*_columns(head, rows), "TFLOP/s (dense) and GB/s; [u] = unverified (reference/gpus.md)"]


def ncu_roofline_lines(report: Any, roof: Any, peaks: Any) -> tuple[list[str], list[str]]:
    """``gpuscope roofline FILE``: (stdout lines, stderr lines) of an ncu roofline."""
    has_file_ceilings = any(
        src == "ncu file" for p in roof.points for src in p.ceilings.source.values()
    )
    where = ["ncu file"] if has_file_ceilings else []
    unverified = sorted({k for p in roof.points for k in p.ceilings.unverified})
    if peaks:
        marks = f"; [u] unverified: {', '.join(unverified)}" if unverified else ""
        where.append(f"{peaks.name} (peak table{marks})")
    out = [
        f"{report.path}: {len(report.launches)} launch(es); ceilings: "
        + (", then ".join(where) if where else "none (name the GPU with --gpu)")
    ]
    head = (
        "#",
        "kernel",
        "time ms",
        "GFLOP/s",
        "DRAM GB/s",
        "% BW",
        "FLOP/B",
        "bound",
        "% roof",
        "share",
    )
    rows = []
    for i, p in enumerate(roof.points, start=1):
        name = p.name if len(p.name) <= 48 else p.name[:45] + "..."
        rows.append(
            (
                str(i),
                name,
                _fmt(p.time_ns, 1e6, 3),
                _fmt(p.flops_per_s_total, 1e9, 1),
                _fmt(p.bandwidth.get("dram"), 1e9, 1),
                _fmt(p.pct_of_peak_bandwidth, 1.0, 1),
                _fmt(p.intensity.get("dram"), 1.0, 2),
                p.bound or "-",
                _fmt(p.pct_of_attainable, 1.0, 1),
                _fmt(p.time_share * 100 if p.time_share is not None else None, 1.0, 1) + " %",
            )
        )
    out += _columns(head, rows)
    err = [f"note: not computed for any launch: {m}" for m in roof.missing]
    err += [f"warning: {w}" for w in report.warnings]
    return out, err
