"""The array versions of the idle, host-bound, step and kernel-summary analyses against the
pandas code they replaced, on random traces: per-stream breakdown, GPU-wide gaps and their
CPU attribution, per-step host wait, its attribution and responsible ops, the steps' launch
lag, the kernel summary.  Times start above 2**53 ns (as Kineto's epoch clock does), where a
launch time looked up through float64 is rounded, and the references do that lookup as the
replaced code did.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import intervals as iv
from analyzers.classify import classify
from analyzers.host_bound import step_verdicts, top_level_ops
from analyzers.idle import CPU_ACTIVITIES, IDLE_CATEGORIES, gpu_idle, stream_idle_breakdown
from analyzers.kernel_summary import kernel_summary, summarize_durations
from analyzers.options import AnalysisOptions
from analyzers.steps import step_breakdown, step_events
from analyzers.window import gpu_events
from collectors.linking import launch_mask, launching_calls
from collectors.model import GPU_WORK_KINDS, LAUNCH_CATS, Trace, TraceMeta, make_trace

T0 = 1_661_938_467_010_373_000  # a Kineto epoch time: float64 steps of 256 ns here
OPTIONS = AnalysisOptions(consecutive_kernel_delay_ns=3_000)
STEP_RE = re.compile(r"^ProfilerStep#\d+")
SYNC = re.compile(
    r"Synchronize|^(cuda|hip)Memcpy(2D|3D)?(_v\d+)?$|^cuMemcpy(DtoH|HtoD|DtoD)(_v\d+)?$"
    r"|^hipMemcpy(DtoH|HtoD|DtoD|WithStream)$"
)


def random_trace(seed: int) -> Trace:
    """Kernels and copies on 3 streams launched from 2 threads (some never launched, some
    before the first launch), ops, optimizer/dataloader ranges, syncs and 4 steps."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    start = T0 + np.sort(rng.integers(0, 400, n)) * 1000
    end = start + rng.integers(0, 30, n) * 1000
    corr = rng.permutation(n) + 10
    corr[rng.random(n) < 0.1] = -1
    corr[rng.random(n) < 0.05] = 3  # launched before the profiler started
    names = rng.choice(["gemm", "relu", "ncclKernel_AllReduce", "Memcpy DtoH", "<unnamed>"], n)
    kinds = np.where(np.char.startswith(names.astype(str), "Memcpy"), "memcpy", "kernel")
    h_rows: list[tuple] = []
    for c, s in zip(corr.tolist(), start.tolist(), strict=True):
        if c >= 10 and rng.random() < 0.9:
            t = s - int(rng.integers(-5, 40)) * 1000
            name = str(rng.choice(["cudaLaunchKernel", "cudaMemcpyAsync"]))
            h_rows.append((name, "cuda_runtime", t, t + 2000, int(rng.integers(1, 3)), c))
    for _ in range(int(rng.integers(0, 30))):
        s = T0 + int(rng.integers(0, 400)) * 1000
        name = str(rng.choice(["aten::mm", "Optimizer.step#SGD.step", "aten::add", "fwd"]))
        cat = str(rng.choice(["cpu_op", "user_annotation", "python_function"]))
        h_rows.append((name, cat, s, s + int(rng.integers(0, 60)) * 1000, 1, -1))
        if rng.random() < 0.2:
            h_rows.append(("cudaStreamSynchronize", "cuda_runtime", s, s + 5000, 2, -1))
    h_rows.append(("enumerate(DataLoader)#x", "user_annotation", T0, T0 + 30_000, 1, -1))
    h_rows.append(("cudaLaunchKernel", "cuda_runtime", T0, T0 + 1000, 3, 5))
    steps = [(k + 1, T0 + k * 100_000, T0 + (k + 1) * 100_000) for k in range(4)]
    h_rows += [(f"ProfilerStep#{k}", "user_annotation", s, e, 1, -1) for k, s, e in steps]
    h = pd.DataFrame(h_rows, columns=["name", "cat", "start_ns", "end_ns", "tid", "correlation"])
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        gpu={
            "name": [None if x == "<unnamed>" and seed % 2 else x for x in names.tolist()],
            "kind": kinds.tolist(),
            "stream": rng.integers(7, 10, n).tolist(),
            "start_ns": start,
            "end_ns": end,
            "correlation": corr,
        },
        host={c: h[c].to_numpy() for c in h.columns} | {"pid": np.full(len(h), 100)},
        annotations={
            "name": [f"ProfilerStep#{k}" for k, _, _ in steps],
            "kind": ["step"] * len(steps),
            "start_ns": [s for _, s, _ in steps],
            "end_ns": [e for _, _, e in steps],
            "step": [k for k, _, _ in steps],
        },
    )


