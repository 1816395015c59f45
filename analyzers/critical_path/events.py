"""One table of a rank's events (host and GPU rows together), in the view the graph needs.

Every array has one entry per event; host rows come first, then GPU rows.  Columns follow HTA's
trace frame (``hta.common.trace``): ``stream`` is -1 for host rows, ``pid``/``tid`` are the
process/thread of host rows and the device/stream of GPU rows, and ``link`` is HTA's
``index_correlation``: a host call and the GPU row it launched point at each other when they
share a ``correlation``.  HTA's "GPU side" of that join is ``stream >= 0 and correlation >= 0``
plus the stream-less ``Event Sync`` / ``Context Sync`` rows; every other row is "CPU side".

``order`` breaks ties between events that start at the same instant the way HTA does (its
frame index, i.e. the position in ``traceEvents``): the model's optional ``event_index``
column when present, else host rows before GPU rows, each in table order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers.critical_path.sources import optional_gpu_column

if TYPE_CHECKING:
    from collectors.model import Trace

GPU_CAT_BY_KIND = {
    "kernel": "kernel",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "sync": "cuda_sync",
    "other": "other",
}
"""Kineto category of a ``gpu`` row by its ``kind``."""

STREAMLESS_SYNC = ("Event Sync", "Context Sync")
NODE_CATS = ("cpu_op", "cuda_runtime", "cuda_driver")
"""Host categories HTA gives graph nodes (``get_operator_or_cuda_runtime_mask``)."""

LAUNCH_NAMES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "hipLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipMemcpyAsync",
        "hipMemsetAsync",
        "hipMemcpyWithStream",
    }
)
"""Runtime calls that enqueue GPU work (HTA ``get_runtime_launch_events_mask``)."""


@dataclass
class Events:
    """A rank's events as parallel arrays (module docstring)."""

    ts: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    is_host: np.ndarray
    order: np.ndarray
    gpu_side: np.ndarray
    """HTA's GPU side of the correlation join (module docstring)."""
    link: np.ndarray
    """Position of the linked event, -1 when none (HTA's ``index_correlation`` > 0)."""
    gpu_wait_on_stream: np.ndarray
    gpu_wait_on_corr: np.ndarray
    """Per GPU row (event ``n_host + i``), its ``wait_on_stream`` / ``wait_on_event_correlation``
    (-1: unknown; :attr:`wait_on_stream` / :attr:`wait_on_corr` per event)."""
    n_host: int
    name_code: np.ndarray
    """Per event, the position of its name in :attr:`name_set` (int32)."""
    name_set: np.ndarray
    """The distinct names (object array of str; may repeat a name): per-name work is done
    once per entry here and taken by :attr:`name_code`."""
    cat_code: np.ndarray
    """Per event, the position of its category in :attr:`cat_set` (int32)."""
    cat_set: np.ndarray
    """The categories (object array of str; may repeat one)."""

    @functools.cached_property
    def wait_on_stream(self) -> np.ndarray:
        """Per event, the sync row's ``wait_on_stream`` (-1: unknown, and for host rows)."""
        return np.concatenate([np.full(self.n_host, -1, np.int64), self.gpu_wait_on_stream])

    @functools.cached_property
    def wait_on_corr(self) -> np.ndarray:
        """Per event, the sync row's ``wait_on_event_correlation`` (-1: unknown, host rows)."""
        return np.concatenate([np.full(self.n_host, -1, np.int64), self.gpu_wait_on_corr])

    @functools.cached_property
    def name(self) -> np.ndarray:
        """Each event's name (object array of str)."""
        return self.name_set[self.name_code]

    @functools.cached_property
    def cat(self) -> np.ndarray:
        """Each event's Kineto category (object array of str; GPU rows by their kind)."""
        return self.cat_set[self.cat_code]

    def names_of(self, idx: Any) -> Any:
        """The names of the events at *idx* (positions or one position)."""
        return self.name_set[self.name_code[idx]]

    @property
    def row(self) -> np.ndarray:
        """Row of the event in its source table (``host`` or ``gpu``)."""
        return np.concatenate([np.arange(self.n_host), np.arange(len(self) - self.n_host)])

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.ts

    def name_flags(self, fn: Callable[[str], Any], dtype: Any = bool) -> np.ndarray:
        """``fn(name)`` per entry of :attr:`name_set` (index it with :attr:`name_code`)."""
        return np.asarray([fn(u) for u in self.name_set.tolist()], dtype=dtype)

    def per_name(self, fn: Callable[[str], Any], dtype: Any = bool) -> np.ndarray:
        """``fn(name)`` of every event, computed once per distinct name."""
        return self.name_flags(fn, dtype)[self.name_code]

    def name_in(self, names: Collection[str]) -> np.ndarray:
        """Per event, whether its name is one of *names* (``np.isin(name, names)``)."""
        wanted = frozenset(names)
        return self.per_name(wanted.__contains__)

    def cat_in(self, cats: Collection[str]) -> np.ndarray:
        """Per event, whether its category is one of *cats* (``np.isin(cat, cats)``)."""
        wanted = frozenset(cats)
        return np.asarray([c in wanted for c in self.cat_set.tolist()], bool)[self.cat_code]

    def __len__(self) -> int:
        return len(self.ts)


