"""Groups of serving rows (a step, a phase, a ProfilerStep, the whole trace) as dense codes.

The serving tables aggregate the GPU work rows per group the way ``DataFrame.groupby(key,
sort=True)`` does (groups in sorted key order, rows without a key left out, each group's rows
in table order), but from one stable sort of integer codes instead of a DataFrame per group.
Integer sums are taken per segment of that sort; float sums per group slice (the same values
in the same order, so numpy adds them exactly as a ``groupby`` part's ``sum()`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from collectors.arrays import sorted_unique


@dataclass(frozen=True)
class Groups:
    """Per row, ``codes`` = the position of its group in ``labels`` (-1: in no group);
    ``labels`` = the groups present, in sorted order."""

    codes: np.ndarray
    labels: list[Any]

    @classmethod
    def of(cls, keys: np.ndarray) -> Groups:
        """Groups of one key per row (None or NaN: in no group, as ``groupby`` drops them)."""
        keys = np.asarray(keys, dtype=object)
        codes, uniques = pd.factorize(keys, sort=True)
        return cls(np.asarray(codes, dtype=np.int64), list(uniques))

    @classmethod
    def at(cls, pos: np.ndarray, values: np.ndarray | None = None) -> Groups:
        """Groups of ``values[pos]`` per row (*pos* itself without *values*); -1 in *pos*: in
        no group."""
        pos = np.asarray(pos, dtype=np.int64)
        hit = pos >= 0
        if values is None:
            present = sorted_unique(pos[hit])
            codes = np.full(len(pos), -1, dtype=np.int64)
            codes[hit] = np.searchsorted(present, pos[hit])
            return cls(codes, present.tolist())
        vcodes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
        vcodes = np.asarray(vcodes, dtype=np.int64)
        row = np.full(len(pos), -1, dtype=np.int64)
        row[hit] = vcodes[pos[hit]]
        present = sorted_unique(row[row >= 0])
        codes = np.full(len(pos), -1, dtype=np.int64)
        codes[row >= 0] = np.searchsorted(present, row[row >= 0])
        return cls(codes, [uniques[i] for i in present.tolist()])

    @classmethod
    def one(cls, n: int, label: Any = 0) -> Groups:
        """Every one of *n* rows in one group *label* (none when *n* is 0)."""
        return cls(np.zeros(n, dtype=np.int64), [label] if n else [])

    def segments(self, *within: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(order, bounds)``: the rows in a group, by group code, then by the *within* keys
        (last first, as ``np.lexsort``), then in table order; group *i*'s rows are
        ``order[bounds[i]:bounds[i + 1]]``."""
        kept = np.flatnonzero(self.codes >= 0)
        c = self.codes[kept]
        if within:
            order = kept[np.lexsort((*(w[kept] for w in within), c))]
        else:
            order = kept[np.argsort(c, kind="stable")]
        counts = np.bincount(c, minlength=len(self.labels))
        bounds = np.zeros(len(self.labels) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        return order, bounds


def int_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per segment, the sum of an integer array's ``values[bounds[i]:bounds[i + 1]]`` (exact in
    any order; 0 for an empty segment)."""
    values = np.asarray(values, dtype=np.int64)
    out = np.zeros(len(bounds) - 1, dtype=np.int64)
    full = bounds[1:] > bounds[:-1]
    if full.any():
        out[full] = np.add.reduceat(values, bounds[:-1][full])
    return out


def float_sums(values: np.ndarray, bounds: np.ndarray) -> list[float]:
    """Per segment, ``float(values[bounds[i]:bounds[i + 1]].sum())``: numpy's own summation of
    each slice, the values and their order those of a ``groupby`` part (0.0 when empty)."""
    cuts = zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    return [float(values[a:b].sum()) for a, b in cuts]


def masked_bounds(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The segment bounds of ``x[mask]`` for the segments *bounds* of ``x``."""
    return np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])[bounds]
