"""The array version of the launch analysis against the pandas code it replaced, on random
traces with several host calls per correlation id, graph launches, copies, unnamed kernels and
ties: the launch tables (rows and order), the per-kernel and per-step distributions and delay
unions, and the summary section's call counts by API.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.launch import (
    HTA_QUEUE_NAMES,
    _api_name_in,
    _is_graph_launch,
    _step_of,
    all_launches,
    delay_union_by,
    grouped_distributions,
    hta_launches,
    queue_length,
    queue_summary,
)
from analyzers.options import AnalysisOptions
from analyzers.window import gpu_events
from collectors.linking import launching_calls
from collectors.model import GPU_WORK_KINDS, Trace, TraceMeta, make_trace, str_array
from reports.summary.sections.wait import launch as launch_section
from tests.support.builders import host_columns, step_annotations

OPTIONS = AnalysisOptions()
CALLS = ["cudaLaunchKernel", "cudaLaunchKernel_v7000", "cudaMemcpyAsync", "cudaGraphLaunch",
         "cuLaunchKernel", "hipLaunchKernel"]  # fmt: skip


def random_trace(seed: int) -> Trace:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    start = np.sort(rng.integers(0, 60, n)) * 1000
    corr = rng.integers(-1, max(2, n // 2), n)
    names = rng.choice(["gemm", "relu", "Memcpy HtoD", "nccl", "-"], n).tolist()
    kind = ["memcpy" if x.startswith("Memcpy") else "kernel" for x in names]
    host: list[tuple] = []
    for c in sorted(set(corr.tolist()) - {-1}):
        for _ in range(int(rng.integers(0, 3))):  # none, one or two calls per id
            t = int(rng.integers(0, 60)) * 1000
            cat = "cuda_runtime" if rng.random() < 0.9 else "cpu_op"
            host.append((str(rng.choice(CALLS)), cat, t, t + int(rng.integers(0, 9)) * 1000, c))
    steps = [(1, 0, 20_000), (2, 20_000, 40_000), (3, 40_000, 60_000)]
    host += [(f"ProfilerStep#{k}", "user_annotation", s, e, -1) for k, s, e in steps]
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [None if x == "-" else x for x in names],
            "kind": kind,
            "stream": rng.integers(7, 9, n),
            "start_ns": start,
            "end_ns": start + rng.integers(0, 5, n) * 1000,
            "correlation": corr,
        },
        host=host_columns(host),
        annotations=step_annotations(steps),
    )


# --------------------------------------------------------------------------- references


def ref_join(trace: Trace, host: pd.DataFrame, gpu: pd.DataFrame) -> pd.DataFrame:
    gpu = gpu[["correlation", "name", "kind", "stream", "start_ns", "end_ns"]]
    j = host[["correlation", "name", "start_ns", "end_ns"]].merge(
        gpu.assign(gpu_index=gpu.index.to_numpy()), on="correlation", suffixes=("_cpu", "_gpu")
    )
    j = j.take(np.lexsort((j["start_ns_gpu"].to_numpy(), j["start_ns_cpu"].to_numpy())))
    cs, ce = j["start_ns_cpu"].to_numpy(), j["end_ns_cpu"].to_numpy()
    gs, ge = j["start_ns_gpu"].to_numpy(), j["end_ns_gpu"].to_numpy()
    return pd.DataFrame(
        {
            "gpu_index": j["gpu_index"].to_numpy(),
            "correlation": j["correlation"].to_numpy(),
            "launch_name": str_array(j["name_cpu"]),
            "name": str_array(j["name_gpu"]),
            "kind": str_array(j["kind"]),
            "stream": j["stream"].to_numpy(),
            "cpu_start_ns": cs,
            "cpu_duration_ns": ce - cs,
            "gpu_start_ns": gs,
            "gpu_duration_ns": ge - gs,
            "launch_delay_ns": np.maximum(0, gs - ce),
            "start_after_call_ns": gs - cs,
            "ops_in_launch": j.groupby("correlation")["correlation"].transform("size").to_numpy(),
            "step": _step_of(trace, cs, OPTIONS),
            "graph": _is_graph_launch(j["name_cpu"]),
        }
    )


def ref_hta(trace: Trace) -> pd.DataFrame:
    names = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
             "runFunction - job_prep_and_submit_for_execution")  # fmt: skip
    h = trace.host[trace.host["correlation"] >= 0]
    selected = h[_api_name_in(h["name"], names)]["correlation"].unique()
    g = gpu_events(trace, OPTIONS)
    return ref_join(trace, h[h["correlation"].isin(selected)], g[g["correlation"].isin(selected)])


def ref_all(trace: Trace) -> pd.DataFrame:
    g = gpu_events(trace, OPTIONS)
    g = g[g["kind"].isin(GPU_WORK_KINDS) & (g["correlation"] >= 0)]
    calls = launching_calls(trace.host, g["correlation"].to_numpy())
    return ref_join(trace, trace.host.iloc[np.unique(calls[calls >= 0])], g)


def ref_grouped(launches: pd.DataFrame, by: str) -> pd.DataFrame:
    rows = []
    for key, grp in launches.groupby(by, sort=False):
        row: dict[str, object] = {by: key, "launches": len(grp)}
        for col, pre in (("cpu_duration_ns", "cpu"), ("launch_delay_ns", "delay")):
            v = grp[col].to_numpy()
            q = np.quantile(v, [0.5, 0.9, 0.99], method="inverted_cdf").astype(np.int64)
            row |= {f"{pre}_sum_ns": int(v.sum()), f"{pre}_min_ns": int(v.min())}
            row |= {f"{pre}_p50_ns": int(q[0]), f"{pre}_p90_ns": int(q[1])}
            row |= {f"{pre}_p99_ns": int(q[2]), f"{pre}_max_ns": int(v.max())}
        rows.append(row)
    if not rows:
        return pd.DataFrame({by: [], "launches": []})
    out = pd.DataFrame(rows)
    out = out.sort_values(["delay_sum_ns", "launches"], ascending=False, kind="stable")
    return out.reset_index(drop=True)


def ref_union_by(launches: pd.DataFrame, by: str) -> dict[object, int]:
    out: dict[object, int] = {}
    for key, grp in launches.groupby(by, sort=False, dropna=False):
        pos = grp[grp["launch_delay_ns"] > 0]
        t = np.zeros(200_000, dtype=bool)
        for s, d in zip(pos["gpu_start_ns"], pos["launch_delay_ns"], strict=True):
            t[s - d + 100_000 : s + 100_000] = True
        out[key] = 0 if pd.isna(key) else int(t.sum())
    return out


def ref_queue(trace: Trace) -> pd.DataFrame:
    h = trace.host
    h = h[(h["correlation"] >= 0) & _api_name_in(h["name"], HTA_QUEUE_NAMES)]
    g = gpu_events(trace, OPTIONS)
    g = g[g["correlation"].isin(h["correlation"].unique())]
    runtime = h[["correlation", "start_ns"]].merge(g[["correlation", "stream"]], on="correlation")
    ts = np.r_[runtime["start_ns"].to_numpy(), g["start_ns"].to_numpy()]
    stream = np.r_[runtime["stream"].to_numpy(), g["stream"].to_numpy()]
    delta = np.r_[np.ones(len(runtime), np.int64), -np.ones(len(g), np.int64)]
    order = np.lexsort((-delta, ts, stream))
    df = pd.DataFrame({"stream": stream[order], "ts_ns": ts[order], "d": delta[order]})
    df["queue_length"] = df.groupby("stream")["d"].cumsum()
    return df.drop(columns="d")


def _rows(df: pd.DataFrame) -> list[list[object]]:
    """The rows as lists of plain values, NaN as None (comparable with ``==``)."""
    return [[None if x != x else x for x in r] for r in df.astype(object).values.tolist()]


def _keyed(d: dict[object, int]) -> dict[object, int]:
    """*d* with a missing key (NaN, unequal to itself) as None."""
    return {(None if k != k else k): v for k, v in d.items()}


# --------------------------------------------------------------------------- the checks


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_launch_arrays_equal_the_pandas_code_they_replaced(seed: int) -> None:
    trace = random_trace(seed)
    hta, every = hta_launches(trace, OPTIONS), all_launches(trace, OPTIONS)
    assert _rows(hta) == _rows(ref_hta(trace))
    assert _rows(every) == _rows(ref_all(trace))
    a = every[~every["graph"].to_numpy(dtype=bool)]
    for by in ("name", "step"):
        assert _rows(grouped_distributions(a, by)) == _rows(ref_grouped(a, by))
        assert _keyed(delay_union_by(a, by)) == _keyed(ref_union_by(a, by))
    q = queue_length(trace, OPTIONS)
    assert q.to_dict("list") == ref_queue(trace).to_dict("list")
    assert _rows(queue_summary(q)) == _rows(queue_summary(ref_queue(trace)))
    section = launch_section(trace, OPTIONS, None)  # type: ignore[arg-type]
    calls = every.drop_duplicates("correlation")
    by_api = calls["launch_name"].value_counts(sort=True)
    assert list(section["all"]["by_api"].items()) == [(str(k), int(v)) for k, v in by_api.items()]
    per_kernel = ref_grouped(a, "name").head(20)
    assert [r["name"] for r in section["per_kernel"]] == per_kernel["name"].tolist()
    assert [r["launches"] for r in section["per_kernel"]] == per_kernel["launches"].tolist()