# --------------------------------------------------------------------------- references


def _launch_by_corr(trace: Trace, corr: np.ndarray) -> np.ndarray:
    h = trace.host
    ids = np.unique(h["correlation"].to_numpy()[launch_mask(h)])
    launch = pd.Series(h["start_ns"].to_numpy()[launching_calls(h, ids)], index=ids)
    if not len(launch):
        return np.full(len(corr), -1, dtype=np.int64)
    out = pd.Series(corr).map(launch).fillna(-1).to_numpy(dtype=np.int64, copy=True)
    out[corr < 0] = -1
    return out


def _category(launch: np.ndarray, prev: np.ndarray, idle: np.ndarray) -> np.ndarray:
    host = (launch >= 0) & (launch > prev)
    small = idle < OPTIONS.consecutive_kernel_delay_ns
    return np.where(host, "host_wait", np.where(small, "kernel_wait", "other"))


def ref_stream_breakdown(trace: Trace) -> pd.DataFrame:
    g = gpu_events(trace, OPTIONS)
    g = g[g["kind"].isin(GPU_WORK_KINDS)]
    df = pd.DataFrame(
        {
            "stream": g["stream"].to_numpy(),
            "start_ns": g["start_ns"].to_numpy(),
            "end_ns": g["end_ns"].to_numpy(),
            "launch_ns": _launch_by_corr(trace, g["correlation"].to_numpy()),
        }
    ).sort_values(["stream", "start_ns"], kind="stable")
    s = df["stream"].to_numpy()
    first = np.r_[True, s[1:] != s[:-1]]
    prev = np.r_[0, df["end_ns"].to_numpy()[:-1]]
    idle = df["start_ns"].to_numpy() - prev
    cat = np.where(first, "other", _category(df["launch_ns"].to_numpy(), prev, idle))
    ivs = pd.DataFrame({"stream": s, "category": cat, "idle_ns": np.where(first, 0, idle)})
    out = ivs.groupby(["stream", "category"])["idle_ns"].agg(idle_ns="sum", intervals="size")
    out = out.reset_index()
    total = out.groupby("stream")["idle_ns"].transform("sum").to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(total == 0, np.nan, out["idle_ns"].to_numpy() / total)
    return out


