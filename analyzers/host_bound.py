"""Host-bound detection: per step and per rank, is the GPU waiting for the CPU, for the network,
or busy?  Definitions (``docs/idle-and-launch.md`` §3):

- steps = the window's ProfilerSteps on the GPU clock (:func:`analyzers.steps.step_breakdown`:
  each step's interval ``[gpu_start, gpu_end)``, ``gpu_duration_ns``, ``compute_ns``,
  ``exposed_comm_ns``, ``idle_ns`` over the GPU work the step launched);
- ``host_wait_ns`` = the ``host_wait`` gaps of the step events' busy union
  (:func:`analyzers.idle.gap_arrays` over the step events :class:`analyzers.steps.StepEvents`: no
  stream busy, and the op that ends the gap was launched after the gap began) inside the
  step's interval;
- shares: ``host_share = host_wait_ns / gpu_duration_ns``,
  ``comm_share = exposed_comm_ns / gpu_duration_ns``;
- verdict: among ``host-bound`` (``host_share > host_threshold``) and
  ``communication-bound`` (``comm_share > comm_threshold``) the one with the larger share
  (``host-bound`` on a tie); ``GPU-bound`` when neither exceeds its threshold;
- a step with no GPU work gets no verdict (None); nor does any step of a graph-capture trace
  (:mod:`analyzers.integrity`: the captured work did not run), nor a rank without GPU events
  in the window, nor a capture trace's rank (basis ``capture trace``);
- per rank: the same rule on the sums over the steps (with no steps: over the GPU span, using
  the whole-window host wait and exposed communication);
- responsible CPU ops of a step: the top-level host operators (Kineto ``cpu_op`` and
  ``record_function`` ranges, not the step marker; top-level = not inside an earlier one on
  the same thread) of the launching threads, ranked by their overlap with the step's host-wait
  time (names ascending on ties).

All steps are computed at once: the host-wait time is split by CPU activity and by operator
over every step's interval with one sweep each (no loop over steps).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.idle import (
    CPU_ACTIVITIES,
    STEP_MARKER,
    activity_masks,
    activity_sets,
    attribute_by_window,
    attribute_idle,
    gap_arrays,
    gpu_idle_gaps,
    host_cache,
    launching_threads,
    thread_rows,
)
from analyzers.options import AnalysisOptions
from analyzers.steps import STEP_COLUMNS, step_breakdown, step_events
from analyzers.temporal import overlap
from analyzers.window import host_threads, window_rows
from collectors.arrays import sorted_unique
from collectors.linking import group_codes
from collectors.model import LAUNCH_CATS, Trace, names_matching

HOST_BOUND = "host-bound"
GPU_BOUND = "GPU-bound"
COMM_BOUND = "communication-bound"
VERDICTS = (HOST_BOUND, COMM_BOUND, GPU_BOUND)

HOST_THRESHOLD = 0.10
"""Default: a step is host-bound when host wait exceeds 10 % of its duration."""
COMM_THRESHOLD = 0.10
"""Default: a step is communication-bound when exposed communication exceeds 10 %."""
TOP_OPS = 5
"""Responsible ops listed per step."""


def verdict(
    host_share: float,
    comm_share: float,
    host_threshold: float = HOST_THRESHOLD,
    comm_threshold: float = COMM_THRESHOLD,
) -> str:
    """The verdict rule of the module docstring."""
    host = host_share > host_threshold
    comm = comm_share > comm_threshold
    if host and (not comm or host_share >= comm_share):
        return HOST_BOUND
    if comm:
        return COMM_BOUND
    return GPU_BOUND


def _host_wait(trace: Trace, options: AnalysisOptions) -> iv.Intervals:
    """The window's GPU-wide host-wait gaps (the rank view without steps)."""
    return _waits(gpu_idle_gaps(trace, options))


def _waits(gaps: pd.DataFrame) -> iv.Intervals:
    hw = gaps[gaps["category"] == "host_wait"]
    return hw["start_ns"].to_numpy(dtype=np.int64), hw["end_ns"].to_numpy(dtype=np.int64)


def step_host_wait(trace: Trace, options: AnalysisOptions) -> iv.Intervals:
    """The host-wait gaps of the step events' busy union (module docstring)."""
    se = step_events(trace, options)
    gap_s, gap_e, _, cat = gap_arrays(trace, se.rows, se.busy, options)
    return gap_s[cat == 0], gap_e[cat == 0]


