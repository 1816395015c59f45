"""Integrity notes: what makes a trace's numbers mean less than they seem, computed once per rank.

Definitions (docs/metrics.md §10); ``S``, the steps on the GPU clock and their idle come from
:mod:`analyzers.steps`:

- **capture trace**: the trace records a stream capture (``*StreamBeginCapture``,
  :func:`analyzers.serving.capture.is_capture_trace`): it was recorded while CUDA/HIP graphs
  were *built*, so the captured work did not run and its idle time says nothing about the
  host.  Such a rank gets no host-bound verdict (:mod:`analyzers.host_bound`) and no idle or
  host-bound finding.  ``capture_regions``: the capture regions found.
- **unrecorded graph replays**: graph launches (``*GraphLaunch`` runtime/driver calls with a
  correlation id) with no GPU row of that correlation — the profiler did not record the graph's
  kernels (TraceLens issue #728).  ``unrecorded_idle_ns``: for each such launch, the idle gap of
  ``S``'s busy union in which the GPU sits at the launch's start, or the first one after it,
  from the later of the gap's start and the launch (each gap counted once, from its earliest
  such launch): idle time the missing kernels may have filled.
- **prelaunched work**: GPU events launched before the profiler started
  (:func:`analyzers.steps.prelaunched_mask`); ``prelaunched_events`` and ``prelaunched_ns`` =
  the length of the union of their intervals.  Left out of the per-step figures unless
  ``options.include_prelaunched`` (``prelaunched_included``).
- **edge gaps**: for the first and the last step with GPU work, the longest idle gap of ``S``
  inside the step's interval on the GPU clock, when it is at least :data:`EDGE_GAP_SHARE` of
  that interval.
- **GPU lag**: over the steps with a ``launch_lag_ns``, the median of it and of
  ``steps_behind`` and the largest ``steps_behind``; a note when the median is at least
  :data:`LAG_NOTE_STEPS`.

``notes``: one line per finding above, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analyzers import intervals as iv
from analyzers.options import AnalysisOptions
from analyzers.stats import median, round_ns
from analyzers.steps import step_breakdown, step_events
from analyzers.window import host_launch_mask, memoized
from collectors.arrays import sorted_unique

if TYPE_CHECKING:
    from collectors.model import Trace

EDGE_GAP_SHARE = 0.5
"""An edge step's longest idle gap is named when it is at least this share of the step."""
LAG_NOTE_STEPS = 0.5
"""The GPU-lag note is written when the GPU runs at least this many steps behind (median)."""


@dataclass(frozen=True)
class EdgeGap:
    """One idle gap that dominates the first or the last step."""

    edge: str
    """``first`` or ``last``."""
    step: int
    start_ns: int
    end_ns: int
    share: float
    """Gap length ÷ the step's ``gpu_duration_ns``."""

    @property
    def idle_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class GpuLag:
    """How far the GPU runs behind the CPU over a rank's steps."""

    steps: int
    """Steps with a launch lag."""
    median_launch_lag_ns: int
    median_steps_behind: float | None
    max_steps_behind: float | None


@dataclass(frozen=True)
class Integrity:
    """The integrity facts and notes of one rank (module docstring)."""

    capture: bool
    capture_regions: int
    graph_launches: int
    graph_launches_unrecorded: int
    unrecorded_idle_ns: int
    prelaunched_events: int
    prelaunched_ns: int
    prelaunched_included: bool
    edge_gaps: tuple[EdgeGap, ...]
    lag: GpuLag | None
    notes: tuple[str, ...]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f} ms"


