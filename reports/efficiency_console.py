"""Rich tables of the ``occupancy`` and ``roofline`` summary sections (one rank each).

Rendered from the JSON summary (the numbers of ``--json``, defined in docs/efficiency.md).
Kernel names are untrusted and reach rich as :class:`rich.text.Text`, never as markup.  Every
headline says the share of GPU time it covers: occupancy the kernel time with a launch
configuration, the roofline the GPU time of the modelled ops (and, when the section carries
the analyzer's ``coverage``, how much of it is exact and how much enters achieved TFLOP/s).
A point above its roof shows as a model error, without achieved figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt

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
        console.print(
            f"Rank {rank['rank']}: occupancy ({occ.get('arch') or 'unknown arch'}): "
            f"time-weighted theoretical {_pct(occ.get('time_weighted_theoretical_pct'))} %, "
            f"CUPTI estimate {_pct(occ.get('time_weighted_est_achieved_pct'))} %, "
            f"over {_share(occ.get('coverage'))} % of kernel time",
            markup=False,
        )
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
            console.print(t)
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
        console.print(t)
        notes = [p for p in points[:TOP] if p.get("exact") is False and p.get("model_note")]
        for p in notes:
            console.print(Text(f"  estimate: {p.get('name')}: {p['model_note']}"))
