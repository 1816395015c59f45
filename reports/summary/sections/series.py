"""Run-level JSON section ``run``: where the traces came from, their annotated ranges (NVTX,
user), and the NVML counters over time.

Registered in ``reports.summary.RUN_SECTIONS`` as ``run``; every key is defined in
``docs/report.md`` §2.  The HTML report reads it for its header and its counter timeline;
nothing else in the summary carries the source metadata or the NVML samples (which live beside
the traces: ``AnalysisInputs.nvml`` = ``{host: counters table}``).

Counter series are decimated for plotting (min-max buckets, at most :data:`MAX_POINTS` points
per series; the full samples stay in ``RUN/counters/<host>.csv.gz``).  Times are integer ns
relative to the host's first sample (``t0_unix_ns``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.energy import energy_per_step, node_energy_per_step_mj
from analyzers.options import AnalysisOptions
from analyzers.throttle import throttle_bands

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.inputs import AnalysisInputs
    from collectors.model import Trace

MAX_POINTS = 1000
"""Most points kept per (host, device, field) series: MAX_POINTS / 2 buckets × (min, max)."""
MAX_BANDS = 500
"""Most throttle bands kept per host (the longest; ``throttle_bands_dropped`` counts the rest)."""

PLOT_FIELDS = (
    "power_instant_mw",
    "power_usage_mw",
    "gpu_util_pct",
    "mem_util_pct",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "gpu_temp_c",
    "memory_temp_c",
    "mem_used_bytes",
    "pcie_tx_kbps",
    "pcie_rx_kbps",
    "gpm_sm_util_pct",
    "gpm_sm_occupancy_pct",
    "gpm_tensor_active_pct",
    "gpm_dram_bw_util_pct",
)
"""NVML fields kept as series (cumulative counters — energy, NVLink KiB — are not plotted)."""

TOP_RANGES = 20
"""Annotated-range names kept per rank (largest total time first)."""
RANGE_KINDS = ("user", "nvtx", "gpu_user")

META_KEYS = ("command", "host", "hosts", "world_size", "exit_code", "started_unix_ns")
"""Keys copied from ``RUN/meta.json`` (with ``ended_unix_ns``, ``git``, ``versions``)."""


def decimate(ts: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of the samples to keep: all when ≤ *max_points*, else per bucket the min and max.

    The samples (in time order) are cut into ``max_points // 2`` buckets of equal count; each
    bucket keeps its smallest and largest value (first occurrence; one index when they
    coincide), in time order, so peaks and dips survive.
    """
    n = len(ts)
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, max_points // 2)
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    keep: list[int] = []
    for lo, hi in itertools.pairwise(edges):
        if hi <= lo:
            continue
        seg = values[lo:hi]
        a = lo + int(np.argmin(seg))
        b = lo + int(np.argmax(seg))
        keep.extend(sorted({a, b}))
    return np.asarray(keep, dtype=np.int64)


def _series(df: pd.DataFrame, t0: int) -> list[dict[str, Any]]:
    out = []
    rows = df[df["name"].isin(PLOT_FIELDS) & (df["device"] >= 0)]
    for (dev, field), g in rows.groupby(["device", "name"], sort=True, observed=True):
        g = g.sort_values("ts_ns", kind="stable")
        g = g[np.isfinite(g["value"].to_numpy(dtype=np.float64))]
        if g.empty:
            continue
        ts = g["ts_ns"].to_numpy(dtype=np.int64)
        val = g["value"].to_numpy(dtype=np.float64)
        idx = decimate(ts, val)
        out.append(
            {
                "device": int(dev),
                "field": str(field),
                "samples": len(ts),
                "decimated": len(idx) < len(ts),
                "t_ns": [int(x) for x in ts[idx] - t0],
                "value": [float(x) for x in val[idx]],
            }
        )
    return out


def _throttle(df: pd.DataFrame, t0: int) -> list[dict[str, Any]]:
    """:func:`analyzers.throttle.throttle_bands`, times relative to *t0*."""
    return [
        {
            "device": b.device,
            "start_ns": b.start_ns - t0,
            "end_ns": b.end_ns - t0,
            "reasons": list(b.reasons),
        }
        for b in throttle_bands(df)
    ]


def _energy(df: pd.DataFrame, t0: int) -> tuple[list[dict[str, Any]], float | None]:
    """:func:`analyzers.energy.energy_per_step` (times relative to *t0*, missing readings
    None) and :func:`analyzers.energy.node_energy_per_step_mj`."""
    e = energy_per_step(df)
    rows = []
    for r in e.itertuples(index=False):
        mj = float(r.energy_mj)
        ok = np.isfinite(mj)
        rows.append(
            {
                "step": int(r.step),
                "device": int(r.device),
                "start_ns": int(r.start_ns) - t0,
                "end_ns": int(r.end_ns) - t0,
                "energy_mj": mj if ok else None,
                "avg_power_w": float(r.avg_power_w) if ok else None,
            }
        )
    return rows, node_energy_per_step_mj(e)


