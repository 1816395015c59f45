"""Summary accessors the report's pages share (the figures themselves: :mod:`analyzers.headline`).

The summary is validated (:func:`collectors.summary.reader.read_summary`) or built in-process
by the writer, so every key of :class:`collectors.summary.schema.Summary` is read as it is.
"""

from __future__ import annotations

import math
from typing import Any

from collectors.summary.schema import CollectiveRow, RankEntry, Summary

__all__ = ["Summary", "collective_rows", "num", "ranks"]


def num(x: Any) -> float | None:
    """A finite number for display (bools, ``None`` and non-numbers are None)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def ranks(summary: Summary) -> list[RankEntry]:
    """The rank entries."""
    return summary["ranks"]


def collective_rows(rank: RankEntry) -> list[CollectiveRow]:
    """The rank's per-collective summary rows (``collectives``; docs/communication.md)."""
    return rank.get("collectives", [])
