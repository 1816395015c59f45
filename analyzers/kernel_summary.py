"""Kernel summary: one row per kernel name over the window's GPU kernels.

Rows are the window's GPU events (:func:`analyzers.window.window_rows`) of kind ``kernel``
(CUPTI's kernel activity; memcpy/memset/sync rows are not kernels), grouped by ``name``.  With
``d`` the durations ``end_ns − start_ns`` of one name's ``n`` instances (docs/metrics.md
"Kernel summary"; Nsight Systems ``cuda_gpu_kern_sum``):

- ``count`` = n; ``total_ns`` = Σd; ``avg_ns`` = Σd / n; ``min_ns``, ``max_ns``;
- ``median_ns`` = the middle value of the sorted d (mean of the two middle values for even n);
- ``stddev_ns`` = sample standard deviation √(Σ(d − avg)² / (n − 1)); 0 for n = 1;
- ``time_pct`` = 100 × total / Σ totals of all rows;
- ``type`` = :func:`analyzers.classify.classify` of the name (HTA rules).

Rows are ordered by ``total_ns`` descending, then ``count`` ascending, then ``name`` ascending
(the order of ``cuda_gpu_kern_sum``).  ``avg_ns``, ``median_ns``, ``stddev_ns`` and
``time_pct`` are exact floats here; the JSON summary rounds the three times to whole ns.

    ==========  ==============  =====  =====  ======  ======  ========
    name        durations (ns)  total  avg    median  stddev  time_pct
    ==========  ==============  =====  =====  ======  ======  ========
    gemm        10, 20, 60      90     30     20      26.46   90
    relu        10              10     10     10      0       10
    ==========  ==============  =====  =====  ======  ======  ========
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from analyzers.distributions import sorted_by_group
from analyzers.options import AnalysisOptions
from analyzers.temporal import TYPE_LABELS
from analyzers.window import gpu_type_codes, value_mask, window_rows

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace

SUMMARY_COLUMNS = (
    "name",
    "type",
    "count",
    "total_ns",
    "avg_ns",
    "median_ns",
    "min_ns",
    "max_ns",
    "stddev_ns",
    "time_pct",
)

UNNAMED = "<unnamed>"
"""Name given to events whose source records none."""


def summarize_durations(names: pd.Series, durations: np.ndarray) -> pd.DataFrame:
    """count/total/avg/median/min/max/stddev of *durations* grouped by *names*.

    Returns one row per distinct name, in no particular order, with columns ``name`` and the
    statistics of :data:`SUMMARY_COLUMNS` (no ``type``/``time_pct``).
    """
    import pandas as pd

    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    return _summarize_codes(cat.cat.codes.to_numpy(), _labels(cat.cat.categories), durations)


def _labels(categories: pd.Index) -> np.ndarray:
    """The name of each category code, and :data:`UNNAMED` for code -1 (the last entry)."""
    return np.append(np.asarray(categories, dtype=object), UNNAMED)


def _summarize_codes(codes: np.ndarray, labels: np.ndarray, durations: np.ndarray) -> pd.DataFrame:
    """:func:`summarize_durations` of names given as category *codes* (-1 missing) into
    *labels* (:func:`_labels`)."""
    import pandas as pd

    codes = codes.astype(np.int64)
    codes[codes < 0] = len(labels) - 1
    # by (code, duration): the sorted values are all that is read
    d, codes = sorted_by_group(codes, np.asarray(durations, dtype=np.int64))
    if d.size == 0:
        return pd.DataFrame({c: [] for c in ("name", *SUMMARY_COLUMNS[2:-1])})
    first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    last = np.r_[first[1:], d.size] - 1
    n = last - first + 1
    total = np.add.reduceat(d, first)
    avg = total / n
    mid_lo = d[first + (n - 1) // 2]
    mid_hi = d[first + n // 2]
    median = (mid_lo + mid_hi) / 2.0
    dev2 = (d - np.repeat(avg, n)) ** 2
    ss = np.add.reduceat(dev2, first)
    stddev = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), 0.0)
    return pd.DataFrame(
        {
            "name": labels[codes[first]],
            "count": n.astype(np.int64),
            "total_ns": total.astype(np.int64),
            "avg_ns": avg,
            "median_ns": median,
            "min_ns": d[first],
            "max_ns": d[last],
            "stddev_ns": stddev,
            "_code": codes[first],
        }
    )


def kernel_summary(
    trace: Trace,
    options: AnalysisOptions | None = None,
    kinds: Sequence[str] = ("kernel",),
) -> pd.DataFrame:
    """The kernel summary of *trace* (module docstring); columns :data:`SUMMARY_COLUMNS`.

    *kinds* selects which ``gpu.kind`` rows are summarized (default: kernels only).
    """
    import pandas as pd

    options = options or AnalysisOptions()
    gpu = trace.gpu
    rows = window_rows(trace, options)
    sel = rows[value_mask(gpu["kind"], kinds)[rows]]
    d = gpu["end_ns"].to_numpy()[sel] - gpu["start_ns"].to_numpy()[sel]
    names = gpu["name"]
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    labels = _labels(cat.cat.categories)
    codes = cat.cat.codes.to_numpy()[sel]
    out = _summarize_codes(codes, labels, d)
    if out.empty:
        return out.assign(type=[], time_pct=[])[list(SUMMARY_COLUMNS)]
    # one type per name: the type (of the name and its row's kind) of the name's first row
    same = codes.astype(np.int64)
    missing = len(labels) - 1
    same[same < 0] = missing
    hit = np.flatnonzero(labels[:-1] == UNNAMED)  # a category spelled like the missing name
    if hit.size:
        same[same == missing] = hit[0]
    first_row = np.full(len(labels), same.size, dtype=np.int64)
    np.minimum.at(first_row, same, np.arange(same.size))
    group = out["_code"].to_numpy()
    if hit.size:
        group = np.where(group == missing, hit[0], group)
    out["type"] = TYPE_LABELS[gpu_type_codes(trace, options)[sel[first_row[group]]]]
    total = out["total_ns"].to_numpy()
    grand = int(total.sum())
    out["time_pct"] = 100.0 * total / grand if grand else np.nan
    label = out["name"].to_numpy()
    distinct = sorted(set(label.tolist()))
    rank = np.searchsorted(np.array(distinct, dtype=object), label)
    order = np.lexsort((rank, out["count"].to_numpy(), -total))
    return out.take(order)[list(SUMMARY_COLUMNS)].reset_index(drop=True)
