"""The summary's sections, in output order: the per-rank keys (:data:`RANK_SECTIONS`) and
the keys computed across ranks (:data:`RUN_SECTIONS`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

RANK_SECTIONS: list[tuple[str, str]] = [
    ("device", "reports.summary.sections.core:device"),
    ("notes", "reports.summary.sections.core:notes"),
    ("window", "reports.summary.sections.core:window"),
    ("kernel_summary", "reports.summary.sections.core:kernel_summary"),
    ("temporal", "reports.summary.sections.core:temporal"),
    ("overlap", "reports.summary.sections.core:overlap"),
    ("steps", "reports.summary.sections.core:steps"),
    ("occupancy", "reports.summary.sections.efficiency:occupancy"),
    ("roofline", "reports.summary.sections.efficiency:roofline"),
    ("idle", "reports.summary.sections.wait:idle"),
    ("launch", "reports.summary.sections.wait:launch"),
    ("memory", "reports.summary.sections.wait:memory"),
    ("collectives", "reports.summary.sections.comm:collectives"),
    ("comm", "reports.summary.sections.comm:comm"),
]
"""Per-rank keys in output order.  Later issues append their entries here (one line each)."""

RUN_SECTIONS: list[tuple[str, str]] = [
    ("comm_skew", "reports.summary.sections.comm:comm_skew"),
    ("run", "reports.summary.sections.series:run"),
]
"""Top-level keys computed across ranks (skew, stragglers, ...)."""


def resolve(spec: str) -> Callable[..., Any]:
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn)  # type: ignore[no-any-return]
