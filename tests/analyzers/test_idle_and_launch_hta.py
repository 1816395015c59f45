"""HTA's idle-time breakdown, launch statistics and queue length on the real Kineto fixtures.

Reference: HTA 0.6.1's output as listed in ../shared/reference/metrics.md — §9.3/§9.4 for the
integer-µs traces, §9.5 (``HTA_DISABLE_NS_ROUNDING=1``, i.e. exact time) for the ns-resolution
ones.  Times in the tables are µs.

Times are compared at the tables' display precision (integer µs, or 3 decimals), ratios to 2
decimals, counts exactly.  The ns-resolution traces (``nccl_data``, ``ns_resolution``, MTIA)
carry sub-µs times, which the analyzers keep (no rounding).

``ns_resolution_trace`` stamps events in epoch microseconds with 19 significant digits
(``1712195495505582.988``), more than a double holds: HTA parses ``ts`` as float64, which puts
every start on a 0.25 µs grid, and its §9.5 figures for this trace carry that (exact time gives
host_wait 1,347.125 µs / kernel_wait 5,105.576 µs, launch-delay median 76,012.301 µs, max
90,937.999 µs).  For this trace the test therefore feeds the analyzers the starts as HTA saw
them (:func:`hta_input_precision`: each start rounded to the nearest float64 µs, durations
kept) and expects HTA's figures to the last digit; the exact figures are asserted separately.
The other traces have at most 16 significant digits, which a double holds exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from analyzers.idle import stream_idle_breakdown
from analyzers.launch import hta_launches, launch_stats, queue_length, queue_summary
from analyzers.options import AnalysisOptions
from collectors.model import Trace, make_trace
from tests.support.env import HTA_TRACES, shared_path

TRACES = {k: v for k, v in HTA_TRACES.items() if k != "alexnet"}

FLOAT64_INPUT = {"ns_resolution"}
"""Traces whose timestamps a double cannot hold (see the module docstring)."""

# metrics.md §9.3 (integer µs) / §9.5 (ns traces): stream -> category -> (µs, ratio or None)
IDLE = {
    "trace_filter": {
        7: {"host_wait": (213_825, 0.45), "kernel_wait": (1_985, 0.00), "other": (261_740, 0.55)},
        23: {"host_wait": (596_037, 1.00), "kernel_wait": (70, None), "other": (34, None)},
        25: {"kernel_wait": (9, None), "other": (47_865, 1.00)},
        84: {"host_wait": (148_934, 1.00), "kernel_wait": (6, None), "other": (0, None)},
        203: {"other": (0, math.nan)},
    },
    "nccl_data": {
        7: {"host_wait": (355_485, 1.00), "kernel_wait": (1_414, 0.00), "other": (0, None)},
        40: {"host_wait": (381_488, 1.00), "other": (0, None)},
    },
    "negative_queue": {
        7: {"kernel_wait": (17_159, 0.02), "other": (691_231, 0.98)},
        25: {"host_wait": (628_598, 1.00), "kernel_wait": (85, None), "other": (0, None)},
        27: {"host_wait": (792_592, 0.99), "kernel_wait": (1_000, None), "other": (7_135, 0.01)},
        84: {"host_wait": (62_901, 0.09), "kernel_wait": (12, None), "other": (665_192, 0.91)},
        285: {"other": (675_305, 1.00)},
        363: {"kernel_wait": (75, None), "other": (673_182, 1.00)},
    },
    "ns_resolution": {
        7: {"host_wait": (1_291, 0.20), "kernel_wait": (5_162, 0.80), "other": (0, None)},
    },
    "amd_trace": {0: {"host_wait": (8_763, 1.00), "other": (0, None)}},
    "mtia": {
        1: {
            "host_wait": (404_264, 0.07),
            "kernel_wait": (-17_383, None),
            "other": (5_195_910, 0.93),
        },
        102: {"host_wait": (444, None), "kernel_wait": (-15, None), "other": (2_540_550, 1.00)},
    },
}

# §9.4 / §9.5: n, cpu mean, gpu mean, delay mean, median, max (µs), short kernels (integer-µs
# traces only: §9.5 does not list them), runtime > 50 µs, delay > 100 µs
LAUNCH = {
    "trace_filter": (602, 8.487, 502.061, 16_412.163, 10_246, 103_661, 140, 0, 469),
    "nccl_data": (2_516, 9.455, 40.929, 27.075, 1.972, 943.883, None, 0, 180),
    "negative_queue": (5_224, 131.030, 44.771, 121_668.755, 163_575.5, 198_353, 1_643, 110, 5_083),
    "ns_resolution": (4_876, 40.150, 77.560, 66_047.814, 76_012.394, 90_937.858, None, 675, 4_713),
    "mtia": (3_453, 2_425.243, 2_116.728, 0.017, 0, 13.440, 0, 3_453, 0),
}

# §9.4 last column: max queue length and its stream
QUEUE_MAX = {
    "trace_filter": (7, 76),
    "nccl_data": (7, 10),
    "negative_queue": (7, 946),
    "ns_resolution": (7, 1_022),
    "amd_trace": (0, 1),
    "mtia": (None, 1),
}


def hta_input_precision(trace: Trace) -> Trace:
    """The trace with every start rounded to the nearest float64 microsecond (HTA's parse of a
    19-digit ``ts``) and every end moved with it (durations, short decimals, are exact)."""

    def grid(ns: np.ndarray) -> np.ndarray:
        out = [round(Fraction(float(Fraction(v, 1000))) * 1000) for v in ns.tolist()]
        return np.asarray(out, dtype=np.int64)

    tables = {}
    for name in ("gpu", "host", "annotations"):
        df = getattr(trace, name).copy()
        dur = df["end_ns"].to_numpy() - df["start_ns"].to_numpy()
        df["start_ns"] = grid(df["start_ns"].to_numpy())
        df["end_ns"] = df["start_ns"].to_numpy() + dur
        tables[name] = df
    return make_trace(trace.meta, counters=trace.counters, **tables)


@cache
def load_exact(key: str) -> Trace:
    from collectors.load import load_traces

    (trace,) = load_traces([shared_path("kineto", "hta", TRACES[key])])
    return trace


@cache
def load(key: str) -> Trace:
    """The trace as HTA's figures see it (see the module docstring)."""
    trace = load_exact(key)
    return hta_input_precision(trace) if key in FLOAT64_INPUT else trace


