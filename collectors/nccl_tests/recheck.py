"""The recheck of nccl-tests numbers: the printed ``algbw`` must equal ``size / time`` and
``busbw`` must equal ``algbw × factor(collective, nranks)`` to the printed precision (the interval
of true values the rounding of each printed number allows); from the same intervals, the
collective and the number of ranks a log does not name."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from collectors.nccl_formulas import bus_factor


def check(rows: pd.DataFrame, factor: float, time_scale_ns: float) -> tuple[np.ndarray, ...]:
    """Expected algbw/busbw and whether the printed values lie within rounding of them."""
    size = rows["size_bytes"].to_numpy(dtype=np.float64)
    t = rows["time_us"].to_numpy(dtype=np.float64) * time_scale_ns
    ht = rows["_ht"].to_numpy(dtype=np.float64) * time_scale_ns
    ha = rows["_ha"].to_numpy(dtype=np.float64)
    hb = rows["_hb"].to_numpy(dtype=np.float64)
    alg = rows["algbw_gbps"].to_numpy(dtype=np.float64)
    bus = rows["busbw_gbps"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = size / t
        lo = size / (t + ht)
        hi = np.where(t - ht > 0, size / (t - ht), np.inf)
    eps = 1e-9
    alg_ok = (alg >= lo - ha - eps) & (alg <= hi + ha + eps)
    bus_ok = (bus >= lo * factor - hb - eps) & (bus <= hi * factor + hb + eps)
    known_t = np.isfinite(t) & np.isfinite(alg)
    alg_ok = np.where(known_t, alg_ok, np.nan)
    bus_ok = np.where(known_t & np.isfinite(bus) & np.isfinite(factor), bus_ok, np.nan)
    return expected, expected * factor, alg_ok, bus_ok


def _factor_interval(rows: pd.DataFrame, time_scale_ns: float) -> tuple[float, float]:
    """Range of busbw/algbw factors consistent with every row's rounding (lo > hi: none)."""
    ok = rows[np.isfinite(rows["busbw_gbps"]) & np.isfinite(rows["time_us"])]
    ok = ok[ok["size_bytes"] > 0]
    if ok.empty:
        return 0.0, math.inf
    size = ok["size_bytes"].to_numpy(np.float64)
    t = ok["time_us"].to_numpy(np.float64) * time_scale_ns
    ht = ok["_ht"].to_numpy(np.float64) * time_scale_ns
    hb = ok["_hb"].to_numpy(np.float64)
    bus = ok["busbw_gbps"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg_lo = size / (t + ht)
        alg_hi = np.where(t - ht > 0, size / (t - ht), np.inf)
        f_lo = (bus - hb) / alg_hi
        f_hi = np.where(alg_lo > 0, (bus + hb) / alg_lo, np.inf)
    return float(np.max(np.maximum(f_lo, 0.0))), float(np.min(f_hi))


_MAX_RANKS = 1 << 20


def consistent_n(rows: pd.DataFrame, collective: str, time_scale_ns: float) -> list[int]:
    """Rank counts ``n ≥ 2`` whose bus factor fits every row (solved from the factor range)."""
    f_lo, f_hi = _factor_interval(rows, time_scale_ns)
    if f_lo > f_hi:
        return []
    top = 2.0 if collective == "all_reduce" else 1.0  # factor = top × (n−1)/n

    def n_of(f: float) -> float:
        return math.inf if f >= top else top / (top - f)

    n_lo, n_hi = n_of(f_lo), n_of(f_hi)
    if n_lo > _MAX_RANKS:
        return []
    lo = max(2, math.ceil(n_lo - 1e-9))
    hi = min(_MAX_RANKS, math.floor(n_hi + 1e-9) if math.isfinite(n_hi) else _MAX_RANKS)
    if hi - lo > 16:  # too loose to name n (only tiny messages, or n very large)
        return []
    return [n for n in range(lo, hi + 1) if f_lo <= bus_factor(collective, n) <= f_hi]


def infer_collective(
    rows: pd.DataFrame, time_scale_ns: float, nranks: int | None
) -> tuple[str | None, list[str]]:
    """Collective from the busbw/algbw family and the redop column, when the log has no name."""
    f_lo, f_hi = _factor_interval(rows, time_scale_ns)
    fits = []
    for coll in ("broadcast", "all_reduce", "all_gather"):
        if nranks:
            if f_lo <= bus_factor(coll, nranks) <= f_hi:
                fits.append(coll)
        elif coll == "broadcast":
            if f_lo <= 1.0 <= f_hi:
                fits.append(coll)
        elif consistent_n(rows, coll, time_scale_ns):
            fits.append(coll)
    redops = {r for r in rows["redop"].dropna().unique() if r.lower() != "none"}
    if fits == ["all_reduce"]:
        return "all_reduce", []
    if fits == ["broadcast"]:
        return ("reduce" if redops else "broadcast"), []
    if fits == ["all_gather"]:
        if redops:
            return "reduce_scatter", []
        return None, ["all_gather", "all_to_all", "gather", "scatter"]
    return None, fits
