"""Temporal breakdown and compute–communication overlap of one rank (HTA-compatible).

``G`` = the window's GPU events (:func:`analyzers.window.gpu_events`), typed by
:mod:`analyzers.classify`; ``merged(X)`` = the union of X's intervals (HTA merge semantics,
:mod:`analyzers.intervals`); ``|X|`` its length.  Definitions (docs/metrics.md):

- ``span`` = last end − first start of ``merged(G)`` (GPU activity span, not step time);
- ``idle`` = span − |merged(G)|: time inside the span when no GPU event runs on any stream;
- ``compute`` = |merged(COMPUTATION of G)|;
- ``non_compute`` = span − compute − idle: time when only COMMUNICATION / MEMORY / OTHER events
  run (communication hidden under computation counts as compute);
- ``C`` = merged(COMMUNICATION of G), ``P`` = merged(COMPUTATION of G);
  ``overlap`` = |C ∩ P|, ``exposed_comm`` = |C \\ P| = |C| − overlap,
  ``overlap_pct`` = 100 × overlap / |C| (None without communication).

Percentages are exact ratios (HTA rounds them to 2 decimals); times are exact integer ns.

    ===============================  ======  ========  =========
    events (ns)                      span    compute   idle
    ===============================  ======  ========  =========
    gemm [0,100) nccl [50,200)       200     100       0
    gemm [0,100) gemm [150,200)      200     150       50
    ===============================  ======  ========  =========
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analyzers import intervals as iv
from analyzers.classify import COMMUNICATION, COMPUTATION, KERNEL_TYPES
from analyzers.options import AnalysisOptions
from analyzers.window import gpu_events, gpu_type_codes, memoized, window_rows

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace


@dataclass(frozen=True)
class TypedIntervals:
    """Merged interval sets of the window's GPU events, by role."""

    busy: iv.Intervals
    """merged(G): any GPU event."""
    compute: iv.Intervals
    """P = merged(COMPUTATION of G)."""
    comm: iv.Intervals
    """C = merged(COMMUNICATION of G)."""


@dataclass(frozen=True)
class TemporalBreakdown:
    """Where a rank's GPU span went; percentages of ``span_ns`` (None when the span is 0)."""

    span_ns: int
    idle_ns: int
    compute_ns: int
    non_compute_ns: int
    idle_pct: float | None
    compute_pct: float | None
    non_compute_pct: float | None


@dataclass(frozen=True)
class Overlap:
    """Compute–communication overlap and exposed communication of a rank."""

    comm_ns: int
    """|C|: time some communication kernel runs."""
    compute_ns: int
    """|P|: time some computation kernel runs."""
    overlap_ns: int
    """|C ∩ P|."""
    exposed_comm_ns: int
    """|C \\ P|: communication with no computation running beside it."""
    overlap_pct: float | None
    """100 × overlap / |C|; None when the rank has no communication (HTA: NaN)."""


def typed_events(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The window's GPU events with a ``type`` column (COMMUNICATION / MEMORY / ...)."""
    opts = options or AnalysisOptions()

    def compute() -> pd.DataFrame:
        g = gpu_events(trace, opts)
        return g.assign(type=TYPE_LABELS[window_type_codes(trace, opts)])

    return memoized(trace, opts, "typed_events", compute)


TYPE_LABELS = np.array(KERNEL_TYPES, dtype=object)
"""Type code → label (:data:`analyzers.classify.KERNEL_TYPES`)."""
COMPUTATION_CODE = KERNEL_TYPES.index(COMPUTATION)
COMMUNICATION_CODE = KERNEL_TYPES.index(COMMUNICATION)


def window_type_codes(trace: Trace, options: AnalysisOptions | None = None) -> np.ndarray:
    """Type code (index into :data:`analyzers.classify.KERNEL_TYPES`) of each window GPU event,
    in :func:`analyzers.window.window_rows` order (the rows of :func:`typed_events`)."""
    return gpu_type_codes(trace, options)[window_rows(trace, options)]


def typed_intervals(trace: Trace, options: AnalysisOptions | None = None) -> TypedIntervals:
    """merged(G), P and C of the window's GPU events (see the module docstring)."""
    opts = options or AnalysisOptions()
    return memoized(trace, opts, "typed_intervals", lambda: _typed_intervals(trace, opts))


def _typed_intervals(trace: Trace, options: AnalysisOptions) -> TypedIntervals:
    rows = window_rows(trace, options)
    s = trace.gpu["start_ns"].to_numpy()[rows]
    e = trace.gpu["end_ns"].to_numpy()[rows]
    t = window_type_codes(trace, options)
    comp = t == COMPUTATION_CODE
    comm = t == COMMUNICATION_CODE
    return TypedIntervals(
        busy=iv.merge(s, e), compute=iv.merge(s[comp], e[comp]), comm=iv.merge(s[comm], e[comm])
    )


def _pct(x: int, whole: int) -> float | None:
    return 100.0 * x / whole if whole else None


def temporal_breakdown(trace: Trace, options: AnalysisOptions | None = None) -> TemporalBreakdown:
    """Span, idle, compute and non-compute time of the rank's GPU events (module docstring)."""
    ti = typed_intervals(trace, options)
    starts, ends = ti.busy
    span = int(ends[-1] - starts[0]) if starts.size else 0
    idle = span - iv.total(ti.busy)
    compute = iv.total(ti.compute)
    non_compute = span - compute - idle
    return TemporalBreakdown(
        span_ns=span,
        idle_ns=idle,
        compute_ns=compute,
        non_compute_ns=non_compute,
        idle_pct=_pct(idle, span),
        compute_pct=_pct(compute, span),
        non_compute_pct=_pct(non_compute, span),
    )


def overlap(trace: Trace, options: AnalysisOptions | None = None) -> Overlap:
    """Compute–communication overlap and exposed communication (module docstring)."""
    ti = typed_intervals(trace, options)
    comm = iv.total(ti.comm)
    both = iv.total(iv.intersect(ti.comm, ti.compute))
    return Overlap(
        comm_ns=comm,
        compute_ns=iv.total(ti.compute),
        overlap_ns=both,
        exposed_comm_ns=comm - both,
        overlap_pct=_pct(both, comm),
    )


def exposed_comm_intervals(ti: TypedIntervals) -> iv.Intervals:
    """C \\ P: when communication runs and no computation does."""
    return iv.subtract(ti.comm, ti.compute)
