"""Every GPU activity with the CPU op it belongs to (docs/inference.md "Kernel → op").

A GPU row (kind ``kernel``, ``memcpy`` or ``memset``) is linked to its *launching call*: the host
runtime/driver row with the same ``correlation`` (the earliest, if several).  Its *op* is the
innermost ``cpu_op`` (``ProfilerStep#*`` excluded) that runs at the launching call's start on the
call's thread, half-open ``[start, end)`` (:func:`collectors.linking.innermost_range`) — the op
whose *direct* kernels TraceLens sums in ``ops_summary.csv``.

A kernel launched by a graph launch (``cudaGraphLaunch``/``hipGraphLaunch``) has no op in the
execution trace; when a :class:`~analyzers.serving.graphs.GraphAttribution` is given, its op is
the capture-time op that :func:`~analyzers.serving.graphs.attribute_graphs` found.

``via`` says where the op came from:

    ==========  ==================================================================
    op          eager launch, op found in this trace
    capture     graph replay, op from the capture trace (column ``capture``: index)
    graph       graph replay, no capture attribution (the op is unknown)
    no-op       a launching call with no enclosing ``cpu_op``
    no-launch   no launching call in the trace (e.g. launched before profiling)
    ==========  ==================================================================
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.op_models.calls import call_parents, gpu_launch_calls
from analyzers.window import host_threads
from collectors.linking import innermost_range
from collectors.model import GPU_WORK_KINDS, names_matching

if TYPE_CHECKING:
    from analyzers.serving.graphs import GraphAttribution
    from collectors.model import Trace

"""``gpu.kind`` values that are GPU work (``sync`` rows are waits, not work)."""
GRAPH_LAUNCH_RE = re.compile(r"GraphLaunch")
"""Runtime/driver calls that replay a graph: ``cudaGraphLaunch``, ``hipGraphLaunch``,
``cuGraphLaunch``."""

KERNEL_OP_COLUMNS = (
    "gpu_row",
    "name",
    "kind",
    "stream",
    "start_ns",
    "end_ns",
    "dur_ns",
    "launch_row",
    "launch_ns",
    "graph_launch",
    "via",
    "capture",
    "op_row",
    "op",
    "input_dims",
)
"""Columns of :func:`kernel_ops`."""


_STEP_RE = re.compile(r"^ProfilerStep#")


def op_rows(host: pd.DataFrame) -> np.ndarray:
    """Host rows that are ops: ``cpu_op`` rows other than ``ProfilerStep#*``."""
    is_op = np.asarray(host["cat"] == "cpu_op", dtype=bool)
    return np.flatnonzero(is_op & ~names_matching(host["name"], _STEP_RE.search))


def innermost_ops(
    host: pd.DataFrame, rows: np.ndarray, ops: np.ndarray | None = None
) -> np.ndarray:
    """Host row of the innermost op (:func:`op_rows`) running at each host row's start on its
    thread (half-open), or -1."""
    ops = op_rows(host) if ops is None else ops
    rows = np.asarray(rows, dtype=np.int64)
    if not len(ops) or not len(rows):
        return np.full(len(rows), -1, dtype=np.int64)
    pid, tid = host["pid"].to_numpy(), host["tid"].to_numpy()
    start, end = host["start_ns"].to_numpy(), host["end_ns"].to_numpy()
    pos = innermost_range(
        start[ops], end[ops], (pid[ops], tid[ops]), start[rows], (pid[rows], tid[rows])
    )
    return np.where(pos >= 0, ops[np.maximum(pos, 0)], -1)


def launch_rows(trace: Trace) -> np.ndarray:
    """Per ``gpu`` row, the host row of its launching call (same correlation), or -1: the
    earliest such call, then the first in table order
    (:func:`analyzers.op_models.calls.gpu_launch_calls`, memoised; read-only)."""
    return gpu_launch_calls(trace)


