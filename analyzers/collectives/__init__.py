"""The per-rank collectives table (one row per NCCL collective run on the GPU), its message
sizes and bus bandwidth; definitions in docs/communication.md §1–2.

:func:`collectives_table` is the table of a Trace, built once per Trace through the analyzer
memo (:mod:`analyzers.memo`); :func:`build_collectives` builds it afresh.
"""

from __future__ import annotations

from analyzers.collectives.busbw import LINK_PEAKS, link_peak
from analyzers.collectives.columns import COLUMNS, FLOAT_COLUMNS, INT_COLUMNS
from analyzers.collectives.table import build_collectives
from analyzers.memo import memoised

collectives_table = memoised(build_collectives)
"""The collectives table of a Trace (:func:`build_collectives`), computed once per Trace."""

__all__ = [
    "COLUMNS",
    "FLOAT_COLUMNS",
    "INT_COLUMNS",
    "LINK_PEAKS",
    "build_collectives",
    "collectives_table",
    "link_peak",
]
