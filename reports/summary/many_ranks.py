"""Cross-rank sections from small per-rank inputs: what each rank's task returns instead of its
Trace (:class:`RankDigest`), and how each run section is computed from those
(:data:`RUN_REDUCERS`; docs/scale.md §5)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzers.options import AnalysisOptions
from collectors.model import (
    Trace,
    TraceMeta,
    annotation_table,
    counter_table,
    gpu_table,
    host_table,
)
from reports.summary.registry import RUN_SECTIONS


@dataclass
class RankDigest:
    """The small per-rank inputs of the cross-rank sections (instead of the Trace)."""

    rank: int
    meta: TraceMeta
    inputs: dict[str, Any] = field(default_factory=dict)


SectionFn = Callable[..., Any]


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
    fn: SectionFn, trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]
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
    fn: SectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    extras: Mapping[str, Any],
) -> Any:
    standins = [_skew_standin(d, d.inputs[key]) for d in digests]
    return fn(standins, dataclasses.replace(options, all_events=True), extras)


def _per_rank_extract(
    fn: SectionFn, trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]
) -> Any:
    """The rank's own object of the section's ``ranks`` list (the section run on it alone)."""
    value = fn([trace], options, {})
    return None if value is None else value["ranks"][0]


def _per_rank_combine(
    fn: SectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    extras: Mapping[str, Any],
) -> Any:
    """The section on meta-only Traces, its ``ranks`` list replaced by the workers' objects."""
    value = fn([_bare_trace(d) for d in digests], options, extras)
    if value is not None:
        value["ranks"] = [d.inputs[key] for d in digests]
    return value


@dataclass(frozen=True)
class RunReducer:
    """How a run section is computed from per-rank digests.

    ``extract(fn, trace, options, extras)`` runs in the worker (``fn`` is the section) and
    returns the rank's small input, kept in ``RankDigest.inputs[key]``;
    ``combine(fn, digests, key, options, extras)`` runs in the caller and returns the section's
    value.  Each pair is tested to give exactly ``fn(traces, options, extras)``.
    """

    extract: Callable[[SectionFn, Trace, AnalysisOptions, Mapping[str, Any]], Any]
    combine: Callable[
        [SectionFn, Sequence[RankDigest], str, AnalysisOptions, Mapping[str, Any]], Any
    ]


RUN_REDUCERS: dict[str, RunReducer] = {
    "comm_skew": RunReducer(_skew_extract, _skew_combine),
    "run": RunReducer(_per_rank_extract, _per_rank_combine),
}
"""Per ``RUN_SECTIONS`` key.  A section missing here is computed from whole Traces re-read
in the caller (correct, but neither small nor parallel)."""


def rank_digest(trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]) -> RankDigest:
    """The rank's inputs of every run section that has a reducer."""
    inputs = {}
    for key, fn in RUN_SECTIONS:
        red = RUN_REDUCERS.get(key)
        if red is not None:
            inputs[key] = red.extract(fn, trace, options, extras)
    return RankDigest(trace.rank, trace.meta, inputs)
