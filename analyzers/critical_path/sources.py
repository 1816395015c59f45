"""What the critical-path analysis takes from outside the package, each behind one function.

* :func:`collectives_of` — the per-rank collectives table (:mod:`analyzers.collectives`);
* :func:`gpu_category_codes` / :func:`kernel_category` — the op categories of
  :mod:`analyzers.serving.categories` (GEMM, attention, MoE, …: the serving breakdown's), so
  that blame and the serving breakdown name a kernel alike;
* :func:`optional_gpu_column` — the sync rows' ``wait_on_stream`` /
  ``wait_on_event_correlation`` and the rows' ``event_index`` (docs/critical-path.md "Model
  fields"), read when the model carries them and -1 (unknown) when it does not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace

COMMUNICATION = "communication"
MEMORY = "memory"
OTHER = "other"
"""The categories the graph treats specially (values of :data:`analyzers.serving.CATEGORIES`)."""


def collectives_of(trace: Trace) -> pd.DataFrame:
    """The rank's collectives table (:func:`analyzers.collectives.collectives_table`)."""
    from analyzers.collectives import collectives_table

    return collectives_table(trace)


GRAPH_LAUNCH = re.compile(r"GraphLaunch")
"""Graph replays' launch calls: :data:`analyzers.serving.ops.GRAPH_LAUNCH_RE` (a test checks
they are the same; :mod:`analyzers.serving.ops` is imported only for the look-ups the
call-stack walk leaves, with the op models it needs)."""


def launch_rows(trace: Trace) -> np.ndarray:
    """Per ``gpu`` row, the host row of its launching call, or -1 (the memoised correlation
    index :func:`analyzers.window.gpu_launch_rows`, which
    :func:`analyzers.serving.ops.launch_rows` reads; read-only)."""
    from analyzers.window import gpu_launch_rows

    return gpu_launch_rows(trace)


def gpu_category_codes(
    trace: Trace, call_op: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The op category of every ``gpu`` row as ``(codes, categories)``: per row (int32,
    ``gpu`` order) the position of its category in *categories* (an object array of distinct
    str, in the order of their first GPU work row) — for GPU work rows the ``category`` of
    :func:`analyzers.serving.ops.categorized_kernel_ops` (the launching op's name first, then
    the kernel name: :func:`analyzers.serving.categories.category_positions`), ``other`` for
    the other rows.  Computed from the rows' name, kind and launching op codes, as
    ``categorized_kernel_ops`` computes them, without building its table.

    *call_op*: per host row, the innermost non-step ``cpu_op`` holding its start where known
    (-1: none; -2: unknown), as :func:`analyzers.serving.ops.call_ops` finds it; the launching
    calls it does not know are looked up (:func:`analyzers.serving.ops.innermost_ops`)."""
    import pandas as pd

    from analyzers.serving.categories import CATEGORIES, category_positions
    from collectors.model import GPU_WORK_KINDS, names_matching

    g, h = trace.gpu, trace.host
    kind_codes, kinds = _codes(g["kind"])
    work = np.flatnonzero(np.asarray([k in GPU_WORK_KINDS for k in kinds] + [False])[kind_codes])
    launch = launch_rows(trace)[work]
    has = launch >= 0
    graph = np.zeros(len(work), bool)
    if has.any():
        graph[has] = names_matching(h["name"], GRAPH_LAUNCH.search)[launch[has]]
    op_row = np.full(len(work), -1, np.int64)
    eager = np.flatnonzero(has & ~graph)
    if call_op is None:
        from analyzers.serving.ops import call_ops

        op_row[eager] = call_ops(trace, work[eager])
    else:
        op_row[eager] = call_op[launch[eager]]
        unknown = eager[op_row[eager] == -2]
        if len(unknown):
            op_row[unknown] = _ops_at(h, launch[unknown])
    host_codes, ops = _codes(h["name"])
    op_codes = np.full(len(work), -1, np.int64)
    op_codes[op_row >= 0] = host_codes[op_row[op_row >= 0]]
    name_codes, names = _codes(g["name"])
    pos = category_positions((name_codes[work], names), (op_codes, ops), (kind_codes[work], kinds))
    codes, uniques = pd.factorize(pos)
    cats = [CATEGORIES[u] for u in uniques.tolist()]
    if OTHER not in cats:
        cats.append(OTHER)
    out = np.full(len(g), cats.index(OTHER), dtype=np.int32)
    out[work] = codes
    return out, np.asarray(cats, dtype=object)


def _ops_at(host: pd.DataFrame, calls: np.ndarray) -> np.ndarray:
    """Per host row of *calls*, the innermost non-step ``cpu_op`` holding its start on its
    thread (:func:`analyzers.serving.ops.innermost_ops`), over the ops that can hold one of
    those instants."""
    from analyzers.serving.ops import innermost_ops, op_rows

    ops = op_rows(host)
    start, end = host["start_ns"].to_numpy(), host["end_ns"].to_numpy()
    t = start[calls]
    ops = ops[(start[ops] <= t.max()) & (end[ops] > t.min())]
    return innermost_ops(host, calls, ops)


def _codes(col: pd.Series) -> tuple[np.ndarray, list[object]]:
    """``(codes, distinct values)`` of a column (a categorical's own codes and categories;
    code -1: missing), as :mod:`analyzers.serving.ops` reads them."""
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes.to_numpy(), np.int64), col.cat.categories.tolist()
    codes, uniques = pd.factorize(col.to_numpy(dtype=object))
    return np.asarray(codes, np.int64), list(uniques)


def kernel_category(name: str, op: str | None = None) -> str:
    """The op category of one kernel by its name (and its op's name when known)."""
    from analyzers.serving.categories import kernel_category as categories

    return str(categories([name], ops=None if op is None else [op])[0])


def optional_gpu_column(trace: Trace, column: str) -> np.ndarray:
    """``trace.gpu[column]`` as int64 when the table has it, else all -1 (unknown)."""
    gpu = trace.gpu
    if column in gpu.columns:
        return np.asarray(gpu[column].to_numpy(), dtype=np.int64)
    return np.full(len(gpu), -1, dtype=np.int64)