def attribute_idle_by_window(
    idle: iv.Intervals, activity: dict[str, iv.Intervals], lo: np.ndarray, hi: np.ndarray
) -> dict[str, np.ndarray]:
    """:func:`analyzers.idle.attribute_idle` of *idle* ∩ each window ``[lo[i], hi[i])``, for
    all windows at once: activity → ns per window."""
    return attribute_by_window(idle, activity, np.asarray(lo), np.asarray(hi))


def top_level_ops(host: pd.DataFrame) -> pd.DataFrame:
    """Host operators/ranges not nested in an earlier one on the same (pid, tid).

    Candidates are non-API host rows other than ``python_function`` events and step markers.
    """
    api = np.asarray(host["cat"].isin(LAUNCH_CATS), dtype=bool)
    py = np.asarray(host["cat"] == "python_function", dtype=bool)
    step = names_matching(host["name"], STEP_MARKER.search)
    h = host[~api & ~py & ~step]
    if h.empty:
        return h
    thread = group_codes((h["pid"].to_numpy(), h["tid"].to_numpy()), None)[0]
    top = _top_level(thread, h["start_ns"].to_numpy(), h["end_ns"].to_numpy())
    return h.take(top)


def _top_level(thread: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Positions of the top-level ranges (module docstring) in (thread, start, end descending,
    position) order: a range is top-level when it starts at or after the latest end of the
    ranges before it on its thread."""
    order = _thread_start_order(thread, s, e)
    th, s, e = thread[order], s[order], e[order]
    bounds = np.flatnonzero(np.r_[True, th[1:] != th[:-1], True]) if th.size else th
    top = np.ones(order.size, dtype=bool)
    for b0, b1 in itertools.pairwise(bounds.tolist()):
        top[b0 + 1 : b1] = s[b0 + 1 : b1] >= np.maximum.accumulate(e[b0 : b1 - 1])
    return order[top]


def _thread_start_order(thread: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``np.lexsort((-e, s, thread))`` from sorts that suit ranges in near time order: by
    start (stable), then by thread (a stable sort of small codes), then the runs of equal
    (thread, start) by end descending, position."""
    order = np.argsort(s, kind="stable")
    small = thread.astype(np.int16) if thread.size and int(thread.max()) < 2**15 else thread
    order = order[np.argsort(small[order], kind="stable")]
    th, ss = thread[order], s[order]
    tie = np.flatnonzero((th[1:] == th[:-1]) & (ss[1:] == ss[:-1]))
    if tie.size:
        at = sorted_unique(np.r_[tie, tie + 1])
        sub = order[at]
        order[at] = sub[np.lexsort((sub, -e[sub], s[sub], thread[sub]))]
    return order


def top_level_rows(trace: Trace, threads: np.ndarray | None) -> np.ndarray:
    """Positions in ``trace.host`` of :func:`top_level_ops` of the rows on *threads*
    (:func:`analyzers.idle.launching_threads`; memoised per set)."""
    key = ("top", None if threads is None else threads.tobytes())
    cache = host_cache(trace)
    if key not in cache:
        host = trace.host
        cand = activity_masks(trace)["op_candidate"] & thread_rows(trace, threads)
        r = np.flatnonzero(cand)
        s = host["start_ns"].to_numpy()[r]
        e = host["end_ns"].to_numpy()[r]
        cache[key] = r[_top_level(host_threads(trace)[r], s, e)]
    return np.asarray(cache[key])


def responsible_ops(
    ops: pd.DataFrame, wait: iv.Intervals, lo: int, hi: int, top: int = TOP_OPS
) -> list[tuple[str, int]]:
    """(name, overlap ns) of the *ops* overlapping *wait* ∩ [lo, hi), largest first.

    Overlaps of several calls of one name are added.
    """
    return responsible_ops_by_window(ops, wait, np.array([lo]), np.array([hi]), top)[0]


def responsible_ops_by_window(
    ops: pd.DataFrame, wait: iv.Intervals, lo: np.ndarray, hi: np.ndarray, top: int = TOP_OPS
) -> list[list[tuple[str, int]]]:
    """:func:`responsible_ops` for every window ``[lo[i], hi[i])`` at once (windows sorted and
    disjoint, as the steps on the GPU clock are): each op is cut at the window bounds and
    each piece's overlap with *wait* measured in one pass."""
    names = ops["name"]
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    return _responsible(
        ops["start_ns"].to_numpy(dtype=np.int64),
        ops["end_ns"].to_numpy(dtype=np.int64),
        cat.cat.codes.to_numpy(),
        [str(c) for c in cat.cat.categories],
        wait,
        lo,
        hi,
        top,
    )


def _responsible(
    s: np.ndarray,
    e: np.ndarray,
    codes: np.ndarray,
    labels: list[str],
    wait: iv.Intervals,
    lo: np.ndarray,
    hi: np.ndarray,
    top: int,
) -> list[list[tuple[str, int]]]:
    """:func:`responsible_ops_by_window` of ops given as starts, ends and name codes into
    *labels* (-1: a missing name, ``nan`` as ``astype(str)`` writes it)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out: list[list[tuple[str, int]]] = [[] for _ in range(lo.size)]
    if not s.size or not lo.size or not iv.merge(*wait)[0].size:
        return out
    live = hi > lo
    wl, wh, wk = lo[live], hi[live], np.flatnonzero(live)
    k0 = np.searchsorted(wh, s, side="right")
    k1 = np.searchsorted(wl, e, side="left")
    n = np.maximum(k1 - k0, 0)
    op = np.repeat(np.arange(s.size), n)
    k = np.repeat(k0, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    if not op.size:
        return out
    cov = iv.covered_in_windows(wait, np.maximum(s[op], wl[k]), np.minimum(e[op], wh[k]))
    nz = cov != 0
    op, k, cov = op[nz], k[nz], cov[nz].astype(np.int64)
    # one id per distinct name string (a category spelled "nan" is the missing name's)
    text = [*labels, "nan"]
    ids: dict[str, int] = {}
    name_id = np.array([ids.setdefault(t, len(ids)) for t in text], dtype=np.int64)
    key = wk[k] * len(ids) + name_id[codes[op]]
    order = np.argsort(key, kind="stable")
    key, cov = key[order], cov[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
    ns = np.add.reduceat(cov, first) if key.size else cov
    gk, gname = key[first] // len(ids), key[first] % len(ids)
    pos = ns > 0
    gk, gname, ns = gk[pos], gname[pos], ns[pos]
    by_id = list(ids)
    present = sorted_unique(gname)
    rank = np.zeros(len(ids), dtype=np.int64)
    rank[present[np.argsort(np.array([by_id[i] for i in present], dtype=object))]] = np.arange(
        present.size
    )
    o = np.lexsort((rank[gname], -ns, gk))
    for kk, nm, v in zip(gk[o].tolist(), gname[o].tolist(), ns[o].tolist(), strict=True):
        if len(out[kk]) < top:
            out[kk].append((by_id[nm], int(v)))
    return out


STEP_VERDICT_COLUMNS = (
    *STEP_COLUMNS,
    "host_wait_ns",
    "host_share",
    "comm_share",
    "verdict",
    "host_wait_by_activity",
    "top_ops",
)


def _is_capture(trace: Trace, options: AnalysisOptions) -> bool:
    from analyzers.integrity import integrity

    return integrity(trace, options).capture


def step_verdicts(
    trace: Trace,
    options: AnalysisOptions | None = None,
    *,
    host_threshold: float = HOST_THRESHOLD,
    comm_threshold: float = COMM_THRESHOLD,
) -> pd.DataFrame:
    """One row per window step, columns :data:`STEP_VERDICT_COLUMNS`.

    ``host_wait_by_activity`` is a dict (:data:`analyzers.idle.CPU_ACTIVITIES` → ns) of the
    step's host-wait time; ``top_ops`` a list of (name, ns) (:func:`responsible_ops`);
    ``verdict`` a str or None (object dtype, never NaN).
    """
    options = options or AnalysisOptions()
    sb = step_breakdown(trace, options)
    wait = step_host_wait(trace, options)
    has = sb["gpu_start_ns"].to_numpy() >= 0
    lo = np.where(has, sb["gpu_start_ns"].to_numpy(dtype=np.int64), 0)
    hi = np.where(has, sb["gpu_end_ns"].to_numpy(dtype=np.int64), 0)
    hw = iv.covered_in_windows(wait, lo, hi) if len(sb) else np.zeros(0, dtype=np.int64)
    threads = launching_threads(trace, step_events(trace, options).rows)
    acts = activity_sets(trace, threads)
    dur = sb["gpu_duration_ns"].to_numpy(dtype=np.int64)
    safe = np.where(dur > 0, dur, 1)
    hs = np.where(dur > 0, hw / safe, 0.0)
    cs = np.where(dur > 0, sb["exposed_comm_ns"].to_numpy() / safe, 0.0)
    by_act = attribute_idle_by_window(wait, acts, lo, hi)
    out = sb.copy()
    out["host_wait_ns"] = hw.astype(np.int64)
    out["host_share"] = hs.astype(np.float64)
    out["comm_share"] = cs.astype(np.float64)
    no_verdict = (~has | (dur <= 0)).tolist()
    capture = _is_capture(trace, options)
    verdicts = np.empty(len(sb), dtype=object)
    verdicts[:] = [
        None if empty or capture else verdict(h, c, host_threshold, comm_threshold)
        for h, c, empty in zip(hs.tolist(), cs.tolist(), no_verdict, strict=True)
    ]
    out["verdict"] = pd.Series(verdicts, index=out.index, dtype=object)
    acts_rows = np.empty(len(sb), dtype=object)
    acts_rows[:] = [{a: int(by_act[a][i]) for a in CPU_ACTIVITIES} for i in range(len(sb))]
    out["host_wait_by_activity"] = pd.Series(acts_rows, index=out.index, dtype=object)
    tops = np.empty(len(sb), dtype=object)
    ops = top_level_rows(trace, threads)
    name = trace.host["name"]
    cat = name if isinstance(name.dtype, pd.CategoricalDtype) else name.astype("category")
    tops[:] = _responsible(
        trace.host["start_ns"].to_numpy()[ops],
        trace.host["end_ns"].to_numpy()[ops],
        cat.cat.codes.to_numpy()[ops],
        [str(c) for c in cat.cat.categories],
        wait,
        lo,
        hi,
        TOP_OPS,
    )
    out["top_ops"] = pd.Series(tops, index=out.index, dtype=object)
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class RankVerdict:
    """The rank's verdict over its window steps (or its GPU span when it has none)."""

    verdict: str | None
    """None when the rank has no GPU work in the window, or is a graph-capture trace."""
    basis: str
    """``steps``, ``gpu span`` or ``capture trace``."""
    duration_ns: int
    """What the shares are of: Σ of the steps' ``gpu_duration_ns``, or the GPU span."""
    host_wait_ns: int
    exposed_comm_ns: int
    host_share: float
    comm_share: float
    steps_by_verdict: dict[str, int]
    host_wait_by_activity: dict[str, int]


def rank_verdict(
    trace: Trace,
    options: AnalysisOptions | None = None,
    steps: pd.DataFrame | None = None,
    *,
    host_threshold: float = HOST_THRESHOLD,
    comm_threshold: float = COMM_THRESHOLD,
) -> RankVerdict:
    """Verdict of the rank (pass *steps* from :func:`step_verdicts` to avoid recomputing)."""
    options = options or AnalysisOptions()
    if steps is None:
        steps = step_verdicts(
            trace, options, host_threshold=host_threshold, comm_threshold=comm_threshold
        )
    counts = {v: int((steps["verdict"] == v).sum()) for v in VERDICTS}
    if len(steps):
        dur = int(steps["gpu_duration_ns"].sum())
        hw = int(steps["host_wait_ns"].sum())
        ec = int(steps["exposed_comm_ns"].sum())
        acts = {a: int(sum(d[a] for d in steps["host_wait_by_activity"])) for a in CPU_ACTIVITIES}
        basis = "steps"
    else:
        rows = window_rows(trace, options)
        wait = _host_wait(trace, options)
        g_s = trace.gpu["start_ns"].to_numpy()[rows]
        g_e = trace.gpu["end_ns"].to_numpy()[rows]
        dur = int(g_e.max() - g_s.min()) if rows.size else 0
        hw = iv.total(wait)
        ec = overlap(trace, options).exposed_comm_ns
        acts = attribute_idle(wait, activity_sets(trace, launching_threads(trace, rows)))
        basis = "gpu span"
    hs = hw / dur if dur > 0 else 0.0
    cs = ec / dur if dur > 0 else 0.0
    has_gpu = bool(window_rows(trace, options).size)
    v = verdict(hs, cs, host_threshold, comm_threshold) if dur > 0 and has_gpu else None
    if _is_capture(trace, options):
        v, basis = None, "capture trace"
    return RankVerdict(v, basis, dur, hw, ec, hs, cs, counts, acts)
