"""The analysis window: HTA 0.6.1's ProfilerStep filter, and the GPU events it keeps.

Every analysis of the foundation (temporal breakdown, overlap, kernel summary, steps) and the
later ones that say "GPU events" read :func:`gpu_events`: the rows of ``trace.gpu`` with a
stream (``stream != -1``) that survive the window filter below.  Definition (docs/metrics.md
"Analysis window"; HTA ``Trace._filter_irrelevant_gpu_kernels`` with
``include_last_profiler_step=False``):

1. ``--all-events`` (``options.all_events``): no filtering.
2. Step markers are names matching ``^ProfilerStep#(\\d+)`` (rule set 0.5: names containing
   ``ProfilerStep``).  Fewer than two *distinct* marker names among the rank's host and GPU rows:
   no filtering.
3. Otherwise split the rows as HTA does: "GPU kernels" = ``gpu`` rows with ``stream >= 0`` and
   ``correlation >= 0``, plus rows named ``Event Sync`` / ``Context Sync``; "CPU events" = every
   other row (all ``host`` rows and the remaining ``gpu`` rows).  No CPU events: no filtering.
4. ``cutoff`` = the latest start of a CPU-event step marker (the start of the last step); a rank
   without markers falls back to its earliest CPU-event start (so it keeps no GPU kernel).
5. Keep CPU events that start before ``cutoff``, and GPU kernels whose ``correlation`` equals
   the correlation of a kept CPU event.  Everything launched in the last step, or never
   launched by a kept host call, is dropped.

    ==============================  =================  ======================
    row (2 ProfilerSteps, #1, #2)   launched           kept
    ==============================  =================  ======================
    kernel, correlation 10          in step #1         yes
    kernel, correlation 11          before step #1     yes
    kernel, correlation 12          in step #2 (last)  no
    kernel, correlation 13          no host call       no
    ==============================  =================  ======================

Deliberate differences from HTA (docs/metrics.md): step names are counted per rank (HTA counts
them over all ranks loaded together), and HTA's MTIA-only branch (taken when the trace metadata
says ``device_type: MTIA``, which no Kineto fixture does) is not reproduced.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from analyzers.classify import KERNEL_TYPES, MEMORY, MEMORY_KINDS, classify_name, rules
from analyzers.memo import TraceMemo
from analyzers.options import AnalysisOptions
from collectors.arrays import dense_codes, sorted_unique
from collectors.model import LAUNCH_CATS

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace

T = TypeVar("T")

DEVICE_SYNC_NAMES = ("Event Sync", "Context Sync")
"""Stream-less synchronization rows HTA counts as GPU kernels."""


@dataclass(frozen=True)
class Window:
    """Which part of a rank's trace the analyses cover.

    ``start_ns``/``end_ns`` bound the *launch* window on the trace clock: host calls starting
    in ``[start_ns, end_ns)`` are in it, and so are the GPU events they launched (which may run
    past ``end_ns``).  Without filtering the window is the whole trace, ``end_ns`` being the
    latest end of any row.  None when the trace has no rows at all.
    """

    filtered: bool
    """True when the ProfilerStep filter was applied."""
    start_ns: int | None
    end_ns: int | None
    steps: tuple[int, ...]
    """Numbers of the ProfilerSteps that start inside the window, in time order."""
    reason: str
    """Why the window is what it is (for the console)."""


@dataclass(frozen=True)
class _Selection:
    window: Window
    gpu_keep: np.ndarray
    """Boolean mask over ``trace.gpu`` rows: kept by the filter."""


_CACHE: dict[tuple[int, int, bool, str, bool], tuple[Any, Any, dict[str, Any]]] = {}
"""Per-trace results of live traces; an entry goes when its trace's table is collected."""
_CACHE_SIZE = 64


