"""Capture traces: the trace recorded while CUDA/HIP graphs were built (docs/inference.md
"Graph attribution").

A trace is a *capture trace* when a runtime/driver call ``*StreamBeginCapture`` occurs in it
(``cudaStreamBeginCapture``, ``hipStreamBeginCapture``, ``cuStreamBeginCapture_v2``).  A *capture
region* runs on one thread from the end of a ``*StreamBeginCapture`` call to the start of the
next ``*StreamEndCapture`` call of that thread; each region builds one graph.

The *nodes* of a region are the launch and copy calls made in it — runtime/driver rows whose name
contains ``Launch`` (not ``GraphLaunch``/``LaunchHostFunc``), ``Memcpy`` or ``Memset`` — on the
region's thread, in call order, except calls whose correlation has a GPU row in the capture trace
(work that ran, so it was not captured).  Each node's op is the innermost ``cpu_op`` around the
call (:func:`analyzers.serving.ops.innermost_ops`), with its ``input_dims``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.serving.ops import GRAPH_LAUNCH_RE, frame, innermost_ops
from collectors.model import LAUNCH_CATS, names_matching

if TYPE_CHECKING:
    from collectors.model import Trace

BEGIN_RE = re.compile(r"StreamBeginCapture")
END_RE = re.compile(r"StreamEndCapture")
NODE_RE = re.compile(r"Launch|Memcpy|Memset")
NOT_NODE_RE = re.compile(r"GraphLaunch|LaunchHostFunc")

REGION_COLUMNS = ("region", "begin_row", "end_row", "pid", "tid", "start_ns", "end_ns")
NODE_COLUMNS = (
    "region",
    "node",
    "host_row",
    "correlation",
    "kind",
    "start_ns",
    "op_row",
    "op",
    "input_dims",
)


def _runtime(trace: Trace, rx: re.Pattern[str]) -> np.ndarray:
    h = trace.host
    is_rt = np.asarray(h["cat"].isin(LAUNCH_CATS), dtype=bool)
    return np.flatnonzero(is_rt & names_matching(h["name"], rx.search))


def is_capture_trace(trace: Trace) -> bool:
    """True when the trace records a stream capture (module docstring)."""
    return bool(len(_runtime(trace, BEGIN_RE)))


def capture_regions(trace: Trace) -> pd.DataFrame:
    """One row per capture region in time order, columns :data:`REGION_COLUMNS`.

    Each ``*StreamBeginCapture`` pairs with the first unused ``*StreamEndCapture`` that starts
    after it ends on the same (pid, tid); a begin without one is dropped.
    """
    h = trace.host
    begins, ends = _runtime(trace, BEGIN_RE), _runtime(trace, END_RE)
    start, end = h["start_ns"].to_numpy(), h["end_ns"].to_numpy()
    pid, tid = h["pid"].to_numpy(), h["tid"].to_numpy()
    used: set[int] = set()
    rows = []
    for b in begins[np.argsort(start[begins], kind="stable")].tolist():
        same = ends[(pid[ends] == pid[b]) & (tid[ends] == tid[b]) & (start[ends] >= end[b])]
        same = np.array([e for e in same[np.argsort(start[same], kind="stable")] if e not in used])
        if not len(same):
            continue
        e = int(same[0])
        used.add(e)
        rows.append((b, e, int(pid[b]), int(tid[b]), int(end[b]), int(start[e])))
    df = pd.DataFrame(rows, columns=list(REGION_COLUMNS[1:]), dtype=np.int64)
    df = df.sort_values("start_ns", kind="stable").reset_index(drop=True)
    df.insert(0, "region", np.arange(len(df), dtype=np.int64))
    return df


def capture_nodes(trace: Trace, regions: pd.DataFrame | None = None) -> pd.DataFrame:
    """The graph nodes recorded in each capture region, columns :data:`NODE_COLUMNS`, ordered
    by region then call start (``node`` numbers them within the region from 0)."""
    regions = capture_regions(trace) if regions is None else regions
    h = trace.host
    cand = _runtime(trace, NODE_RE)
    cand = cand[~names_matching(h["name"], NOT_NODE_RE.search)[cand]]
    corr = h["correlation"].to_numpy()
    ran = np.isin(corr[cand], trace.gpu["correlation"].to_numpy())
    cand = cand[~ran]
    start = h["start_ns"].to_numpy()
    pid, tid = h["pid"].to_numpy(), h["tid"].to_numpy()
    parts = []
    for r in regions.itertuples(index=False):
        inside = (
            (pid[cand] == r.pid)
            & (tid[cand] == r.tid)
            & (start[cand] >= r.start_ns)
            & (start[cand] < r.end_ns)
        )
        rows = cand[inside]
        rows = rows[np.argsort(start[rows], kind="stable")]
        parts.append((r.region, rows))
    all_rows = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    region = np.concatenate([np.full(len(p[1]), p[0]) for p in parts]) if parts else all_rows
    node = np.concatenate([np.arange(len(p[1])) for p in parts]) if parts else all_rows
    names = h["name"].astype(object).to_numpy()[all_rows].astype(str)
    kind = np.where(
        np.char.find(names, "Memcpy") >= 0,
        "memcpy",
        np.where(np.char.find(names, "Memset") >= 0, "memset", "kernel"),
    )
    op_row = innermost_ops(h, all_rows)
    has = op_row >= 0
    op = np.full(len(all_rows), None, dtype=object)
    dims = np.full(len(all_rows), None, dtype=object)
    op[has] = h["name"].astype(object).to_numpy()[op_row[has]]
    dims[has] = h["input_dims"].to_numpy()[op_row[has]]
    return frame(
        {
            "region": np.asarray(region, dtype=np.int64),
            "node": np.asarray(node, dtype=np.int64),
            "host_row": all_rows.astype(np.int64),
            "correlation": corr[all_rows],
            "kind": kind.astype(object),
            "start_ns": start[all_rows],
            "op_row": op_row,
            "op": op,
            "input_dims": dims,
        },
        NODE_COLUMNS,
    )


__all__ = ["GRAPH_LAUNCH_RE", "capture_nodes", "capture_regions", "is_capture_trace"]
