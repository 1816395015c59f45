"""The host call stack around launched GPU work, computed once per Trace (:mod:`analyzers.memo`)
and shared by the roofline's op attribution and the serving rows (read-only arrays).

* :func:`cpu_op_parents` — each ``cpu_op`` row's innermost enclosing ``cpu_op``;
* :func:`gpu_launch_calls` — each GPU row's launching call (same correlation id; the window's
  memoised index);
* :func:`call_parents` — each GPU row's innermost ``cpu_op`` at its launching call's start.

The stack on each thread follows :mod:`collectors.linking`: half-open ``[start, end)``, an
op's parent ordered before it (start, then end descending, then row).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.memo import memoised
from analyzers.window import gpu_launch_rows, host_threads
from collectors.arrays import sorted_unique
from collectors.linking import enclosing_parents, innermost_range
from collectors.model import Trace


def cpu_op_rows(host: pd.DataFrame) -> np.ndarray:
    """Positions of the ``cpu_op`` rows of a host table."""
    return np.flatnonzero(np.asarray(host["cat"] == "cpu_op", dtype=bool))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@memoised
def cpu_op_parents(trace: Trace) -> np.ndarray:
    """Innermost enclosing CPU op (host row position, -1 none) of every ``cpu_op`` row of
    *trace*, as a read-only array over the host rows (-1 for the other rows); memoised (the
    roofline's and the serving section's attributions both walk it)."""
    host = trace.host
    ops = cpu_op_rows(host)
    start, end = host["start_ns"].to_numpy()[ops], host["end_ns"].to_numpy()[ops]
    pos = enclosing_parents(start, end, host_threads(trace)[ops])
    parent = np.full(len(host), -1, dtype=np.int64)
    parent[ops] = np.where(pos >= 0, ops[np.maximum(pos, 0)], -1)
    return _read_only(parent)


def gpu_launch_calls(trace: Trace) -> np.ndarray:
    """Per ``gpu`` row, the host row of its launching call, or -1: the earliest call of a
    launch category with the row's correlation id, then the first in table order
    (:func:`collectors.linking.launching_calls`); the memoised correlation index the window,
    steps, idle and launch analyses share (:func:`analyzers.window.gpu_launch_rows`; do not
    modify)."""
    return gpu_launch_rows(trace)


@memoised
def call_parents(trace: Trace) -> np.ndarray:
    """Per ``gpu`` row, the innermost ``cpu_op`` (any, ``ProfilerStep#*`` included) running at
    its launching call's start on the call's thread (:func:`collectors.linking.innermost_range`,
    half-open), as a host row; -1 without a call or an op.  Each distinct call is looked up
    once."""
    calls = gpu_launch_calls(trace)
    host = trace.host
    ops = cpu_op_rows(host)
    out = np.full(len(calls), -1, dtype=np.int64)
    has = calls >= 0
    if not len(ops) or not has.any():
        return _read_only(out)
    q = sorted_unique(calls[has])
    threads = host_threads(trace)
    start, end = host["start_ns"].to_numpy(), host["end_ns"].to_numpy()
    ops = _holding(ops, q, start, end, threads)
    if not len(ops):  # no op holds a call
        return _read_only(out)
    pos = innermost_range(start[ops], end[ops], threads[ops], start[q], threads[q])
    at_call = np.where(pos >= 0, ops[np.maximum(pos, 0)], -1)
    out[has] = at_call[np.searchsorted(q, calls[has])]
    return _read_only(out)


def _holding(
    ops: np.ndarray, q: np.ndarray, start: np.ndarray, end: np.ndarray, threads: np.ndarray
) -> np.ndarray:
    """The op rows whose ``[start, end)`` holds the start of some call of *q* on their own
    thread (in table order): the only ones that can be the innermost op at a call, so the
    look-up over them alone gives the same answer.  All of *ops* when the (thread, time) keys
    could overflow."""
    lo = int(min(start[ops].min(), start[q].min()))
    span = int(max(end[ops].max(), start[q].max())) - lo + 1
    if (int(threads.max(initial=0)) + 1) * span >= 2**62:
        return ops
    base = threads[ops] * span - lo
    at = np.sort(threads[q] * span + start[q] - lo)
    first = np.searchsorted(at, base + start[ops], side="left")
    return ops[np.searchsorted(at, base + end[ops], side="left") > first]


__all__ = ["call_parents", "cpu_op_parents", "cpu_op_rows", "gpu_launch_calls"]
