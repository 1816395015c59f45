"""Rich tables of the ``occupancy`` and ``roofline`` summary sections (one rank each).

Rendered from the JSON summary (the numbers of ``--json``, defined in docs/efficiency.md).
Kernel names are untrusted and reach rich as :class:`rich.text.Text`, never as markup.
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


def _name(s: Any, width: int = 60) -> Text:
    return fmt.name_text(s, width)


def print_efficiency_sections(rank: Mapping[str, Any], console: Console) -> None:
    """Occupancy flags and the top roofline points of one rank, when the sections exist."""
    occ = rank.get("occupancy")
    if occ and occ.get("kernels_with_config"):
        bound = "≤ " if occ.get("upper_bound") else ""  # AMD: registers/LDS not recorded
        console.print(
            f"Rank {rank['rank']}: occupancy ({occ.get('arch') or 'unknown arch'}): "
            f"time-weighted theoretical {bound}{_pct(occ.get('time_weighted_theoretical_pct'))} %, "
            f"CUPTI estimate {_pct(occ.get('time_weighted_est_achieved_pct'))} %",
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
            console.print(t)
            if flags[0].get("suggestion"):
                console.print(Text(f"  try (top kernel): {flags[0]['suggestion']}"))
    roof = rank.get("roofline")
    points = ((roof or {}).get("ops") or {}).get("points") or []
    if points:
        t = Table(title=f"Rank {rank['rank']}: roofline of the top ops (from op shapes)")
        for col in ("op", "bound", "TFLOP/s", "DRAM TB/s", "% of attainable", "time %"):
            t.add_column(col, justify="left" if col in ("op", "bound") else "right")
        for p in points[:TOP]:
            tflops = p.get("flops_per_s_total")
            tbps = (p.get("bytes_per_s") or {}).get("dram")
            share = p.get("time_share")
            t.add_row(
                _name(p.get("name")),
                Text(str(p.get("bound") or "–")),
                "–" if tflops is None else f"{tflops / 1e12:.2f}",
                "–" if tbps is None else f"{tbps / 1e12:.3f}",
                _pct(p.get("pct_of_attainable")),
                _pct(None if share is None else 100 * share),
            )
        console.print(t)
        missing = ((roof or {}).get("ops") or {}).get("gpu_peaks_missing")
        if missing:
            console.print(Text(f"  no roofline ceilings: {missing}"))
