"""Rich tables of the ``collectives`` and ``comm`` summary sections (one rank each).

Rendered from the JSON summary (numbers defined in docs/communication.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.table_text import Fast

TOP = 8


_ms = fmt.ms


def _gbps(x: float | None) -> str:
    return "–" if x is None else f"{x:,.1f}"


def print_comm_sections(rank: Mapping[str, Any], console: Console) -> None:
    """Per-collective bandwidth and exposed communication by collective, when present."""
    rows = rank.get("collectives") or []
    if rows:
        t = Table(title=f"Rank {rank['rank']}: collectives (NCCL bus bandwidth)")
        for col in ("collective", "size", "count", "time ms", "median busbw GB/s", "% of link"):
            t.add_column(col, justify="left" if col in ("collective", "size") else "right")
        for r in sorted(rows, key=lambda r: -(r.get("time_ns") or 0))[:TOP]:
            link = r.get("median_busbw_link_pct")
            t.add_row(
                Text(str(r.get("collective"))),
                Text(str(r.get("size_bucket"))),
                str(r.get("count")),
                _ms(r.get("time_ns")),
                _gbps(r.get("median_busbw_gbps")),
                "–" if link is None else f"{link:.1f}",
            )
        console.print(Fast(t))
    comm = rank.get("comm") or {}
    by = comm.get("by_collective") or []
    if by:
        t = Table(title=f"Rank {rank['rank']}: communication time and exposed part")
        for col in ("collective", "comm ms", "exposed ms"):
            t.add_column(col, justify="left" if col == "collective" else "right")
        for r in by:
            t.add_row(
                Text(str(r.get("collective"))), _ms(r.get("comm_ns")), _ms(r.get("exposed_ns"))
            )
        console.print(Fast(t))