def ref_gaps(trace: Trace, g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s, e = iv.merge(g["start_ns"].to_numpy(), g["end_ns"].to_numpy())
    gap_s, gap_e = e[:-1], s[1:]
    ln = _launch_by_corr(trace, g["correlation"].to_numpy())
    big = np.iinfo(np.int64).max
    at_end = pd.DataFrame({"t": g["start_ns"].to_numpy(), "l": np.where(ln >= 0, ln, big)})
    gl = at_end.groupby("t")["l"].min().reindex(gap_e).to_numpy(dtype=np.int64)
    gl = np.where(gl == big, -1, gl)
    return gap_s, gap_e, _category(gl, gap_s, gap_e - gap_s)


def ref_launch_threads(trace: Trace, g: pd.DataFrame) -> pd.DataFrame:
    h = trace.host
    launchers = h[h["correlation"].isin(g["correlation"][g["correlation"] >= 0])]
    if not len(launchers):
        return h
    threads = set(zip(launchers["pid"], launchers["tid"], strict=True))
    return h[[(p, t) in threads for p, t in zip(h["pid"], h["tid"], strict=True)]]


def ref_activity(trace: Trace, g: pd.DataFrame) -> dict[str, iv.Intervals]:
    h = ref_launch_threads(trace, g)
    s, e, name = h["start_ns"].to_numpy(), h["end_ns"].to_numpy(), h["name"].astype(str)
    api = h["cat"].isin(LAUNCH_CATS).to_numpy()
    step = name.str.match(STEP_RE).to_numpy()
    dl = name.str.contains("DataLoader|^data_load", case=False).to_numpy() & ~api
    opt = name.str.contains("optimizer|zero_grad", case=False).to_numpy() & ~api
    sync = api & np.array([bool(SYNC.search(x)) for x in name], dtype=bool)
    py = h["cat"].isin(("python_function", "user_annotation")).to_numpy() & ~step
    op = ~api & ~py & ~step
    st_ = trace.steps()
    return {
        "data_loading": iv.merge(s[dl], e[dl]),
        "optimizer": iv.merge(s[opt], e[opt]),
        "sync": iv.merge(s[sync], e[sync]),
        "cuda_api": iv.merge(s[api], e[api]),
        "cpu_op": iv.merge(s[op], e[op]),
        "python": iv.merge(np.r_[s[py], st_["start_ns"]], np.r_[e[py], st_["end_ns"]]),
    }


def ref_top_level_ops(h: pd.DataFrame) -> pd.DataFrame:
    api = h["cat"].isin(LAUNCH_CATS).to_numpy()
    step = h["name"].astype(str).str.match(STEP_RE).to_numpy()
    h = h[~api & ~(h["cat"] == "python_function").to_numpy() & ~step]
    if h.empty:
        return h
    h = h.sort_values(["pid", "tid", "start_ns", "end_ns"], ascending=[True, True, True, False])
    e, s = h["end_ns"].to_numpy(), h["start_ns"].to_numpy()
    same = (h["pid"].to_numpy()[1:] == h["pid"].to_numpy()[:-1]) & (
        h["tid"].to_numpy()[1:] == h["tid"].to_numpy()[:-1]
    )
    run = pd.Series(e).groupby(np.r_[0, np.cumsum(~same)]).cummax().to_numpy()
    return h[np.r_[True, ~same | (s[1:] >= run[:-1])]]


def ref_responsible(
    ops: pd.DataFrame, wait: iv.Intervals, lo: np.ndarray, hi: np.ndarray
) -> list[list[tuple[str, int]]]:
    out: list[list[tuple[str, int]]] = [[] for _ in range(lo.size)]
    rows = []
    for name, s, e in zip(ops["name"].astype(str), ops["start_ns"], ops["end_ns"], strict=True):
        for k in np.flatnonzero((hi > lo) & (hi > s) & (lo < e)).tolist():
            p_lo, p_hi = max(s, lo[k]), min(e, hi[k])
            rows.append((k, name, int(iv.covered_in_windows(wait, [p_lo], [p_hi])[0])))
    by = pd.DataFrame(rows, columns=["k", "name", "ns"]).groupby(["k", "name"])["ns"].sum()
    by = by[by > 0].reset_index().sort_values(["k", "ns", "name"], ascending=[True, False, True])
    for k, name, ns in by.groupby("k").head(5).itertuples(index=False):
        out[int(k)].append((str(name), int(ns)))
    return out


def ref_lag(trace: Trace) -> list[int]:
    se = step_events(trace, OPTIONS)
    ev = se.events
    out = np.full(len(se.steps), -1, dtype=np.int64)
    linked = (ev["pos"].to_numpy() >= 0) & (ev["launch_ns"].to_numpy() >= 0)
    d = (ev["start_ns"].to_numpy() - ev["launch_ns"].to_numpy())[linked].astype(np.float64)
    med = pd.Series(d).groupby(ev["pos"].to_numpy()[linked]).median()
    out[med.index.to_numpy(dtype=np.int64)] = np.round(med.to_numpy()).astype(np.int64)
    return out.tolist()


def ref_kernel_summary(trace: Trace) -> pd.DataFrame:
    g = gpu_events(trace, OPTIONS)
    g = g.assign(type=classify(g["name"], g["kind"], OPTIONS.hta_version))
    g = g[g["kind"].isin(["kernel"]).to_numpy()]
    out = summarize_durations(g["name"], g["end_ns"].to_numpy() - g["start_ns"].to_numpy())
    names = g["name"].astype(object).where(g["name"].notna(), "<unnamed>")
    type_of = g["type"].groupby(names.to_numpy(), sort=False).first()
    out["type"] = type_of.reindex(out["name"]).to_numpy()
    out["time_pct"] = 100.0 * out["total_ns"] / int(out["total_ns"].sum())
    out = out.sort_values(
        ["total_ns", "count", "name"], ascending=[False, True, True], kind="stable"
    )
    return out[list(kernel_summary(trace, OPTIONS).columns)].reset_index(drop=True)


# --------------------------------------------------------------------------- the checks


def _rows(df: pd.DataFrame) -> list[list[object]]:
    """The rows as lists of plain values, NaN as None (comparable with ``==``)."""
    return [[None if x != x else x for x in r] for r in df.astype(object).values.tolist()]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_array_analyses_equal_the_pandas_code_they_replaced(seed: int) -> None:
    trace = random_trace(seed)
    assert _rows(stream_idle_breakdown(trace, OPTIONS)) == _rows(ref_stream_breakdown(trace))

    g = gpu_events(trace, OPTIONS)
    gi = gpu_idle(trace, OPTIONS)
    gap_s, gap_e, cat = ref_gaps(trace, g)
    assert gi.gaps["start_ns"].tolist() == gap_s.tolist()
    assert gi.gaps["category"].astype(str).tolist() == cat.tolist()
    assert gi.by_cause == {c: int((gap_e - gap_s)[cat == c].sum()) for c in IDLE_CATEGORIES}
    acts = ref_activity(trace, g)
    whole = ref_attribute((gap_s, gap_e), acts, np.array([-(2**62)]), np.array([2**62]))
    assert gi.by_cpu_activity == {k: v[0] for k, v in whole.items()}

    sv = step_verdicts(trace, OPTIONS)
    se = step_events(trace, OPTIONS)
    w_s, w_e, w_cat = ref_gaps(trace, se.events)
    wait = (w_s[w_cat == "host_wait"], w_e[w_cat == "host_wait"])
    has = sv["gpu_start_ns"].to_numpy() >= 0
    lo = np.where(has, sv["gpu_start_ns"].to_numpy(), 0)
    hi = np.where(has, sv["gpu_end_ns"].to_numpy(), 0)
    assert sv["host_wait_ns"].tolist() == iv.covered_in_windows(wait, lo, hi).tolist()
    step_acts = ref_attribute(wait, ref_activity(trace, se.events), lo, hi)
    got_acts = {a: [d[a] for d in sv["host_wait_by_activity"]] for a in CPU_ACTIVITIES}
    assert got_acts == step_acts
    host = ref_launch_threads(trace, se.events)
    ops = ref_top_level_ops(host)
    assert top_level_ops(host).index.tolist() == ops.index.tolist()
    assert [list(x) for x in sv["top_ops"]] == ref_responsible(ops, wait, lo, hi)

    assert step_breakdown(trace, OPTIONS)["launch_lag_ns"].tolist() == ref_lag(trace)
    ks = kernel_summary(trace, OPTIONS)
    assert _rows(ks) == _rows(ref_kernel_summary(trace))


def ref_attribute(idle: iv.Intervals, acts: dict, lo: np.ndarray, hi: np.ndarray) -> dict:
    rest = iv.merge(*idle)
    out = {}
    for name in CPU_ACTIVITIES[:-1]:
        took = iv.intersect(rest, acts[name])
        out[name] = iv.covered_in_windows(took, lo, hi).tolist()
        rest = iv.subtract(rest, took)
    out["unattributed"] = iv.covered_in_windows(rest, lo, hi).tolist()
    return out