def memoized(trace: Trace, options: AnalysisOptions, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per (trace, window options, *name*); later calls reuse the result.

    Keyed by the identity of the trace's tables (never mutated) and the options that change
    the window, the kernel types or the step events (``all_events``, ``hta_version``,
    ``include_prelaunched``).  Results are dropped as soon as the trace's ``gpu`` table is
    garbage-collected.
    """
    key = (
        id(trace.gpu),
        id(trace.host),
        options.all_events,
        options.hta_version,
        options.include_prelaunched,
    )
    hit = _CACHE.get(key)
    if hit is None or hit[0]() is not trace.gpu or hit[1]() is not trace.host:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))

        def drop(_ref: object, k: tuple[int, int, bool, str, bool] = key) -> None:
            _CACHE.pop(k, None)

        hit = (weakref.ref(trace.gpu, drop), weakref.ref(trace.host), {})
        _CACHE[key] = hit
    results = hit[2]
    if name not in results:
        results[name] = compute()
    out: T = results[name]
    return out


def value_mask(col: pd.Series, values: Sequence[object]) -> np.ndarray:
    """``col.isin(values)`` as a boolean array, each category tested once for a categorical
    column (a missing value never matches)."""
    import pandas as pd

    if not isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.isin(list(values)), dtype=bool)
    hits = np.asarray(col.cat.categories.isin(list(values)), dtype=bool)
    return np.append(hits, False)[col.cat.codes.to_numpy()]


def value_bits(col: pd.Series, tests: Sequence[Callable[[str], object]]) -> np.ndarray:
    """Per row, bit k set when ``tests[k]`` holds for the row's value as ``str`` (each
    distinct value tested once, as :func:`collectors.model.names_matching` does; a missing
    value has no bit), int8: at most 7 tests."""
    import pandas as pd

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    per = [sum(1 << k for k, t in enumerate(tests) if t(str(c))) for c in cat.cat.categories]
    return np.array([*per, 0], dtype=np.int8)[cat.cat.codes.to_numpy()]


def _names_in(col: pd.Series, mask: np.ndarray) -> set[str]:
    import pandas as pd

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    codes = sorted_unique(cat.cat.codes.to_numpy()[mask])
    codes = codes[codes >= 0]
    return {str(c) for c in cat.cat.categories[codes]}


def _select(trace: Trace, options: AnalysisOptions) -> _Selection:
    gpu = trace.gpu
    host = trace.host
    g_start = gpu["start_ns"].to_numpy()
    h_start = host["start_ns"].to_numpy()
    starts = [int(x.min()) for x in (g_start, h_start) if x.size]
    ends = [int(x["end_ns"].to_numpy().max()) for x in (gpu, host) if len(x)]
    first = min(starts) if starts else None
    last = max(ends) if ends else None
    steps = trace.steps()

    def unfiltered(reason: str) -> _Selection:
        w = Window(False, first, last, tuple(int(s) for s in steps["step"]), reason)
        return _Selection(w, np.ones(len(gpu), dtype=bool))

    if options.all_events:
        return unfiltered("all events (--all-events)")
    from collectors.model import names_matching

    step_match = rules(options.hta_version).step.match
    g_step = names_matching(gpu["name"], step_match)
    h_step = names_matching(host["name"], step_match)
    n_names = len(_names_in(gpu["name"], g_step) | _names_in(host["name"], h_step))
    if n_names < 2:
        return unfiltered(
            f"all events ({n_names} ProfilerStep name{'s' if n_names != 1 else ''}; "
            "the step window needs at least 2)"
        )

    g_stream = gpu["stream"].to_numpy()
    g_corr = gpu["correlation"].to_numpy()
    g_kernel = ((g_stream >= 0) & (g_corr >= 0)) | value_mask(gpu["name"], DEVICE_SYNC_NAMES)
    g_cpu = ~g_kernel
    if not len(host) and not g_cpu.any():
        return unfiltered("all events (no host events to take the steps from)")

    step_starts = np.concatenate([h_start[h_step], g_start[g_cpu & g_step]])
    if step_starts.size:
        cutoff = int(step_starts.max())
    else:
        cutoff = int(np.concatenate([h_start, g_start[g_cpu]]).min())
    keep = (g_kernel & _launched_before(trace, cutoff, g_cpu)) | (g_cpu & (g_start < cutoff))
    in_window = steps["start_ns"].to_numpy() < cutoff
    w = Window(
        True,
        first,
        cutoff,
        tuple(int(s) for s in steps["step"].to_numpy()[in_window]),
        "complete ProfilerSteps (work launched before the last step starts)",
    )
    return _Selection(w, keep)


def _launched_before(trace: Trace, cutoff: int, g_cpu: np.ndarray) -> np.ndarray:
    """Per ``trace.gpu`` row: its correlation id is that of a host row starting before
    *cutoff*, or of a row of *g_cpu* (``trace.gpu`` rows counted as CPU events) starting before
    it (``np.isin`` of the ids against those rows' ids)."""
    g_corr = trace.gpu["correlation"].to_numpy()
    lo, hi = gpu_host_link(trace)
    out = (hi > lo) & (host_earliest_start(trace)[lo] < cutoff)  # ids ≥ 0 on the host
    h_corr = trace.host["correlation"].to_numpy()
    neg = g_corr < 0
    if neg.any():  # a negative id (-1: none) matches host rows with that id
        ids = sorted_unique(g_corr[neg])
        early = sorted_unique(h_corr[(h_corr < 0) & (trace.host["start_ns"].to_numpy() < cutoff)])
        out[neg] = _member(g_corr[neg], np.intersect1d(ids, early, assume_unique=True))
    g_start = trace.gpu["start_ns"].to_numpy()
    pool = sorted_unique(g_corr[g_cpu & (g_start < cutoff)])
    return out | _member(g_corr, pool)


def _member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)`` for a sorted array of distinct values *pool*."""
    if not pool.size:
        return np.zeros(values.size, dtype=bool)
    return pool[np.minimum(np.searchsorted(pool, values), pool.size - 1)] == values


@TraceMemo
def host_earliest_start(trace: Trace) -> np.ndarray:
    """Per position of :func:`host_by_correlation`, the earliest start of the host rows with
    that position's correlation id, and one more entry (past the end) of int64 max."""
    ids, rows = host_by_correlation(trace)
    out = np.full(ids.size + 1, np.iinfo(np.int64).max, dtype=np.int64)
    if ids.size:
        first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        earliest = np.minimum.reduceat(trace.host["start_ns"].to_numpy()[rows], first)
        out[:-1] = np.repeat(earliest, np.diff(np.r_[first, ids.size]))
    return out


