"""Distributions of integer-ns samples, of a whole sample and per group in one pass: count,
sum, min, max and observed quantiles (the launch statistics of :mod:`analyzers.launch`,
``docs/idle-and-launch.md``).

A quantile here is an *observed* value: the smallest value with at least q of the sample at or
below it (numpy's ``inverted_cdf``: the sorted value at ``ceil(n q) − 1``); the per-group
version takes the same index with numpy's own float steps, so both give the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzers import intervals as iv


def distribution(values: np.ndarray) -> dict[str, int]:
    """n, sum, min, p50, p90, p99, max of integer ns values (quantiles are observed values:
    the smallest value with at least q of the sample at or below it, numpy ``inverted_cdf``).
    """
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return {"n": 0}
    q = np.quantile(v, [0.5, 0.9, 0.99], method="inverted_cdf").astype(np.int64)
    return {
        "n": int(v.size),
        "sum_ns": int(v.sum()),
        "min_ns": int(v.min()),
        "p50_ns": int(q[0]),
        "p90_ns": int(q[1]),
        "p99_ns": int(q[2]),
        "max_ns": int(v.max()),
    }


QUANTILES = np.array([0.5, 0.9, 0.99])
STAT_KEYS = ("sum_ns", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")
"""The keys of :func:`distribution` besides ``n``."""


def group_distributions(codes: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`distribution` of *values* per group, as arrays by key (``n`` and
    :data:`STAT_KEYS`), one entry per group code 0, 1, … (each code has a value).

    The quantiles are numpy's ``inverted_cdf`` ones: the sorted value at ``ceil(n q) − 1``,
    computed with numpy's own float steps."""
    v, c = sorted_by_group(np.asarray(codes, dtype=np.int64), np.asarray(values, np.int64))
    first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if c.size else c
    n = np.diff(np.r_[first, v.size])
    at = n[:, None] * QUANTILES - 1
    below = np.floor(at)
    pick = np.where(at - below == 0, below, below + 1).astype(np.intp)
    pick[pick < 0] = 0
    q = v[first[:, None] + pick] if c.size else np.zeros((0, 3), dtype=np.int64)
    out = {"n": n, "sum_ns": np.add.reduceat(v, first) if c.size else n}
    out |= {"min_ns": v[first], "p50_ns": q[:, 0], "p90_ns": q[:, 1], "p99_ns": q[:, 2]}
    return out | {"max_ns": v[first + n - 1]}


def sorted_by_group(codes: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """*v* sorted by (code, value), and the codes in that order: one sort of a combined key
    where it fits in int64, else a lexsort."""
    if not v.size:
        return v, codes
    lo, span = int(v.min()), int(v.max()) - int(v.min()) + 1
    if int(codes.min()) >= 0 and (int(codes.max()) + 1) * span < 2**62:
        key = np.sort(codes * span + (v - lo))
        return key % span + lo, key // span
    order = np.lexsort((v, codes))
    return v[order], codes[order]


@dataclass(frozen=True)
class Grouped:
    """Launch statistics per group (kernel name or step), in :func:`grouped_distributions`'
    order: total launch delay, then launches, largest first, then first appearance."""

    keys: list[Any]
    launches: np.ndarray
    cpu: dict[str, np.ndarray]
    """:func:`group_distributions` of the calls' durations."""
    delay: dict[str, np.ndarray]
    """:func:`group_distributions` of the launch delays."""
    union_ns: np.ndarray
    """:func:`delay_union_ns` of each group."""


def grouped(
    codes: np.ndarray,
    keys: Sequence[Any],
    cpu: np.ndarray,
    delay: np.ndarray,
    op_start: np.ndarray,
) -> Grouped:
    """:class:`Grouped` of launches given per launch as a group code into *keys* (-1: no
    group, left out), call duration, launch delay and op start."""
    live = codes >= 0
    first = np.full(len(keys), codes.size, dtype=np.int64)
    np.minimum.at(first, codes[live], np.arange(codes.size)[live])
    by_first = np.flatnonzero(first < codes.size)
    by_first = by_first[np.argsort(first[by_first], kind="stable")]
    rank = np.zeros(len(keys), dtype=np.int64)
    rank[by_first] = np.arange(by_first.size)
    g = rank[codes[live]]
    c_stats = group_distributions(g, cpu[live])
    d_stats = group_distributions(g, delay[live])
    s, e = op_start[live] - delay[live], op_start[live]
    union = iv.union_length_by_group(g, by_first.size, s, e, delay[live] > 0)
    order = np.lexsort((np.arange(by_first.size), -c_stats["n"], -d_stats["sum_ns"]))
    return Grouped(
        keys=[keys[k] for k in by_first[order].tolist()],
        launches=c_stats["n"][order],
        cpu={k: v[order] for k, v in c_stats.items()},
        delay={k: v[order] for k, v in d_stats.items()},
        union_ns=union[order],
    )
