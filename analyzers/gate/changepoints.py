"""Level shifts in a benchmark's history of runs (the trend page, docs/gating.md §7).

* **Environment segments**: within one (benchmark, branch, series), a new segment starts at the
  first run whose environment fingerprint differs from the run before.
* **Change points**: found by ``ruptures`` (PELT, L2 cost, minimum segment length 3) within each
  environment segment, on the series divided by the noise scale ``σ = sd(first
  differences)/√2`` (a level shift adds one large difference; a lone spike inflates σ instead of
  becoming a segment), with penalty ``4·ln n`` (BIC-like).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import ruptures as rpt

from analyzers.stats import median

CP_MIN_SIZE = 3
CP_PENALTY_PER_LOG_N = 4.0


def change_points(
    values: Sequence[float] | np.ndarray, *, min_size: int = CP_MIN_SIZE
) -> list[int]:
    """Indices where a new level starts (PELT with L2 cost from ``ruptures``; see module doc).

    Returns an empty list for series shorter than ``2·min_size`` or without noise and steps.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 2 * min_size:
        return []
    sigma = float(np.std(np.diff(x), ddof=1)) / math.sqrt(2.0)
    if sigma == 0.0:
        return []
    z = ((x - median(x)) / sigma).reshape(-1, 1)
    algo = rpt.Pelt(model="l2", min_size=min_size, jump=1).fit(z)
    bkps = algo.predict(pen=CP_PENALTY_PER_LOG_N * math.log(n))
    return [int(b) for b in bkps if b < n]


def annotate_history(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``segment`` (environment segment number) and ``change_point`` (True at the first run
    of a new level) to a :meth:`reports.store.Store.history` frame, per (name, branch, key)."""
    out = []
    for _, g in df.groupby(["name", "branch", "key"], dropna=False, sort=True):
        g = g.sort_values(["recorded_at", "run_id"], kind="stable").copy()
        fp = g["fingerprint"].to_numpy()
        seg = np.concatenate([[0], np.cumsum(fp[1:] != fp[:-1])]) if len(g) else np.array([])
        g["segment"] = seg.astype(np.int64)
        cp = np.zeros(len(g), dtype=bool)
        pos = 0
        for _, part in g.groupby("segment", sort=True):
            for i in change_points(part["value"].to_numpy(dtype=np.float64)):
                cp[pos + i] = True
            pos += len(part)
        g["change_point"] = cp
        out.append(g)
    if not out:
        return df.assign(segment=pd.Series(dtype="int64"), change_point=pd.Series(dtype=bool))
    return pd.concat(out, ignore_index=True)
