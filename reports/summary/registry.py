"""The summary's sections, in output order: the per-rank keys (:data:`RANK_SECTIONS`) and the
keys computed across ranks (:data:`RUN_SECTIONS`), each a key and a function reference.

A rank section is called as ``fn(trace, options, inputs)``, a run section as
``fn(traces, options, inputs)`` (*inputs*: the loaded side inputs,
:class:`analyzers.inputs.AnalysisInputs`).  Each returns a JSON-ready value, or ``None`` to
leave the key out (``device`` is written even when None: :data:`ALWAYS_WRITTEN`).  Section
modules import their analyzers inside the functions, so loading this registry stays cheap.  A
new section is one line here (and, for a run section, a reducer in
:data:`reports.summary.many_ranks.RUN_REDUCERS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import Trace
from reports import critical_path_section
from reports.serving_section import serving_section
from reports.summary.sections import comm, core, efficiency, series, wait

RankSectionFn = Callable[[Trace, AnalysisOptions, AnalysisInputs], Any]
RunSectionFn = Callable[[Sequence[Trace], AnalysisOptions, AnalysisInputs], Any]


class RankSection(NamedTuple):
    """One key of every ``summary["ranks"][i]``."""

    key: str
    fn: RankSectionFn


class RunSection(NamedTuple):
    """One top-level key computed from every rank."""

    key: str
    fn: RunSectionFn


RANK_SECTIONS: tuple[RankSection, ...] = (
    RankSection("device", core.device),
    RankSection("notes", core.notes),
    RankSection("window", core.window),
    RankSection("kernel_summary", core.kernel_summary),
    RankSection("temporal", core.temporal),
    RankSection("overlap", core.overlap),
    RankSection("steps", core.steps),
    RankSection("integrity", core.integrity),
    RankSection("occupancy", efficiency.occupancy),
    RankSection("roofline", efficiency.roofline),
    RankSection("idle", wait.idle),
    RankSection("launch", wait.launch),
    RankSection("memory", wait.memory),
    RankSection("collectives", comm.collectives),
    RankSection("comm", comm.comm),
    RankSection("serving", serving_section),
)
"""Per-rank keys in output order.  Later issues append their entries here (one line each)."""

RUN_SECTIONS: tuple[RunSection, ...] = (
    RunSection("comm_skew", comm.comm_skew),
    RunSection("run", series.run),
    RunSection("critical_path", critical_path_section.critical_path),
)
"""Top-level keys computed across ranks (skew, stragglers, ...)."""

LEADING_RUN_SECTIONS = ("critical_path",)
"""Run sections written before ``ranks`` (what to fix first opens the summary)."""

ALWAYS_WRITTEN = frozenset({"device"})
"""Rank keys written as ``null`` when their section returns None (others are left out)."""
