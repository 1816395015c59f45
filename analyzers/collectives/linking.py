"""Which op, annotation and NVTX range launched each GPU row of the collectives table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.window import host_by_correlation
from collectors.linking import innermost_range
from collectors.nccl_formulas import canonical_collective

if TYPE_CHECKING:
    from collectors.model import Trace


def innermost(ranges: pd.DataFrame, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index label of the innermost range of *ranges* on (pid, tid) containing time t; -1 none.

    *ranges* has columns pid, tid, start_ns, end_ns (index = labels to return).  Containment is
    inclusive at both ends (:func:`collectors.linking.innermost_range` with ``include_end``),
    as this table has always linked: a launch stamped exactly at its range's end still belongs
    to it.  Compare's op view and op cost attribution use the half-open ``[start, end)`` of the
    profiler's call stack instead; the difference is kept so that no table changes.
    """
    out = np.full(len(t), -1, dtype=np.int64)
    if ranges.empty or not len(t):
        return out
    pos = innermost_range(
        ranges["start_ns"].to_numpy(dtype=np.int64),
        ranges["end_ns"].to_numpy(dtype=np.int64),
        (ranges["pid"].to_numpy(), ranges["tid"].to_numpy()),
        t,
        (pid, tid),
        include_end=True,
    )
    hit = pos >= 0
    out[hit] = ranges.index.to_numpy()[pos[hit]]
    return out


def launches(trace: Trace, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pid, tid, start_ns) of the host call with each correlation id (-1 where none)."""
    h = trace.host
    n = len(corr)
    pid = np.full(n, -1, np.int64)
    tid = np.full(n, -1, np.int64)
    start = np.full(n, -1, np.int64)
    if h.empty or not n:
        return pid, tid, start
    ids, rows = host_by_correlation(trace)
    if not ids.size:
        return pid, tid, start
    # the first host row (table order) with each correlation id
    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ids, rows = ids[first], rows[first]
    at = np.minimum(np.searchsorted(ids, corr), len(ids) - 1)
    known = ids[at] == corr
    pid[known] = h["pid"].to_numpy()[rows[at[known]]]
    tid[known] = h["tid"].to_numpy()[rows[at[known]]]
    start[known] = h["start_ns"].to_numpy()[rows[at[known]]]
    return pid, tid, start


def nvtx_ranges(trace: Trace) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """NCCL-domain NVTX collective ranges, ``ncclGroupEnd`` and ``ncclGroupStart`` ranges."""
    a = trace.annotations
    empty = pd.DataFrame(columns=["pid", "tid", "start_ns", "end_ns", "name", "payload"])
    if a.empty:
        return empty, empty, empty
    dom = a["domain"].astype(object)
    nccl = (a["kind"] == "nvtx").to_numpy() & (dom == "NCCL").to_numpy()
    if not nccl.any():
        return empty, empty, empty
    r = a[nccl]
    names = r["name"].astype(str)
    coll = names.map(lambda s: canonical_collective(s) if s.startswith("nccl") else None)
    ops = r[coll.notna().to_numpy()].assign(collective=coll[coll.notna()])
    ends = r[names.str.startswith("ncclGroupEnd").to_numpy()]
    starts = r[names.str.startswith("ncclGroupStart").to_numpy()]
    return ops, ends, starts
