"""What the critical-path analysis takes from outside the package, each behind one function.

* :func:`collectives_of` — the per-rank collectives table (today ``Trace.collectives``; being
  moved into ``analyzers/`` — re-point this one line);
* :func:`kernel_category` — a small name-based kernel classifier (to be re-pointed at the real
  op-category table);
* :func:`optional_gpu_column` — the sync-event fields of the trace model (``wait_on_stream``,
  ``wait_on_event_correlation``: -1 where the source does not record them).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace


def collectives_of(trace: Trace) -> pd.DataFrame:
    """The rank's collectives table (:func:`analyzers.collectives.collectives_table`)."""
    from analyzers.collectives import collectives_table

    return collectives_table(trace)


_CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("communication", re.compile(r"^(nccl|rccl|hccl|ncclDevKernel)", re.I)),
    ("memory", re.compile(r"^(Memcpy|Memset|\[CUDA mem)", re.I)),
    ("gemm", re.compile(r"gemm|xmma|cutlass|matmul|_mm_|sgemm|hgemm|wgmma|cublas", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa|softmax", re.I)),
    ("conv", re.compile(r"conv|implicit_?gemm|winograd|fft2d|cudnn", re.I)),
    ("norm", re.compile(r"norm|layer_?norm|batch_?norm|rms", re.I)),
    ("reduce", re.compile(r"reduce|sum_kernel|mean|argmax", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise|triton_poi", re.I)),
)


@functools.lru_cache(maxsize=65536)
def kernel_category(name: str) -> str:
    """Category of a GPU event by its name: the first matching rule of ``communication``,
    ``memory``, ``gemm``, ``attention``, ``conv``, ``norm``, ``reduce``, ``elementwise``;
    otherwise ``other``.  A placeholder for the op-category table (one function to re-point).
    Cached by name: a trace repeats a few thousand names over its events."""
    for cat, pattern in _CATEGORY_RULES:
        if pattern.search(name):
            return cat
    return "other"


def optional_gpu_column(trace: Trace, column: str) -> np.ndarray:
    """``trace.gpu[column]`` as int64 (a model column; -1 unknown)."""
    return np.asarray(trace.gpu[column].to_numpy(), dtype=np.int64)