def _selection(trace: Trace, options: AnalysisOptions) -> _Selection:
    return memoized(trace, options, "window", lambda: _select(trace, options))


def window(trace: Trace, options: AnalysisOptions | None = None) -> Window:
    """The analysis window of *trace* (see the module docstring)."""
    return _selection(trace, options or AnalysisOptions()).window


def window_rows(trace: Trace, options: AnalysisOptions | None = None) -> np.ndarray:
    """Positions in ``trace.gpu`` of the window's GPU events (the rows of :func:`gpu_events`),
    ascending; memoised per (trace, window options).  Do not modify."""
    opts = options or AnalysisOptions()

    def select() -> np.ndarray:
        mask = _selection(trace, opts).gpu_keep & (trace.gpu["stream"].to_numpy() != -1)
        return np.flatnonzero(mask)

    return memoized(trace, opts, "window_rows", select)


def gpu_events(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """GPU events of the window: ``trace.gpu`` rows with ``stream != -1`` kept by the filter.

    The rows keep ``trace.gpu``'s columns and index (so callers can join back).  Selected once
    per (trace, window options) (:func:`memoized`; a dozen sections ask, and each selection
    copies the rows); each call returns its own shallow copy, so a caller adding a column
    changes only its copy.
    """
    opts = options or AnalysisOptions()

    def select() -> pd.DataFrame:
        return trace.gpu.take(window_rows(trace, opts))

    return memoized(trace, opts, "gpu_events", select).copy(deep=False)


@TraceMemo
def host_threads(trace: Trace) -> np.ndarray:
    """A dense code per ``trace.host`` row of its ``(pid, tid)`` thread, in order of first
    appearance: two rows have the same code exactly when their ``pid`` and ``tid`` are equal;
    once per Trace (read-only)."""
    import pandas as pd  # the module is imported without pandas (type hints only)

    h = trace.host
    if not len(h):
        codes = np.zeros(0, dtype=np.int64)
    else:
        pid, tid = h["pid"].to_numpy(), h["tid"].to_numpy()
        p0, t0 = int(pid.min()), int(tid.min())
        span = int(tid.max()) - t0 + 1
        if (int(pid.max()) - p0 + 1) * span < 2**62:  # one key per (pid, tid) fits in int64
            codes = pd.factorize((pid - p0) * span + (tid - t0))[0].astype(np.int64)
        else:
            cp, _ = pd.factorize(pid)
            ct, ut = pd.factorize(tid)
            codes = dense_codes(cp.astype(np.int64) * max(len(ut), 1) + ct)
    codes.flags.writeable = False
    return codes


@TraceMemo
def host_by_correlation(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Host rows with a correlation id ≥ 0: the ids sorted, and the rows in that order (table
    order within an id); once per Trace (do not modify)."""
    c = trace.host["correlation"].to_numpy()
    rows = np.flatnonzero(c >= 0)
    order = np.argsort(c[rows], kind="stable")
    return c[rows][order], rows[order]


@TraceMemo
def gpu_host_link(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per ``trace.gpu`` row, the range ``[lo, hi)`` of :func:`host_by_correlation` holding the
    host rows with its correlation id (empty for none); once per Trace (do not modify)."""
    ids, _ = host_by_correlation(trace)
    q = trace.gpu["correlation"].to_numpy()
    return np.searchsorted(ids, q, side="left"), np.searchsorted(ids, q, side="right")


@TraceMemo
def host_launch_mask(trace: Trace) -> np.ndarray:
    """The host rows of a device-API category (:data:`collectors.model.LAUNCH_CATS`)."""
    return value_mask(trace.host["cat"], LAUNCH_CATS)


@TraceMemo
def gpu_launch_rows(trace: Trace) -> np.ndarray:
    """:func:`collectors.linking.launching_calls` of every ``trace.gpu`` row (the position in
    ``trace.host`` of the call that launched it, or -1: among the device-API calls with its
    correlation id, the earliest, then the first in table order), from
    :func:`gpu_host_link`; once per Trace (do not modify)."""
    lo, hi = gpu_host_link(trace)
    rows = host_by_correlation(trace)[1]
    is_launch = host_launch_mask(trace)
    out = np.full(lo.size, -1, dtype=np.int64)
    one = np.flatnonzero(hi - lo == 1)
    r = rows[lo[one]]
    out[one] = np.where(is_launch[r], r, -1)
    many = np.flatnonzero(hi - lo > 1)
    if many.size:  # several host rows share the id (never seen in real traces)
        n = (hi - lo)[many]
        owner = np.repeat(many, n)
        cand = rows[np.repeat(lo[many], n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))]
        owner, cand = owner[is_launch[cand]], cand[is_launch[cand]]
        o = np.lexsort((cand, trace.host["start_ns"].to_numpy()[cand], owner))
        owner, cand = owner[o], cand[o]
        first = np.r_[True, owner[1:] != owner[:-1]] if owner.size else owner.astype(bool)
        out[owner[first]] = cand[first]
    return out


def gpu_type_codes(trace: Trace, options: AnalysisOptions | None = None) -> np.ndarray:
    """Kernel type of every ``trace.gpu`` row as an index into
    :data:`analyzers.classify.KERNEL_TYPES` (int8): :func:`analyzers.classify.classify` of the
    name and kind columns under ``options.hta_version``, each distinct name matched once;
    memoised (do not modify)."""
    import pandas as pd

    opts = options or AnalysisOptions()

    def codes() -> np.ndarray:
        names = trace.gpu["name"]
        cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
        labels = [str(c) for c in cat.cat.categories]
        per_name = np.array(
            [KERNEL_TYPES.index(classify_name(n, opts.hta_version)) for n in labels]
            + [KERNEL_TYPES.index(classify_name(None, opts.hta_version))],
            dtype=np.int8,
        )
        out = per_name[cat.cat.codes.to_numpy()]
        if len(out):
            out[np.asarray(trace.gpu["kind"].isin(MEMORY_KINDS))] = KERNEL_TYPES.index(MEMORY)
        return out

    return memoized(trace, opts, "gpu_type_codes", codes)