def close_us(ns: float, us: float, decimals: int) -> bool:
    """*ns* matches the table value *us* given with *decimals* decimals (display rounding)."""
    return abs(ns / 1000 - us) <= 0.5 * 10.0**-decimals + 1e-9


@pytest.mark.parametrize("key", sorted(IDLE))
def test_idle_breakdown_per_stream_matches_hta(key: str) -> None:
    df = stream_idle_breakdown(load(key), AnalysisOptions())
    got = {(int(r.stream), r.category): (int(r.idle_ns), r.ratio) for r in df.itertuples()}
    want = {(s, c): v for s, cats in IDLE[key].items() for c, v in cats.items()}
    assert set(got) == set(want), "categories present per stream differ from HTA's"
    for k, (us, ratio) in want.items():
        idle_ns, r = got[k]
        assert close_us(idle_ns, us, 0), (k, idle_ns, us)
        if ratio is None:
            continue
        if math.isnan(ratio):
            assert math.isnan(r), (k, r)
        else:
            assert abs(r - ratio) <= 0.005 + 1e-9, (k, r, ratio)


def test_ns_resolution_exact_time_differs_from_hta_only_by_float64_input() -> None:
    exact = load_exact("ns_resolution")
    # the reader keeps the 19-digit timestamps (the first kernel's ts is 1712195495505582.988)
    assert 1712195495505582988 in set(exact.gpu["start_ns"].tolist())
    df = stream_idle_breakdown(exact, AnalysisOptions())
    got = {r.category: int(r.idle_ns) for r in df.itertuples()}
    assert got == {"host_wait": 1_347_125, "kernel_wait": 5_105_576, "other": 0}
    # the stream's total idle barely moves (HTA: 1,291 + 5,162 µs); only the split does
    assert close_us(sum(got.values()), 1_291 + 5_162, 0)
    st = launch_stats(hta_launches(exact, AnalysisOptions()))
    assert (st.launch_delay_median_ns, st.launch_delay_max_ns) == (76_012_301.0, 90_937_999)


def test_idle_breakdown_is_exact_integer_ns() -> None:
    df = stream_idle_breakdown(load("nccl_data"), AnalysisOptions())
    assert df["idle_ns"].dtype == np.int64
    # float-ts trace: sub-µs remainders survive (no rounding to µs or ns grids)
    assert (df["idle_ns"] % 1000 != 0).any()


@pytest.mark.parametrize("key", sorted(LAUNCH))
def test_launch_stats_match_hta(key: str) -> None:
    n, cpu, gpu, mean, median, mx, short, rt, delay = LAUNCH[key]
    st = launch_stats(hta_launches(load(key), AnalysisOptions()))
    assert st.n == n
    assert close_us(st.cpu_duration_mean_ns, cpu, 3)
    assert close_us(st.gpu_duration_mean_ns, gpu, 3)
    assert close_us(st.launch_delay_mean_ns, mean, 3)
    assert close_us(st.launch_delay_median_ns, median, 3)
    assert close_us(st.launch_delay_max_ns, mx, 3)
    if short is not None:
        assert st.short_kernels == short
    assert st.runtime_outliers == rt
    assert st.launch_delay_outliers == delay


def test_hip_launches_are_not_matched_by_the_hta_selection() -> None:
    # metrics.md §9.4/9.5: amd_trace has 0 matched launches (hip* names are not selected)
    assert launch_stats(hta_launches(load("amd_trace"))).n == 0


@pytest.mark.parametrize("key", sorted(QUEUE_MAX))
def test_max_queue_length_matches_hta(key: str) -> None:
    stream, mx = QUEUE_MAX[key]
    q = queue_summary(queue_length(load(key), AnalysisOptions()))
    top = q.sort_values("max", ascending=False, kind="stable").iloc[0]
    assert int(top["max"]) == mx
    if stream is not None:
        assert int(top["stream"]) == stream