def _strings(col: Iterable[object], n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = [("" if v is None or v != v else str(v)) for v in col]
    return out


def _coded(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, distinct strings)`` of a string column (int32 codes): missing values are
    ``""`` (as :func:`_strings`); the strings are made once per category of a categorical
    column (its own codes), else once per distinct value (``Series.factorize``)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        uniques = col.cat.categories
    else:
        codes, uniques = col.factorize()
    u = _strings([*list(uniques), None], len(uniques) + 1)
    codes = np.asarray(codes, np.int32)
    return np.where(codes < 0, np.int32(len(uniques)), codes), u


def build_events(trace: Trace) -> Events:
    """The table of *trace*'s events (module docstring)."""
    h, g = trace.host, trace.gpu
    nh, ng = len(h), len(g)
    g_stream = g["stream"].to_numpy(dtype=np.int64)
    g_dev = g["device"].to_numpy(dtype=np.int64)
    k_code, k_set = _coded(g["kind"])
    kind = np.array([GPU_CAT_BY_KIND.get(k, "other") for k in k_set.tolist()], dtype=object)
    h_code, h_set = _coded(h["name"])
    g_code, g_set = _coded(g["name"])
    name_code = np.concatenate([h_code, g_code + np.int32(len(h_set))])
    name_set = np.concatenate([h_set, g_set])
    c_code, c_set = _coded(h["cat"])
    cat_code = np.concatenate([c_code, k_code + np.int32(len(c_set))])
    cat_set = np.concatenate([c_set, kind])
    stream = np.concatenate([np.full(nh, -1, np.int64), g_stream])
    corr = np.concatenate(
        [h["correlation"].to_numpy(dtype=np.int64), g["correlation"].to_numpy(dtype=np.int64)]
    )
    ts = np.concatenate([h["start_ns"].to_numpy(np.int64), g["start_ns"].to_numpy(np.int64)])
    end = np.concatenate([h["end_ns"].to_numpy(np.int64), g["end_ns"].to_numpy(np.int64)])
    pid = np.concatenate([h["pid"].to_numpy(np.int64), g_dev])
    tid = np.concatenate([h["tid"].to_numpy(np.int64), np.where(g_stream >= 0, g_stream, -1)])
    is_host = np.concatenate([np.ones(nh, bool), np.zeros(ng, bool)])
    if "event_index" in h.columns and "event_index" in g.columns:
        order = np.concatenate(
            [h["event_index"].to_numpy(np.int64), g["event_index"].to_numpy(np.int64)]
        )
    else:
        order = np.arange(nh + ng, dtype=np.int64)
    gpu_side = (stream >= 0) & (corr >= 0)
    gpu_side[nh:] |= np.isin(g_set, STREAMLESS_SYNC)[g_code]
    link = _link(corr, gpu_side)
    wos = optional_gpu_column(trace, "wait_on_stream")
    woc = optional_gpu_column(trace, "wait_on_event_correlation")
    return Events(
        ts,
        end,
        pid,
        tid,
        stream,
        corr,
        is_host,
        order,
        gpu_side,
        link,
        wos,
        woc,
        nh,
        name_code,
        name_set,
        cat_code,
        cat_set,
    )


def _link(corr: np.ndarray, gpu_side: np.ndarray) -> np.ndarray:
    """HTA's ``index_correlation`` (positions): CPU-side and GPU-side rows of one correlation
    point at each other (the last pair wins when a correlation repeats); -1 elsewhere.

    Each CPU-side row's partner is the last GPU-side row of its correlation: read from a table
    indexed by correlation where the ids span little more than the rows (``np.maximum.at``),
    else found by a sorted search."""
    n = len(corr)
    link = np.full(n, -1, dtype=np.int64)
    has = corr != -1
    cpu = np.flatnonzero(has & ~gpu_side)
    gpu = np.flatnonzero(has & gpu_side)
    if not len(cpu) or not len(gpu):
        return link
    lo = min(int(corr[cpu].min()), int(corr[gpu].min()))
    span = max(int(corr[cpu].max()), int(corr[gpu].max())) - lo + 1
    if span <= 4 * n + 1024:
        last = np.full(span, -1, np.int64)
        np.maximum.at(last, corr[gpu] - lo, gpu)
        partner = last[corr[cpu] - lo]
        ok = partner >= 0
        c, gg = cpu[ok], partner[ok]
    else:
        g_order = np.argsort(corr[gpu], kind="stable")
        g_sorted = corr[gpu][g_order]
        pos = np.searchsorted(g_sorted, corr[cpu], side="right") - 1
        ok = (pos >= 0) & (g_sorted[np.maximum(pos, 0)] == corr[cpu])
        c, gg = cpu[ok], gpu[g_order[pos[ok]]]
    link[c] = gg
    link[gg] = c
    return link
