"""The ``category`` view of ``gpuscope compare``, and the capture ops of graph-replayed kernels
for its ``op`` view (docs/compare.md §3; categories and graph attribution: docs/inference.md).

Both come from the serving rows of a rank (:func:`serving_rows`): every window GPU work event
with the op that launched it — for a kernel replayed from a CUDA/HIP graph, the op that
launched it while the graph was captured, from the capture traces of its rank
(:func:`analyzers.serving.graphs.attribute_graphs`) — and its op category
(:func:`analyzers.serving.categories.categorize`).

- ``category`` view: one occurrence per window GPU event; key = its category (``GEMM``,
  ``attention``, ``MoE``, …); time = ``end − start``; counted per event.
- ``op`` view, graph replays (:func:`graph_op_events`): a replayed event with a capture op
  counts for that op, keyed like an eager op (op name + its recorded ``input_dims``); one call
  per (capture op, graph launch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analyzers.serving.graphs import Capture
    from collectors.model import Trace

ROW_COLUMNS = ("category", "via", "op", "input_dims", "capture", "op_row", "launch_row")
"""Columns of :func:`serving_rows`."""


EVENT_COLUMNS = ("key", "name", "kind", "dur_ns", "t_ns", "call")
"""The columns of a compare view's event rows (:mod:`analyzers.compare_sides` re-uses them)."""


def serving_rows(
    trace: Trace, acts: pd.DataFrame, captures: Sequence[Trace | Capture] = ()
) -> pd.DataFrame:
    """Per row of *acts* (window GPU work events of *trace*, its ``gpu`` index), in order:
    :data:`ROW_COLUMNS` (:func:`analyzers.serving.ops.kernel_ops` ``via``/``op``/...)."""
    from analyzers.serving.graphs import attribute_graphs
    from analyzers.serving.ops import categorized_kernel_ops
    from analyzers.serving.phases import step_ranges

    graphs = attribute_graphs(trace, captures, step_ranges(trace)) if captures else None
    kops = categorized_kernel_ops(trace, graphs)
    pos = pd.Series(np.arange(len(kops)), index=kops["gpu_row"].to_numpy())
    at = pos.reindex(acts.index.to_numpy()).to_numpy()
    if np.isnan(at).any():  # not GPU work rows of this trace: cannot happen for window acts
        raise ValueError("serving_rows: acts must be GPU work rows of the trace")
    return kops.iloc[at.astype(np.int64)][list(ROW_COLUMNS)].reset_index(drop=True)


def category_events(rows: pd.DataFrame, acts: pd.DataFrame, t: np.ndarray) -> pd.DataFrame:
    """The ``category`` view's occurrences (compare's event columns) of *acts*, given their
    :func:`serving_rows` and instants *t*."""
    cat = rows["category"].to_numpy(dtype=object)
    return pd.DataFrame(
        {
            "key": cat,
            "name": cat,
            "kind": acts["kind"].astype(object).to_numpy(),
            "dur_ns": (acts["end_ns"].to_numpy() - acts["start_ns"].to_numpy()).astype(np.int64),
            "t_ns": np.asarray(t, dtype=np.int64),
            "call": np.arange(len(acts), dtype=np.int64),
        },
        columns=list(EVENT_COLUMNS),
    )


def graph_op_events(
    rows: pd.DataFrame, acts: pd.DataFrame, t: np.ndarray, first_call: int
) -> pd.DataFrame:
    """The ``op`` view's occurrences of the graph-replayed events of *acts* that have a capture
    op; calls numbered from *first_call* (after the eager op calls)."""
    sel = np.flatnonzero((rows["via"] == "capture").to_numpy())
    r = rows.iloc[sel]
    names = r["op"].astype(object).to_numpy()
    dims = [d if isinstance(d, str) and d else "" for d in r["input_dims"].tolist()]
    keys = np.array(
        [f"{n} {d}" if d else str(n) for n, d in zip(names, dims, strict=True)], dtype=object
    )
    call, _ = pd.factorize(
        pd.MultiIndex.from_arrays([r["capture"], r["op_row"], r["launch_row"]])
        if len(r)
        else pd.Index([])
    )
    return pd.DataFrame(
        {
            "key": keys,
            "name": names,
            "kind": acts["kind"].astype(object).to_numpy()[sel],
            "dur_ns": (acts["end_ns"].to_numpy() - acts["start_ns"].to_numpy())[sel].astype(
                np.int64
            ),
            "t_ns": np.asarray(t, dtype=np.int64)[sel],
            "call": np.asarray(call, dtype=np.int64) + first_call,
        },
        columns=list(EVENT_COLUMNS),
    )


def unattributed_ns(view_change_ns: int, work_change_ns: int) -> int:
    """Of a view's ``other``, the GPU work in no entry: the change of the compared GPU work
    time less the sum of the entries' contributions (the rest of ``other`` is not GPU work:
    idle time, host time, overlap)."""
    return work_change_ns - view_change_ns