def _graph_launches(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(start_ns, correlation) of the graph launches: device-API calls named ``*GraphLaunch``
    with a correlation id."""
    from analyzers.serving.ops import GRAPH_LAUNCH_RE
    from collectors.model import names_matching

    h = trace.host
    corr = h["correlation"].to_numpy()
    rows = host_launch_mask(trace) & names_matching(h["name"], GRAPH_LAUNCH_RE.search) & (corr >= 0)
    return h["start_ns"].to_numpy()[rows], corr[rows]


def _recorded(ids: np.ndarray, trace: Trace) -> np.ndarray:
    """Which correlation ids of *ids* some ``trace.gpu`` row has."""
    if not ids.size:
        return np.zeros(0, dtype=bool)
    have = sorted_unique(trace.gpu["correlation"].to_numpy())
    at = np.minimum(np.searchsorted(have, ids), max(have.size - 1, 0))
    return have[at] == ids if have.size else np.zeros(ids.size, dtype=bool)


def unrecorded_idle(busy: iv.Intervals, launches_ns: np.ndarray) -> int:
    """The idle time of the gaps of *busy* that follow the launches (module docstring)."""
    s, e = busy
    if s.size < 2 or not launches_ns.size:
        return 0
    gs, ge = e[:-1], s[1:]
    k = np.searchsorted(ge, launches_ns, side="right")
    ok = k < gs.size
    if not ok.any():
        return 0
    k, t = k[ok], launches_ns[ok]
    first = np.full(gs.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, k, t)
    used = first != np.iinfo(np.int64).max
    return int((ge[used] - np.maximum(gs[used], first[used])).sum())


def _edge_gaps(trace: Trace, options: AnalysisOptions) -> tuple[EdgeGap, ...]:
    se = step_events(trace, options)
    sb = step_breakdown(trace, options)
    has = np.flatnonzero(se.gpu_start >= 0)
    out = []
    for edge, k in (("first", has[:1]), ("last", has[-1:] if len(has) > 1 else has[:0])):
        for i in k.tolist():
            lo, hi = int(se.gpu_start[i]), int(se.gpu_end[i])
            if hi <= lo:
                continue
            gaps = iv.subtract((np.array([lo]), np.array([hi])), se.busy)
            if not gaps[0].size:
                continue
            j = int(np.argmax(gaps[1] - gaps[0]))
            share = int(gaps[1][j] - gaps[0][j]) / (hi - lo)
            if share >= EDGE_GAP_SHARE:
                step = int(sb["step"].to_numpy()[i])
                out.append(EdgeGap(edge, step, int(gaps[0][j]), int(gaps[1][j]), share))
    return tuple(out)


def _lag(trace: Trace, options: AnalysisOptions) -> GpuLag | None:
    sb = step_breakdown(trace, options)
    lagged = sb[sb["launch_lag_ns"].to_numpy() >= 0]
    if lagged.empty:
        return None
    behind = lagged["steps_behind"].to_numpy(dtype=np.float64)
    behind = behind[np.isfinite(behind)]
    return GpuLag(
        steps=len(lagged),
        median_launch_lag_ns=round_ns(median(lagged["launch_lag_ns"].to_numpy())),
        median_steps_behind=median(behind) if behind.size else None,
        max_steps_behind=float(behind.max()) if behind.size else None,
    )


def integrity(trace: Trace, options: AnalysisOptions | None = None) -> Integrity:
    """The :class:`Integrity` of *trace* (memoised per trace and options)."""
    opts = options or AnalysisOptions()
    return memoized(trace, opts, "integrity", lambda: _integrity(trace, opts))


def _integrity(trace: Trace, options: AnalysisOptions) -> Integrity:
    from analyzers.serving.capture import capture_regions, is_capture_trace

    capture = is_capture_trace(trace)
    regions = len(capture_regions(trace)) if capture else 0
    se = step_events(trace, options)
    gl_start, gl_corr = _graph_launches(trace)
    missing = ~_recorded(gl_corr, trace)
    unrec_t = np.sort(gl_start.astype(np.int64)[missing])
    unrec_idle = unrecorded_idle(se.busy, unrec_t)
    pre = se.prelaunched
    pre_ns = iv.total(iv.merge(pre["start_ns"].to_numpy(), pre["end_ns"].to_numpy()))
    edges = _edge_gaps(trace, options)
    lag = _lag(trace, options)
    notes = []
    if capture:
        notes.append(
            f"graph-capture trace ({regions} capture region(s), *StreamBeginCapture): the "
            "captured work did not run, so its idle time says nothing about the host; no "
            "host-bound verdict"
        )
    if missing.any():
        notes.append(
            f"{int(missing.sum())} of {gl_corr.size} graph launch(es) have no recorded GPU work "
            f"(the profiler did not record the graph's kernels, TraceLens issue #728): "
            f"{_ms(unrec_idle)} of GPU idle time follows them"
        )
    if len(pre):
        what = (
            "counted in the per-step figures (--include-prelaunched)"
            if options.include_prelaunched
            else "left out of the per-step figures (--include-prelaunched counts it)"
        )
        notes.append(
            f"{len(pre)} GPU event(s), {_ms(pre_ns)} of GPU time, were launched before the "
            f"profiler started (no launching call in the trace): {what}"
        )
    for gap in edges:
        notes.append(
            f"one idle gap of {_ms(gap.idle_ns)} is {100 * gap.share:.1f} % of step "
            f"{gap.step} on the GPU clock (the {gap.edge} step of the trace)"
        )
    if lag is not None and (lag.median_steps_behind or 0.0) >= LAG_NOTE_STEPS:
        notes.append(
            f"the GPU runs {lag.median_steps_behind:.2f} steps behind the CPU (median "
            f"launch→start {_ms(lag.median_launch_lag_ns)}): per-step figures follow each "
            "step's own GPU work (the GPU clock), not the ProfilerStep ranges"
        )
    return Integrity(
        capture=capture,
        capture_regions=regions,
        graph_launches=int(gl_corr.size),
        graph_launches_unrecorded=int(missing.sum()),
        unrecorded_idle_ns=unrec_idle,
        prelaunched_events=len(pre),
        prelaunched_ns=pre_ns,
        prelaunched_included=options.include_prelaunched,
        edge_gaps=edges,
        lag=lag,
        notes=tuple(notes),
    )