def nvml_host(host: str, df: pd.DataFrame) -> dict[str, Any] | None:
    """One host's counters, ready to plot (None when the file holds no sample)."""
    if df.empty:
        return None
    t0 = int(df["ts_ns"].min())
    marks = df[df["name"] == "step_begin"].sort_values("ts_ns", kind="stable")
    bands = _throttle(df, t0)
    dropped = max(0, len(bands) - MAX_BANDS)
    if dropped:
        bands = sorted(bands, key=lambda b: b["start_ns"] - b["end_ns"])[:MAX_BANDS]
        bands.sort(key=lambda b: (b["device"], b["start_ns"]))
    energy, per_step_mj = _energy(df, t0)
    return {
        "host": host,
        "t0_unix_ns": t0,
        "duration_ns": int(df["ts_ns"].max()) - t0,
        "devices": sorted({int(d) for d in df["device"] if int(d) >= 0}),
        "series": _series(df, t0),
        "step_marks": [
            {"step": int(v), "t_ns": int(t) - t0}
            for t, v in zip(marks["ts_ns"], marks["value"], strict=True)
        ],
        "throttle": bands,
        "throttle_bands_dropped": dropped,
        "energy_steps": energy,
        "energy_per_step_mj": per_step_mj,
    }


def ranges(trace: Trace) -> list[dict[str, Any]]:
    """The rank's annotated ranges (NVTX, user, GPU user; whole trace) by (kind, name):
    ``count``, ``total_ns`` (Σ end − start), ``max_ns``; the :data:`TOP_RANGES` largest
    (total descending, then kind and name; a tie in all three in first-appearance order)."""
    import pandas as pd

    a = trace.annotations
    keep = np.asarray(a["kind"].isin(RANGE_KINDS), dtype=bool)
    if not keep.any():
        return []
    keep = keep & np.asarray(a["name"].notna(), dtype=bool)  # groupby drops a missing key
    d = (a["end_ns"].to_numpy() - a["start_ns"].to_numpy())[keep].astype(np.int64)
    # one id per distinct (kind, name) as strings
    kind, name = (_str_ids(a[c], keep) for c in ("kind", "name"))
    key = kind[1][kind[0]].astype(np.int64) * len(name[2]) + name[1][name[0]]
    codes, uniq = pd.factorize(key)  # first appearance, as groupby(sort=False)
    count = np.bincount(codes)
    total = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(total, codes, d)
    most = np.full(uniq.size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(most, codes, d)
    groups = [
        (kind[2][k // len(name[2])], name[2][k % len(name[2])], int(c), int(t), int(m))
        for k, c, t, m in zip(
            uniq.tolist(), count.tolist(), total.tolist(), most.tolist(), strict=True
        )
    ]
    groups.sort(key=lambda g: (-g[3], g[0], g[1]))
    return [
        {"kind": k, "name": n, "count": c, "total_ns": t, "max_ns": m}
        for k, n, c, t, m in groups[:TOP_RANGES]
    ]


def _str_ids(col: pd.Series, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The kept rows' category codes, the id of each code and the distinct strings of
    ``col.astype(str)`` the ids stand for."""
    import pandas as pd

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    index: dict[str, int] = {}
    ids = np.array(
        [index.setdefault(t, len(index)) for t in map(str, cat.cat.categories)],
        dtype=np.int64,
    )
    return cat.cat.codes.to_numpy()[keep], ids, list(index)


def _run_facts(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The report-relevant part of the parsed ``RUN/meta.json`` (None without one)."""
    if meta is None:
        return None
    out = {k: meta.get(k) for k in META_KEYS}
    out["ended_unix_ns"] = meta.get("ended_unix_ns")
    git = meta.get("git")
    out["git_commit"] = git.get("commit") if isinstance(git, dict) else None
    listed = meta.get("ranks")
    ranks = listed if isinstance(listed, list) else []
    versions = next(
        (
            r["versions"]
            for r in ranks
            if isinstance(r, dict) and isinstance(r.get("versions"), dict)
        ),
        None,
    )
    out["versions"] = versions
    return out


def run(
    traces: Sequence[Trace], options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """Source metadata and annotated ranges per rank, ``RUN/meta.json`` facts, and the NVML
    counter timelines."""
    if not traces:
        return None
    ranks = [
        {
            "rank": t.rank,
            "hostname": t.meta.hostname,
            "source_format": t.meta.source_format,
            "source_version": t.meta.source_version,
            "source_path": t.meta.source_path,
            "world_size": t.meta.world_size,
            "ranges": ranges(t),
        }
        for t in traces
    ]
    nvml = inputs.nvml
    hosts = [h for name in sorted(nvml) if (h := nvml_host(name, nvml[name])) is not None]
    return {
        "ranks": ranks,
        "meta": _run_facts(inputs.run_meta),
        "nvml": hosts,
    }