def call_ops(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per ``gpu`` row of *rows* (each with a launching call), :func:`innermost_ops` at its
    launching call: the memoised innermost ``cpu_op`` at the call
    (:func:`analyzers.op_models.calls.call_parents`) when that is not a ``ProfilerStep#*``
    (the last of the ops holding the instant is then also the last of the non-step ops); for
    a step, the look-up again over the non-step ops that can hold one of those instants."""
    h = trace.host
    out = call_parents(trace)[rows]
    step = np.zeros(len(out), dtype=bool)
    step[out >= 0] = names_matching(h["name"], _STEP_RE.search)[out[out >= 0]]
    if step.any():
        calls = gpu_launch_calls(trace)[rows[step]]
        start, end = h["start_ns"].to_numpy(), h["end_ns"].to_numpy()
        threads = host_threads(trace)
        ops = op_rows(h)
        t = start[calls]
        near = (start[ops] <= t.max()) & (end[ops] > t.min())
        near &= np.isin(threads[ops], threads[calls])
        out[step] = innermost_ops(h, calls, ops[near])
    return out


def taken(col: pd.Series, rows: np.ndarray) -> np.ndarray:
    """``col.astype(object).to_numpy()[rows]`` (missing values NaN), converting only the rows
    taken (a categorical's codes are taken first; a pyarrow string column is not converted
    whole)."""
    return np.asarray(col.take(rows).astype(object).to_numpy(), dtype=object)


def range_owner(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per instant of *t* (-1 = unknown), the position of the range ``[start, end)`` that holds
    it, or -1; where ranges overlap, the one that starts last.  *starts* must be sorted."""
    t = np.asarray(t, dtype=np.int64)
    out = np.full(len(t), -1, dtype=np.int64)
    if not len(starts) or not len(t):
        return out
    idx = np.searchsorted(np.asarray(starts), t, side="right") - 1
    ok = (t >= 0) & (idx >= 0)
    ok[ok] = t[ok] < np.asarray(ends)[idx[ok]]
    out[ok] = idx[ok]
    return out


def _obj(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=object)


def frame(cols: dict[str, object], columns: tuple[str, ...]) -> pd.DataFrame:
    """A DataFrame of *cols* in *columns* order; object arrays stay ``object`` dtype (pandas 3
    would infer ``str`` and turn None into NaN)."""
    data = {
        c: pd.Series(v, dtype=object) if isinstance(v, np.ndarray) and v.dtype == object else v
        for c, v in cols.items()
    }
    return pd.DataFrame(data, columns=list(columns))


def kernel_ops(trace: Trace, graphs: GraphAttribution | None = None) -> pd.DataFrame:
    """One row per GPU work row of *trace* (:data:`GPU_WORK_KINDS`), columns
    :data:`KERNEL_OP_COLUMNS`, in ``gpu`` order (module docstring for ``via``).

    Not memoised: the table is as long as the GPU work (105 MiB on the 2 GB generated trace,
    225 MiB with :func:`categorized_kernel_ops`' categories), each command asks for it once per
    Trace (the serving analysis, or compare), and a memo would keep it for the rest of the
    analysis."""
    return _patched(_plain_kernel_ops(trace), graphs)


def _patched(plain: pd.DataFrame, graphs: GraphAttribution | None) -> pd.DataFrame:
    """*plain* (:func:`_plain_kernel_ops`) with graph attribution's ops: a new table where
    *graphs* gives some row an op, else *plain* itself."""
    if not _patches(graphs):
        return plain
    assert graphs is not None
    k = graphs.kernels
    k = k[k["op_row"].to_numpy() >= 0]
    work = plain["gpu_row"].to_numpy()
    pos = pd.Series(np.arange(len(work)), index=work).reindex(k["gpu_row"].to_numpy())
    ok = ~np.isnan(pos.to_numpy())
    at = pos.to_numpy()[ok].astype(np.int64)
    cols: dict[str, object] = {c: plain[c].to_numpy() for c in KERNEL_OP_COLUMNS}
    patch = {
        "op_row": k["op_row"].to_numpy(),
        "op": _obj(k["op"].to_numpy()),
        "input_dims": _obj(k["input_dims"].to_numpy()),
        "capture": k["capture"].to_numpy(),
    }
    for c, v in patch.items():
        col = np.array(cols[c], copy=True)
        col[at] = v[ok]
        cols[c] = col
    via = np.array(cols["via"], dtype=object, copy=True)
    via[at] = "capture"
    cols["via"] = via
    return frame(cols, KERNEL_OP_COLUMNS)


def categorized_kernel_ops(trace: Trace, graphs: GraphAttribution | None = None) -> pd.DataFrame:
    """:func:`kernel_ops` with a ``category`` column
    (:func:`analyzers.serving.categories.categorize`; not memoised, as :func:`kernel_ops`)."""
    plain_ops = _plain_kernel_ops(trace)
    plain = _categorized(trace, plain_ops.copy(deep=False))
    if not _patches(graphs):
        return plain
    from analyzers.serving.categories import kernel_category

    # a row's category depends on its own name, op and kind only: the rows given a capture
    # op are categorised again, the others keep the categories of the plain rows
    kops = _patched(plain_ops, graphs)
    cats = plain["category"].to_numpy(dtype=object).copy()
    at = np.flatnonzero(kops["via"].to_numpy() == "capture")
    cats[at] = kernel_category(
        *(kops[c].to_numpy(dtype=object)[at] for c in ("name", "op", "kind"))
    )
    kops["category"] = cats
    return kops


def _patches(graphs: GraphAttribution | None) -> bool:
    """Whether graph attribution gives some GPU row an op (:func:`kernel_ops` patches it)."""
    return graphs is not None and bool((graphs.kernels["op_row"].to_numpy() >= 0).any())


def _categorized(trace: Trace, kops: pd.DataFrame) -> pd.DataFrame:
    """*kops* (:func:`kernel_ops` without graph attribution) given its ``category`` column:
    the categories of the kernel names, ops and kinds from the trace's own columns' codes,
    each distinct value matched once."""
    from analyzers.serving.categories import CATEGORIES, category_positions

    rows, op_row = kops["gpu_row"].to_numpy(), kops["op_row"].to_numpy()
    g, h = trace.gpu, trace.host
    host_codes, op_values = _codes(h["name"])
    op_codes = np.full(len(op_row), -1, dtype=np.int64)
    op_codes[op_row >= 0] = host_codes[op_row[op_row >= 0]]
    pos = category_positions(
        _taken_codes(g["name"], rows), (op_codes, op_values), _taken_codes(g["kind"], rows)
    )
    kops["category"] = np.asarray(CATEGORIES, dtype=object)[pos]
    return kops


def _codes(col: pd.Series) -> tuple[np.ndarray, list[object]]:
    """``(codes, distinct values)`` of a column (a categorical's own codes and categories; code
    -1: missing)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes.to_numpy(), np.int64), col.cat.categories.tolist()
    codes, uniques = pd.factorize(col.to_numpy(dtype=object))
    return np.asarray(codes, np.int64), list(uniques)


def _taken_codes(col: pd.Series, rows: np.ndarray) -> tuple[np.ndarray, list[object]]:
    codes, values = _codes(col)
    return codes[rows], values


def _plain_kernel_ops(trace: Trace) -> pd.DataFrame:
    """:func:`kernel_ops` without graph attribution."""
    g = trace.gpu
    work = np.flatnonzero(np.asarray(g["kind"].isin(GPU_WORK_KINDS), dtype=bool))
    h = trace.host
    launch = launch_rows(trace)[work]
    has_launch = launch >= 0
    is_graph = np.zeros(len(work), dtype=bool)
    if has_launch.any():
        is_graph[has_launch] = names_matching(h["name"], GRAPH_LAUNCH_RE.search)[launch[has_launch]]
    op_row = np.full(len(work), -1, dtype=np.int64)
    eager = has_launch & ~is_graph
    op_row[eager] = call_ops(trace, work[eager])
    op = np.full(len(work), None, dtype=object)
    dims = np.full(len(work), None, dtype=object)
    has_op = op_row >= 0
    op[has_op] = taken(h["name"], op_row[has_op])
    dims[has_op] = h["input_dims"].take(op_row[has_op]).to_numpy()
    via = np.where(has_launch, np.where(has_op, "op", "no-op"), "no-launch").astype(object)
    via[is_graph] = "graph"
    start, end = g["start_ns"].to_numpy()[work], g["end_ns"].to_numpy()[work]
    launch_ns = np.full(len(work), -1, dtype=np.int64)
    launch_ns[has_launch] = h["start_ns"].to_numpy()[launch[has_launch]]
    return frame(
        {
            "gpu_row": work.astype(np.int64),
            "name": taken(g["name"], work),
            "kind": taken(g["kind"], work),
            "stream": g["stream"].to_numpy()[work],
            "start_ns": start,
            "end_ns": end,
            "dur_ns": end - start,
            "launch_row": launch,
            "launch_ns": launch_ns,
            "graph_launch": is_graph,
            "via": via,
            "capture": np.full(len(work), -1, dtype=np.int64),
            "op_row": op_row,
            "op": op,
            "input_dims": dims,
        },
        KERNEL_OP_COLUMNS,
    )
