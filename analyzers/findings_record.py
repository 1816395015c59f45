"""The record every finding rule returns (:mod:`analyzers.findings`,
:mod:`analyzers.findings_serving`): which rule, the measured figure, its threshold, its impact.

Its own module so that rule modules can subclass it without importing the rule registry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One problem: which rule, the measured figure, its threshold and its impact."""

    id: str
    value: float
    """The measured figure the threshold applies to (unit of ``limit``)."""
    limit: float
    impact: float
    """Share of time concerned (0–1), for ordering."""
