"""What the nccl-tests reader checks in each result row (docs/reliability.md).

A row is *left out*, with a warning naming its line, when a value it cannot be without is
impossible:

* ``size`` or ``count`` not an integer in ``[0, 2**63 − 1]`` ("size or count outside …");
* a time that is printed but is zero, negative or not finite ("time is zero, negative or not
  finite");
* an ``algbw`` or ``busbw`` that is negative or infinite ("bandwidth negative or not finite").

A time or bandwidth that is not a number (``N/A``, text) stays in the row as unknown (NaN), as
nccl-tests itself prints ``N/A`` for ranks that do not time; an odd ``root`` or ``#wrong`` is
read as unknown (-1 / NaN).  Expected values that overflow (a time of 1e-320 µs) are unknown,
so the rows never hold an infinity.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

INT64_MAX = 2**63 - 1


def as_int(value: Any, lo: int = 0) -> int | None:
    """*value* as an int in ``[lo, 2**63 − 1]``; None when it is not one (bools, text, floats
    with a fraction, out of range)."""
    if value.__class__ is bool:
        return None
    if isinstance(value, int):
        return int(value) if lo <= value <= INT64_MAX else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return as_int(int(value), lo)
    return None


def as_float(value: Any) -> float:
    """*value* as a float; NaN when it is not a number (bools and text included)."""
    if value.__class__ is bool or not isinstance(value, (int, float)):
        return math.nan
    try:
        return float(value)
    except OverflowError:  # an int beyond 1e308
        return math.inf if value > 0 else -math.inf


def finite_or_nan(values: Any) -> np.ndarray:
    """A float array with every infinity replaced by NaN (unknown)."""
    a = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(a), a, np.nan)


def left_out(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows of *df* (columns ``size_bytes``, ``count``, ``time_us``, ``algbw_gbps``,
    ``busbw_gbps``, ``root``, ``wrong``, ``line``) that pass the checks above, and one warning
    per row left out."""
    if df.empty:
        return df, []
    size_ok = np.array([as_int(v) is not None for v in df["size_bytes"]], dtype=bool)
    count_ok = np.array([as_int(v) is not None for v in df["count"]], dtype=bool)
    t = df["time_us"].to_numpy(dtype=np.float64)
    alg = df["algbw_gbps"].to_numpy(dtype=np.float64)
    bus = df["busbw_gbps"].to_numpy(dtype=np.float64)
    time_bad = ~np.isnan(t) & ~(np.isfinite(t) & (t > 0))
    bw_bad = np.zeros(len(df), dtype=bool)
    for b in (alg, bus):
        bw_bad |= ~np.isnan(b) & ~(np.isfinite(b) & (b >= 0))
    warnings = []
    for i, line in enumerate(df["line"]):
        if not (size_ok[i] and count_ok[i]):
            why = "size or count outside 0…2^63−1"
        elif time_bad[i]:
            why = f"time is zero, negative or not finite ({t[i]:g})"
        elif bw_bad[i]:
            why = f"bandwidth negative or not finite (algbw {alg[i]:g}, busbw {bus[i]:g})"
        else:
            continue
        place = str(df["placement"].iloc[i]).replace("_", "-")
        warnings.append(f"line {line} ({place}): {why}; row left out")
    keep = size_ok & count_ok & ~time_bad & ~bw_bad
    out = df[keep].copy()
    out["root"] = [r if (r := as_int(v, lo=-(2**63))) is not None else -1 for v in out["root"]]
    w = out["wrong"].to_numpy(dtype=np.float64)
    out["wrong"] = np.where(np.isfinite(w) & (w >= 0), w, np.nan)
    return out, warnings
