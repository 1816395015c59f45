"""The array versions of the per-collective summary and of the exposed communication by label
against the pandas code they replaced, on random traces: NCCL kernels with random sizes (some
unknown, some zero-length), computation beside them, labels on some communication rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import intervals as iv
from analyzers.comm import (
    OTHER,
    SIZE_BUCKETS,
    SUMMARY_COLUMNS,
    collective_summary,
    exposed_by,
    size_bucket,
    window_collectives,
)
from analyzers.options import AnalysisOptions
from analyzers.steps import step_events, step_windows
from analyzers.temporal import typed_events
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from tests.support.builders import host_columns, step_annotations

OPTIONS = AnalysisOptions()
KERNELS = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL",
           "ncclKernel_Broadcast_RING_LL_Sum_int8_t", "gemm", "relu"]  # fmt: skip


def random_trace(seed: int) -> Trace:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    start = np.sort(rng.integers(0, 3000, n))
    names = rng.choice(KERNELS, n).tolist()
    args = [
        {"In msg nelems": int(rng.choice([-1, 0, 10, 30_000, 10**7])), "dtype": "Float",
         "Group size": int(rng.choice([1, 2, 8]))} if rng.random() < 0.7 else None
        for _ in range(n)
    ]  # fmt: skip
    corr = np.arange(n) + 1
    launch = start - rng.integers(0, 200, n)
    steps = [(1, 0, 1000), (2, 1000, 2000), (3, 2000, 3000)]
    host = [("cudaLaunchKernel", "cuda_runtime", int(t), int(t) + 5, int(c))
            for t, c in zip(launch, corr, strict=True) if rng.random() < 0.9]  # fmt: skip
    host += [(f"ProfilerStep#{k}", "user_annotation", s, e, -1) for k, s, e in steps]
    return make_trace(
        TraceMeta(
            rank=0,
            source_format="synthetic",
            devices=[DeviceInfo(id=0, name=str(rng.choice(["NVIDIA H100", "Tesla T4"])))],
        ),
        gpu={
            "name": names,
            "kind": ["kernel"] * n,
            "stream": rng.integers(7, 9, n),
            "start_ns": start,
            "end_ns": start + rng.integers(0, 300, n),
            "correlation": corr,
            "device": rng.choice([-1, 0], n),
            "comm_args": [
                a if x.startswith("nccl") else None for a, x in zip(args, names, strict=True)
            ],
        },
        host=host_columns(host),
        annotations=step_annotations(steps),
    )


# --------------------------------------------------------------------------- references


def ref_agg(df: pd.DataFrame) -> dict[str, float | int]:
    bw = df[np.isfinite(df["busbw_gbps"])]
    al = df[np.isfinite(df["algbw_gbps"])]
    known = df["message_bytes"] >= 0
    pct = df["busbw_link_pct"].dropna()
    return {
        "count": len(df),
        "bytes": int(df.loc[known, "message_bytes"].sum()) if known.any() else -1,
        "time_ns": int(df["duration_ns"].sum()),
        "median_time_ns": int(df["duration_ns"].quantile(0.5, interpolation="lower")),
        "median_algbw_gbps": float(al["algbw_gbps"].median()) if len(al) else float("nan"),
        "median_busbw_gbps": float(bw["busbw_gbps"].median()) if len(bw) else float("nan"),
        "max_busbw_gbps": float(bw["busbw_gbps"].max()) if len(bw) else float("nan"),
        "median_busbw_link_pct": float(pct.median()) if len(pct) else float("nan"),
    }


def ref_summary(trace: Trace) -> pd.DataFrame:
    c = window_collectives(trace, OPTIONS)
    if c.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    c = c.assign(
        collective=c["collective"].fillna("unknown"), size_bucket=size_bucket(c["message_bytes"])
    )
    rows = []
    order = [b[0] for b in SIZE_BUCKETS] + ["unknown"]
    for coll, grp in c.groupby("collective", sort=False):
        rows.append({"collective": coll, "size_bucket": "all", **ref_agg(grp)})
        for bucket in order:
            sub = grp[grp["size_bucket"] == bucket]
            if len(sub):
                rows.append({"collective": coll, "size_bucket": bucket, **ref_agg(sub)})
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    totals = out[out["size_bucket"] == "all"].set_index("collective")["time_ns"]
    out["_t"] = out["collective"].map(totals)
    out["_b"] = out["size_bucket"].map({b: i for i, b in enumerate(["all", *order])})
    out = out.sort_values(["_t", "collective", "_b"], ascending=[False, True, True])
    return out.drop(columns=["_t", "_b"]).reset_index(drop=True)


def ref_exposed(trace: Trace, labels: Mapping[int, str]) -> tuple[list, list]:
    g = typed_events(trace, OPTIONS)
    s, e, t = g["start_ns"].to_numpy(), g["end_ns"].to_numpy(), g["type"].to_numpy()
    comp = iv.merge(s[t == "COMPUTATION"], e[t == "COMPUTATION"])
    is_comm = t == "COMMUNICATION"
    row_label = pd.Series(labels, dtype=object).reindex(g.index).to_numpy(dtype=object)
    row_label = np.where(pd.isna(row_label), OTHER, row_label)
    se = step_events(trace, OPTIONS)
    lo, hi = step_windows(se)
    sev = se.events
    ss, st_e, st = sev["start_ns"].to_numpy(), sev["end_ns"].to_numpy(), sev["type"].to_numpy()
    s_comm = st == "COMMUNICATION"
    s_label = pd.Series(labels, dtype=object).reindex(sev.index).to_numpy(dtype=object)
    s_label = np.where(pd.isna(s_label), OTHER, s_label)
    by_label, by_step = [], []

    def add_steps(label: str, m: np.ndarray) -> None:
        ci = iv.merge(ss[m], st_e[m])
        ex = iv.subtract(ci, se.compute)
        a, b = iv.covered_in_windows(ci, lo, hi), iv.covered_in_windows(ex, lo, hi)
        by_step.extend((label, int(x), int(y)) for x, y in zip(a, b, strict=True))

    add_steps("all", s_comm)
    for label in sorted({str(x) for x in row_label[is_comm]} | {str(x) for x in s_label[s_comm]}):
        m = is_comm & (row_label == label)
        ci = iv.merge(s[m], e[m])
        if m.any():
            by_label.append((label, iv.total(ci), iv.total(iv.subtract(ci, comp))))
        add_steps(label, s_comm & (s_label == label))
    return sorted(by_label, key=lambda r: (-r[2], r[0])), by_step


def _rows(df: pd.DataFrame) -> list[list[object]]:
    """The rows as lists of plain values, NaN as None (comparable with ``==``)."""
    return [[None if x != x else x for x in r] for r in df.astype(object).values.tolist()]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.sampled_from(["tp", "dp", OTHER, None]), max_size=40))
def test_comm_arrays_equal_the_pandas_code_they_replaced(seed: int, names: list) -> None:
    trace = random_trace(seed)
    assert _rows(collective_summary(trace, OPTIONS)) == _rows(ref_summary(trace))
    labels = {i: x for i, x in enumerate(names) if i < len(trace.gpu) and i % 3}
    got = exposed_by(trace, labels, OPTIONS)
    by_label, by_step = ref_exposed(trace, labels)
    assert got.by_label.values.tolist() == [list(r) for r in by_label]
    assert got.by_step[["label", "comm_ns", "exposed_ns"]].values.tolist() == [
        list(r) for r in by_step
    ]
