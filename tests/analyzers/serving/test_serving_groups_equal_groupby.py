"""The serving tables grouped by sorted integer codes (:mod:`analyzers.serving.groups`:
:func:`~analyzers.serving.flops.mfu_table`, :func:`~analyzers.serving.flops.category_roofs`,
:func:`~analyzers.serving.categories.category_breakdown`) equal the ``DataFrame.groupby`` loops
they replaced, exactly (float sums in the same order), on generated rows whose FLOPs span
twenty orders of magnitude and on the real serving traces."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzers import intervals
from analyzers.gpu_peaks import find_peaks
from analyzers.serving import serving_analysis
from analyzers.serving.categories import CATEGORIES, category_breakdown
from analyzers.serving.flops import MFU_COLUMNS, ROOF_COLUMNS, category_roofs, mfu_table
from analyzers.serving.groups import Groups
from collectors.kineto import read_kineto
from collectors.peaks import load_peaks
from tests.support.serving_data import SERVING, inference

PEAKS = find_peaks(load_peaks(None), "H100 SXM5 80 GB")


def _ref_mfu(rows: pd.DataFrame, keys: np.ndarray, peaks: Any, busy: Any = None) -> pd.DataFrame:
    """The loop over ``groupby`` parts that :func:`mfu_table` replaced."""
    keep = np.array([k is not None for k in keys], dtype=bool)
    if not keep.any():
        return pd.DataFrame(columns=list(MFU_COLUMNS))
    out = []
    for g, part in rows[keep].assign(_g=keys[keep]).groupby("_g", sort=True):
        b = busy.get(g) if busy is not None else None
        if b is None:
            b = intervals.total(
                intervals.merge(part["start_ns"].to_numpy(), part["end_ns"].to_numpy())
            )
        dur = part["dur_ns"].to_numpy(dtype=np.int64)
        mod = part["modelled"].to_numpy(dtype=bool)
        rec = part["recomputed"].to_numpy(dtype=bool)
        fl = part["flops"].to_numpy(dtype=float)
        gpu_ns, modelled_ns = int(dur.sum()), int(dur[mod].sum())
        model, recomputed = float(fl[~rec].sum()), float(fl[rec].sum())
        every = model + recomputed
        exact = float(fl[part["exact"].to_numpy(dtype=bool)].sum())
        by_prec = pd.Series(fl[mod]).groupby(part["precision"].to_numpy()[mod]).sum()
        dtype = str(by_prec.idxmax()) if len(by_prec) and by_prec.max() > 0 else None
        peak = peaks.peak_flops(dtype) if peaks is not None and dtype is not None else None
        busy_ns = int(b)
        achieved = model * 1e9 / busy_ns if busy_ns > 0 else None
        out.append(
            {
                "group": g,
                "busy_ns": busy_ns,
                "gpu_ns": gpu_ns,
                "modelled_ns": modelled_ns,
                "coverage": modelled_ns / gpu_ns if gpu_ns else None,
                "model_flops": model,
                "recomputed_flops": recomputed,
                "exact_share": exact / every if every > 0 else None,
                "dtype": dtype,
                "peak": peaks.name if peaks is not None and peak else None,
                "peak_flops": peak,
                "achieved_flops_per_s": achieved,
                "mfu": achieved / peak if achieved is not None and peak else None,
                "hfu": every * 1e9 / busy_ns / peak
                if recomputed > 0 and busy_ns > 0 and peak
                else None,
            }
        )
    return pd.DataFrame(out, columns=list(MFU_COLUMNS))


def _ref_roofs(rows: pd.DataFrame, keys: np.ndarray | None, peaks: Any) -> pd.DataFrame:
    """The loop over ``groupby`` parts that :func:`category_roofs` replaced."""
    keys = np.zeros(len(rows), dtype=object) if keys is None else np.asarray(keys, dtype=object)
    keep = np.array([k is not None for k in keys], dtype=bool) & rows["modelled"].to_numpy(bool)
    if not keep.any():
        return pd.DataFrame(columns=list(ROOF_COLUMNS))
    df = rows[keep].assign(_g=keys[keep])
    bw = peaks.mem_bw_bytes_per_s if peaks is not None else None
    if peaks is not None:
        pk = {p: peaks.peak_flops(p) for p in set(df["precision"].dropna())}
        peak = df["precision"].map(pk).to_numpy(dtype=float)
        t_flop = df["flops"].to_numpy() / peak * 1e9
        t_mem = df["bytes"].to_numpy() / bw * 1e9 if bw else np.zeros(len(df))
        roof = np.where(np.isfinite(t_flop), np.maximum(t_flop, t_mem), np.nan)
    else:
        roof = np.full(len(df), np.nan)
    df = df.assign(_roof=roof, _rdur=np.where(np.isfinite(roof), df["dur_ns"], 0))
    out = []
    for (g, c), part in df.groupby(["_g", "category"], sort=True):
        known = int(part["_rdur"].sum())
        roof_ns = float(np.nansum(part["_roof"])) if known else None
        out.append(
            {
                "group": g,
                "category": c,
                "modelled_ns": int(part["dur_ns"].sum()),
                "model_flops": float(part["flops"].sum()),
                "roof_ns": roof_ns,
                "pct_of_roof": 100.0 * roof_ns / known if roof_ns is not None else None,
            }
        )
    return pd.DataFrame(out, columns=list(ROOF_COLUMNS))


def _ref_breakdown(kops: pd.DataFrame, by: np.ndarray) -> pd.DataFrame:
    """The ``groupby`` aggregation that :func:`category_breakdown` replaced."""
    df = pd.DataFrame(
        {
            "group": pd.Series(by, dtype=object),
            "category": pd.Categorical(kops["category"].to_numpy(), categories=CATEGORIES),
            "time_ns": kops["dur_ns"].to_numpy(dtype=np.int64),
        }
    )
    df = df[df["group"].notna()]
    agg = (
        df.groupby(["group", "category"], observed=True, sort=True)["time_ns"]
        .agg(["size", "sum"])
        .rename(columns={"size": "kernels", "sum": "time_ns"})
        .reset_index()
    )
    totals = agg.groupby("group")["time_ns"].transform("sum")
    agg["share"] = np.where(totals > 0, agg["time_ns"] / totals.where(totals > 0, 1), np.nan)
    agg["category"] = agg["category"].astype(object)
    agg["kernels"] = agg["kernels"].astype(np.int64)
    agg["time_ns"] = agg["time_ns"].astype(np.int64)
    return agg[["group", "category", "kernels", "time_ns", "share"]].reset_index(drop=True)


def _generated(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 10**9, n)
    dur = rng.integers(0, 10**6, n)
    dur[rng.random(n) < 0.05] = 0
    flops = rng.random(n) * 10.0 ** rng.integers(-3, 18, n)
    precision = rng.choice(np.array(["fp16_tensor", "fp32", "tf32_tensor", "fp8_tensor", "x"]), n)
    return pd.DataFrame(
        {
            "start_ns": start,
            "end_ns": start + dur,
            "dur_ns": dur,
            "modelled": rng.random(n) < 0.8,
            "recomputed": rng.random(n) < 0.1,
            "flops": flops,
            "bytes": flops * rng.random(n),
            "exact": rng.random(n) < 0.5,
            "precision": pd.Series(precision, dtype=object),
            "category": pd.Series(rng.choice(np.array(CATEGORIES, dtype=object), n), dtype=object),
        }
    )


def _keys(n: int, groups: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    keys = rng.integers(-1, groups, n)
    return np.array([int(k) if k >= 0 else None for k in keys.tolist()], dtype=object)


@pytest.mark.parametrize("seed", range(4))
def test_generated_rows_in_many_groups(seed: int) -> None:
    rows = _generated(20_000, seed)
    keys = _keys(len(rows), 300, seed)
    busy = {k: 7 * k for k in range(0, 300, 2)}  # given for some groups, unions for the rest
    for peaks in (PEAKS, None):
        pd.testing.assert_frame_equal(
            mfu_table(rows, keys, peaks, busy), _ref_mfu(rows, keys, peaks, busy), check_exact=True
        )
        pd.testing.assert_frame_equal(
            category_roofs(rows, keys, peaks), _ref_roofs(rows, keys, peaks), check_exact=True
        )
    pd.testing.assert_frame_equal(
        category_breakdown(rows, keys), _ref_breakdown(rows, keys), check_exact=True
    )


def test_string_keys_one_group_and_no_group() -> None:
    rows = _generated(5_000, 9)
    phases = np.array(["prefill", "decode", "mixed", None], dtype=object)
    keys = phases[np.random.default_rng(9).integers(0, 4, len(rows))]
    pd.testing.assert_frame_equal(
        mfu_table(rows, keys, PEAKS), _ref_mfu(rows, keys, PEAKS), check_exact=True
    )
    pd.testing.assert_frame_equal(
        category_roofs(rows, None, PEAKS), _ref_roofs(rows, None, PEAKS), check_exact=True
    )
    none = np.full(len(rows), None, dtype=object)
    pd.testing.assert_frame_equal(mfu_table(rows, none, PEAKS), _ref_mfu(rows, none, PEAKS))
    pd.testing.assert_frame_equal(category_roofs(rows, none, PEAKS), _ref_roofs(rows, none, PEAKS))


def test_groups_at_positions_equal_groups_of_their_keys() -> None:
    rng = np.random.default_rng(3)
    pos = rng.integers(-1, 40, 1_000)
    values = rng.choice(np.array(["decode", "prefill", "mixed"], dtype=object), 40)
    for got, keys in (
        (Groups.at(pos, values), [values[p] if p >= 0 else None for p in pos.tolist()]),
        (Groups.at(pos), [p if p >= 0 else None for p in pos.tolist()]),
    ):
        want = Groups.of(np.array(keys, dtype=object))
        assert got.labels == want.labels and np.array_equal(got.codes, want.codes)
        assert all(got.labels[c] == k for c, k in zip(got.codes, keys, strict=True) if c >= 0)


@pytest.mark.parametrize("name", sorted(SERVING))
def test_real_serving_traces(name: str) -> None:
    a = serving_analysis(read_kineto(inference(SERVING[name])), peaks=PEAKS)
    k = a.kops
    by_step = np.array([o if o >= 0 else None for o in a.owner.tolist()], dtype=object)
    phases = a.steps["phase"].to_numpy() if len(a.steps) else np.zeros(0, object)
    by_phase = np.array([phases[o] if o >= 0 else None for o in a.owner.tolist()], dtype=object)
    for keys in (by_step, by_phase, np.zeros(len(k), dtype=object)):
        pd.testing.assert_frame_equal(
            mfu_table(k, keys, PEAKS), _ref_mfu(k, keys, PEAKS), check_exact=True
        )
        pd.testing.assert_frame_equal(
            category_roofs(k, keys, PEAKS), _ref_roofs(k, keys, PEAKS), check_exact=True
        )
        pd.testing.assert_frame_equal(
            category_breakdown(k, keys), _ref_breakdown(k, keys), check_exact=True
        )
