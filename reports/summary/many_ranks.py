"""Cross-rank sections from small per-rank inputs (docs/scale.md §5).

What each rank's task returns besides its JSON entry is a :class:`RankDigest`: the trace meta
and, per run section, the rank's small part of it (:data:`RUN_REDUCERS`: ``extract``).  The
caller computes each run section from the digests (``combine``) on stand-in Traces that carry
exactly what the section reads: the meta, and for ``comm_skew`` the window collectives seeded
into the analyzer memo (:mod:`analyzers.memo`).  :func:`run_sections` is the one place run
sections are computed, for :func:`reports.summary.build_summary` and the pool and Dask alike.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import (
    Trace,
    TraceMeta,
    annotation_table,
    counter_table,
    gpu_table,
    host_table,
)
from reports import critical_path_section
from reports.summary.registry import RUN_SECTIONS, RunSectionFn


@dataclass
class RankDigest:
    """The small per-rank inputs of the cross-rank sections (instead of the Trace)."""

    rank: int
    meta: TraceMeta
    parts: dict[str, Any] = field(default_factory=dict)
    """Per run-section key, the rank's part of that section (its reducer's ``extract``)."""
    alone: dict[str, Any] = field(default_factory=dict)
    """Per run-section key with a :attr:`RunReducer.alone`, the section of a run of this rank
    alone, computed beside the part when the caller knew the rank is the only one (cached with
    the part: :func:`run_sections` takes it only for a run of this one rank, else it combines
    the parts)."""
    early: dict[str, tuple[tuple[tuple[int, str | None], ...], Any]] = field(default_factory=dict)
    """Per run-section key with a :attr:`RunReducer.early`, ``(ranks, value)``: the section
    combined, beside this rank's part, with the parts of the digests analysed before it, for
    the ranks :func:`ranks_of` names (the run's last rank: :func:`early_job`; not cached).
    :func:`run_sections` takes it when the run's digests are exactly those ranks."""


def ranks_of(digests: Sequence[RankDigest]) -> tuple[tuple[int, str | None], ...]:
    """``(rank, source path)`` of each digest, in order: what an early value was computed
    for."""
    return tuple((d.rank, d.meta.source_path) for d in digests)


def _bare_trace(digest: RankDigest) -> Trace:
    """A Trace with the rank's meta and empty tables (shallow copies of one set, built once:
    building typed empty frames costs milliseconds, and a many-rank reduce needs two per rank)."""
    return Trace(meta=digest.meta, **{k: t.copy(deep=False) for k, t in _empty_tables().items()})


@functools.cache
def _empty_tables() -> dict[str, Any]:
    return {
        "gpu": gpu_table(),
        "host": host_table(),
        "annotations": annotation_table(),
        "counters": counter_table(),
    }


def _skew_extract(
    fn: RunSectionFn, trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> Any:
    """The rank's window collectives with GPU work: all that ``cross_rank_skew`` reads."""
    from analyzers.comm import window_collectives

    c = window_collectives(trace, options)
    if c.empty:
        return c.reset_index(drop=True)
    return c[c["n_gpu_rows"] > 0].reset_index(drop=True)


def _skew_standin(digest: RankDigest, table: Any) -> Trace:
    """A Trace whose window collectives under ``all_events`` are exactly *table*: one
    stream-0 ``gpu`` row per collective, ``gpu_row`` renumbered to it (and the analyzer memo
    of its collectives table seeded with *table*)."""
    from analyzers.collectives import collectives_table

    t = _bare_trace(digest)
    n = len(table)
    t.gpu = gpu_table({"stream": np.zeros(n, dtype=np.int64)})
    if n:
        table = table.assign(gpu_row=np.arange(n, dtype=np.int64))
    collectives_table.seed(t, table)
    return t


def _skew_combine(
    fn: RunSectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
) -> Any:
    standins = [_skew_standin(d, d.parts[key]) for d in digests]
    return fn(standins, dataclasses.replace(options, all_events=True), inputs)


def _per_rank_extract(
    fn: RunSectionFn, trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> Any:
    """The rank's own object of the section's ``ranks`` list (the section run on it alone)."""
    value = fn([trace], options, AnalysisInputs())
    return None if value is None else value["ranks"][0]


def _per_rank_combine(
    fn: RunSectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
) -> Any:
    """The section on meta-only Traces, its ``ranks`` list replaced by the workers' objects."""
    value = fn([_bare_trace(d) for d in digests], options, inputs)
    if value is not None:
        value["ranks"] = [d.parts[key] for d in digests]
    return value


@dataclass(frozen=True)
class RunReducer:
    """How a run section is computed from per-rank digests.

    ``extract(fn, trace, options, inputs)`` runs in the worker (``fn`` is the section) and
    returns the rank's small part, kept in ``RankDigest.parts[key]``;
    ``combine(fn, digests, key, options, inputs)`` runs in the caller and returns the section's
    value.  Each pair is tested to give exactly ``fn(traces, options, inputs)``.
    """

    extract: Callable[[RunSectionFn, Trace, AnalysisOptions, AnalysisInputs], Any]
    combine: Callable[
        [RunSectionFn, Sequence[RankDigest], str, AnalysisOptions, AnalysisInputs], Any
    ]
    alone: Callable[[RunSectionFn, Trace, AnalysisOptions, AnalysisInputs], Any] | None = None
    """``alone(fn, trace, options, inputs)`` → ``(part, value)``: the rank's part and the
    section of a run of that rank alone, where computing them together is worth it (on one CPU
    while another computes the other sections: :mod:`reports.summary.forked`); the value equals
    ``combine`` of the one digest (tested)."""
    value_alone: Callable[[RunSectionFn, Trace, AnalysisOptions, AnalysisInputs], Any] | None = None
    """``value_alone(fn, trace, options, inputs)`` → the value of ``alone`` without the part,
    for a sole rank whose part nothing will combine or cache (no results cache): what building
    and returning the part would cost is saved (tested equal)."""
    early: (
        Callable[[RunSectionFn, Trace, AnalysisOptions, AnalysisInputs, Sequence[Any]], Any] | None
    ) = None
    """``early(fn, trace, options, inputs, parts)`` → ``(part, value)``: the rank's part and
    the section combined over *parts* (the run's parts in summary order, ``None`` where this
    rank's goes), for the run's last rank, whose job then holds the combine (on the helper's
    CPU while this process computes the other sections: :mod:`reports.summary.forked`,
    :func:`early_job`) instead of leaving it to the end; the value equals ``combine`` over the
    same digests (tested)."""
    value_early: (
        Callable[[RunSectionFn, Trace, AnalysisOptions, AnalysisInputs, Sequence[Any]], Any] | None
    ) = None
    """``value_early(fn, trace, options, inputs, parts)`` → the value of :attr:`early` without
    the part, for a last rank whose part nothing will cache (no results cache): building and
    returning the part would cost more than the rest of the job's hand-back (tested equal)."""
    combine_early: bool = False
    """Without :attr:`early`: the run's last rank's job extracts its part and then combines
    every rank's (``combine`` over the same digests, so the same value), instead of leaving
    the combine to the end (:func:`early_job`)."""

    @property
    def has_early(self) -> bool:
        """Whether the run's last rank's job can hold the combine (:func:`early_job`)."""
        return self.early is not None or self.combine_early


RUN_REDUCERS: dict[str, RunReducer] = {
    "comm_skew": RunReducer(_skew_extract, _skew_combine, combine_early=True),
    "run": RunReducer(_per_rank_extract, _per_rank_combine),
    "critical_path": RunReducer(
        critical_path_section.part_extract,
        critical_path_section.part_combine,
        critical_path_section.part_alone,
        critical_path_section.section_alone,
        critical_path_section.part_early,
        critical_path_section.section_early,
    ),
}
"""Per ``RUN_SECTIONS`` key.  A section missing here is computed from whole Traces (re-read
by the engine: correct, but neither small nor parallel)."""


def early_job(
    red: RunReducer,
    fn: RunSectionFn,
    key: str,
    earlier: Sequence[RankDigest],
    keep: bool = True,
) -> Callable[[Trace, AnalysisOptions, AnalysisInputs], Any]:
    """The job of *red*'s :attr:`RunReducer.early` (or, with
    :attr:`RunReducer.combine_early`, its extract then its combine) for the rank analysed
    after the *earlier* digests: ``(part, (ranks, value))``, the ranks in summary order (by
    rank, stable: the engine's order, :func:`reports.summary.engine.analyze_paths`); the part
    is None when not *keep* and *red* has a :attr:`RunReducer.value_early`."""
    assert red.has_early
    early, value_early = red.early, None if keep else red.value_early

    def job(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> Any:
        me = RankDigest(trace.rank, trace.meta)
        order = sorted([*earlier, me], key=lambda d: d.rank)
        if early is None:
            part = me.parts[key] = red.extract(fn, trace, options, inputs)
            return part, (ranks_of(order), red.combine(fn, order, key, options, inputs))
        parts = [None if d is me else d.parts[key] for d in order]
        if value_early is not None:
            return None, (ranks_of(order), value_early(fn, trace, options, inputs, parts))
        part, value = early(fn, trace, options, inputs, parts)
        return part, (ranks_of(order), value)

    return job


def rank_digest(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> RankDigest:
    """The rank's part of every run section that has a reducer."""
    parts = {}
    for key, fn in RUN_SECTIONS:
        red = RUN_REDUCERS.get(key)
        if red is not None:
            parts[key] = red.extract(fn, trace, options, inputs)
    return RankDigest(trace.rank, trace.meta, parts)


def run_sections(
    digests: Sequence[RankDigest],
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    whole: Callable[[], Sequence[Trace]],
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Every run section's value (``None`` values left out), in registry order, from the
    digests (a sole digest's :attr:`~RankDigest.alone` value, or an :attr:`~RankDigest.early`
    value computed for exactly these ranks, as it is); a section without a reducer from
    ``whole()`` (the whole Traces, in digest order, asked for once), with a line in
    *notes*."""
    out: dict[str, Any] = {}
    traces: Sequence[Trace] | None = None
    ranks = ranks_of(digests)
    for key, fn in RUN_SECTIONS:
        red = RUN_REDUCERS.get(key)
        early = [v for r, v in (d.early[key] for d in digests if key in d.early) if r == ranks]
        if len(digests) == 1 and key in digests[0].alone:
            value = digests[0].alone[key]
        elif early:
            value = early[0]
        elif red is not None and all(key in d.parts for d in digests):
            value = red.combine(fn, digests, key, options, inputs)
        else:
            if traces is None:
                traces = whole()
                if notes is not None:
                    notes.append(
                        f"run section {key!r} has no reducer in "
                        "reports.summary.many_ranks.RUN_REDUCERS: computed from every Trace "
                        "re-read in this process"
                    )
            value = fn(traces, options, inputs)
        if value is not None:
            out[key] = value
    return out
