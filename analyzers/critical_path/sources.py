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


def gpu_category_codes(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The op category of every ``gpu`` row as ``(codes, categories)``: per row (int32,
    ``gpu`` order) the position of its category in *categories* (an object array of distinct
    str) — for GPU work rows :func:`analyzers.serving.categories.categorize` of
    :func:`analyzers.serving.ops.kernel_ops` (the launching op's name first, then the kernel
    name), ``other`` for sync rows."""
    import pandas as pd

    from analyzers.serving.ops import categorized_kernel_ops

    kops = categorized_kernel_ops(trace)
    codes, uniques = pd.factorize(np.asarray(kops["category"].to_numpy(dtype=object)))
    cats = [str(u) for u in uniques]
    if OTHER not in cats:
        cats.append(OTHER)
    out = np.full(len(trace.gpu), cats.index(OTHER), dtype=np.int32)
    out[kops["gpu_row"].to_numpy(dtype=np.int64)] = codes
    return out, np.asarray(cats, dtype=object)


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
