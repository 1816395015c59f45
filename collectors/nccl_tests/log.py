"""One section of an nccl-tests log, as :mod:`collectors.nccl_tests` reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

ROW_COLUMNS = (
    "collective",
    "size_bytes",
    "count",
    "dtype",
    "redop",
    "root",
    "placement",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "wrong",
    "algbw_expected",
    "busbw_expected",
    "algbw_ok",
    "busbw_ok",
    "line",
)
"""Columns of :attr:`NcclTestsLog.rows` (and of commbench's table)."""

PLACEMENTS = ("out_of_place", "in_place")


@dataclass(frozen=True)
class NcclTestsLog:
    """One section of an nccl-tests log: its facts, its rows and what could not be checked."""

    path: str | None
    collective: str | None
    collective_source: str
    """``header`` (``# Collective test starting``), ``filename``, ``option``, ``inferred``
    (from the busbw/algbw ratio and the redop column) or ``unknown``."""
    nranks: int | None
    nranks_source: str
    """``devices`` (the ``# Using devices`` block), ``busbw/algbw``, ``option`` or ``unknown``."""
    rows: pd.DataFrame
    layout: str
    """``2.13+`` (``#wrong`` column), ``2.4-2.12`` (``error``), ``2017`` (``res``, time in ms),
    ``json`` or ``headerless``."""
    time_unit: str
    devices: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    version: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    avg_busbw_footer: float | None = None
    """The ``# Avg bus bandwidth`` line: a mean over every row, never a peak (kept for display)."""
    warnings: tuple[str, ...] = ()
    left_out: int = 0
    """Result rows (one per placement) read but left out for an impossible value
    (:mod:`collectors.nccl_tests.validate`); each has a warning."""

    @property
    def checked_ok(self) -> bool:
        """True when every checkable algbw/busbw value matched (unverifiable ones excluded)."""
        r = self.rows
        return bool((r["algbw_ok"].fillna(True) & r["busbw_ok"].fillna(True)).all())
