"""Host-bound detection: per step and per rank, is the GPU waiting for the CPU, for the network,
or busy?  Definitions (``docs/idle-and-launch.md``):

- steps = the window's ProfilerSteps (:func:`analyzers.steps.step_breakdown`, which also gives
  ``duration_ns``, ``compute_ns``, ``exposed_comm_ns`` and ``idle_ns``);
- ``host_wait_ns`` = GPU-wide ``host_wait`` gap time (:func:`analyzers.idle.gpu_idle_gaps`:
  no stream busy, and the op that ends the gap was launched after the gap began) inside the
  step's ``[start, end)``;
- shares: ``host_share = host_wait_ns / duration_ns``,
  ``comm_share = exposed_comm_ns / duration_ns``;
- verdict: among ``host-bound`` (``host_share > host_threshold``) and
  ``communication-bound`` (``comm_share > comm_threshold``) the one with the larger share
  (``host-bound`` on a tie); ``GPU-bound`` when neither exceeds its threshold;
- a step with no GPU activity at all gets no verdict (None), nor does a rank without GPU
  events in the window;
- per rank: the same rule on the sums over the steps (with no steps: over the GPU span, using
  the whole-window host wait and exposed communication);
- responsible CPU ops of a step: the top-level host operators (Kineto ``cpu_op`` and
  ``record_function`` ranges, not the step marker; top-level = not inside an earlier one on
  the same thread) of the launching threads, ranked by their overlap with the step's host-wait
  time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.idle import (
    CPU_ACTIVITIES,
    STEP_MARKER,
    attribute_idle,
    gpu_idle_gaps,
    host_activity_intervals,
    launch_threads,
    name_mask,
    window_gpu,
)
from analyzers.options import AnalysisOptions
from analyzers.steps import STEP_COLUMNS, step_breakdown
from analyzers.temporal import overlap
from collectors.model import LAUNCH_CATS, Trace

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
    gaps = gpu_idle_gaps(trace, options)
    hw = gaps[gaps["category"] == "host_wait"]
    return hw["start_ns"].to_numpy(dtype=np.int64), hw["end_ns"].to_numpy(dtype=np.int64)


def top_level_ops(host: pd.DataFrame) -> pd.DataFrame:
    """Host operators/ranges not nested in an earlier one on the same (pid, tid).

    Candidates are non-API host rows other than ``python_function`` events and step markers.
    """
    api = np.asarray(host["cat"].isin(LAUNCH_CATS), dtype=bool)
    py = np.asarray(host["cat"] == "python_function", dtype=bool)
    step = name_mask(host["name"], STEP_MARKER)
    h = host[~api & ~py & ~step]
    if h.empty:
        return h
    h = h.sort_values(["pid", "tid", "start_ns", "end_ns"], ascending=[True, True, True, False])
    e = h["end_ns"].to_numpy()
    s = h["start_ns"].to_numpy()
    same = (h["pid"].to_numpy()[1:] == h["pid"].to_numpy()[:-1]) & (
        h["tid"].to_numpy()[1:] == h["tid"].to_numpy()[:-1]
    )
    # running max end within each thread
    grp = np.concatenate([[0], np.cumsum(~same)])
    run = pd.Series(e).groupby(grp).cummax().to_numpy()
    top = np.ones(len(h), dtype=bool)
    top[1:] = ~same | (s[1:] >= run[:-1])
    return h[top]


def responsible_ops(
    ops: pd.DataFrame, wait: iv.Intervals, lo: int, hi: int, top: int = TOP_OPS
) -> list[tuple[str, int]]:
    """(name, overlap ns) of the *ops* overlapping *wait* ∩ [lo, hi), largest first.

    Overlaps of several calls of one name are added.
    """
    w = iv.clip(wait, lo, hi)
    if w[0].size == 0 or ops.empty:
        return []
    s = ops["start_ns"].to_numpy()
    e = ops["end_ns"].to_numpy()
    cand = (s < hi) & (e > lo)
    if not cand.any():
        return []
    sub = ops[cand]
    cov = iv.covered_in_windows(w, sub["start_ns"].to_numpy(), sub["end_ns"].to_numpy())
    by = pd.Series(cov, index=sub["name"].astype(str).to_numpy()).groupby(level=0).sum()
    by = by[by > 0].sort_values(ascending=False, kind="stable")
    return [(str(k), int(v)) for k, v in by.head(top).items()]


STEP_VERDICT_COLUMNS = (
    *STEP_COLUMNS,
    "host_wait_ns",
    "host_share",
    "comm_share",
    "verdict",
    "host_wait_by_activity",
    "top_ops",
)


def step_verdicts(
    trace: Trace,
    options: AnalysisOptions | None = None,
    *,
    host_threshold: float = HOST_THRESHOLD,
    comm_threshold: float = COMM_THRESHOLD,
) -> pd.DataFrame:
    """One row per window step, columns :data:`STEP_VERDICT_COLUMNS`.

    ``host_wait_by_activity`` is a dict (:data:`analyzers.idle.CPU_ACTIVITIES` → ns) of the
    step's host-wait time; ``top_ops`` a list of (name, ns) (:func:`responsible_ops`).
    """
    options = options or AnalysisOptions()
    sb = step_breakdown(trace, options)
    wait = _host_wait(trace, options)
    lo = sb["start_ns"].to_numpy(dtype=np.int64)
    hi = sb["end_ns"].to_numpy(dtype=np.int64)
    hw = iv.covered_in_windows(wait, lo, hi) if len(sb) else np.zeros(0, dtype=np.int64)
    g = window_gpu(trace, options)
    host = launch_threads(trace, g)
    acts = host_activity_intervals(trace, host)
    ops = top_level_ops(host)
    dur = sb["duration_ns"].to_numpy(dtype=np.int64)
    safe = np.where(dur > 0, dur, 1)
    hs = np.where(dur > 0, hw / safe, 0.0)
    cs = np.where(dur > 0, sb["exposed_comm_ns"].to_numpy() / safe, 0.0)
    windows = list(zip(lo.tolist(), hi.tolist(), strict=True))
    by_act: list[Any] = [attribute_idle(iv.clip(wait, a, b), acts) for a, b in windows]
    tops: list[Any] = [responsible_ops(ops, wait, a, b) for a, b in windows]
    out = sb[["step", "start_ns", "end_ns", "duration_ns", "compute_ns", "exposed_comm_ns"]].copy()
    out["idle_ns"] = sb["idle_ns"].to_numpy()
    out["host_wait_ns"] = hw.astype(np.int64)
    out["host_share"] = hs
    out["comm_share"] = cs
    no_gpu = (sb["idle_ns"].to_numpy() == dur).tolist()
    shares = zip(hs.tolist(), cs.tolist(), no_gpu, strict=True)
    out["verdict"] = [
        None if empty else verdict(h, c, host_threshold, comm_threshold) for h, c, empty in shares
    ]
    out["host_wait_by_activity"] = by_act
    out["top_ops"] = tops
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class RankVerdict:
    """The rank's verdict over its window steps (or its GPU span when it has none)."""

    verdict: str | None
    """None when the rank has no GPU work in the window."""
    basis: str
    """``steps`` or ``gpu span``."""
    duration_ns: int
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
        dur = int(steps["duration_ns"].sum())
        hw = int(steps["host_wait_ns"].sum())
        ec = int(steps["exposed_comm_ns"].sum())
        acts = {a: int(sum(d[a] for d in steps["host_wait_by_activity"])) for a in CPU_ACTIVITIES}
        basis = "steps"
    else:
        g = window_gpu(trace, options)
        wait = _host_wait(trace, options)
        dur = 0 if g.empty else int(g["end_ns"].max() - g["start_ns"].min())
        hw = iv.total(wait)
        ec = overlap(trace, options).exposed_comm_ns
        acts = attribute_idle(wait, host_activity_intervals(trace, launch_threads(trace, g)))
        basis = "gpu span"
    hs = hw / dur if dur > 0 else 0.0
    cs = ec / dur if dur > 0 else 0.0
    has_gpu = not window_gpu(trace, options).empty
    v = verdict(hs, cs, host_threshold, comm_threshold) if dur > 0 and has_gpu else None
    return RankVerdict(v, basis, dur, hw, ec, hs, cs, counts, acts)
