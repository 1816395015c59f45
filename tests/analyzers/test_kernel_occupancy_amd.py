"""Occupancy of every kernel with a launch configuration on the AMD MI300X/MI210 traces,
cross-checked against a hand computation from the documented CDNA limits on the raw JSON."""

from __future__ import annotations

from collections import Counter

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.kernel_occupancy import kernel_occupancy
from analyzers.options import AnalysisOptions
from collectors.model import DeviceInfo, TraceMeta, make_trace
from reports.summary.sections.efficiency import occupancy as occupancy_section
from tests.support.amd_traces import load, raw_events, tracelens_path, tracelens_traces

TRACES = tracelens_traces()


def hand_upper_bound(threads: int) -> tuple[int, float]:
    """docs/efficiency.md §1b with registers and LDS unknown: 32 wave slots per CU (4 SIMDs x
    8), 16 barrier slots for workgroups of more than one 64-wide wavefront."""
    waves = -(-threads // 64)
    workgroups = 32 // waves if waves == 1 else min(32 // waves, 16)
    return workgroups, 100.0 * workgroups * waves / 32


@pytest.mark.parametrize("rel", TRACES)
def test_every_kernel_with_a_workgroup_size_gets_the_hand_computed_upper_bound(rel: str) -> None:
    path = tracelens_path(rel)
    raw = [
        e
        for e in raw_events(path)["traceEvents"]
        if e.get("cat") == "kernel" and e.get("ph") == "X" and "block" in e.get("args", {})
    ]
    want_threads = Counter(
        e["args"]["block"][0] * e["args"]["block"][1] * e["args"]["block"][2] for e in raw
    )
    trace = load(path)
    r = kernel_occupancy(trace)
    dev = trace.gpu_device
    assert dev is not None
    assert r.arch == ("gfx90a" if "MI210" in (dev.name or "") else "gfx942"), dev.name
    assert r.reason is None and r.kernels_with_config == len(raw) > 0
    assert r.upper_bound and r.limits_not_applied == ("vgprs", "sgprs", "lds")
    got_threads: Counter[int] = Counter()
    for g in r.groups.itertuples():
        got_threads[g.threads] += g.calls
        blocks, pct = hand_upper_bound(g.threads)
        assert (g.active_blocks, g.theoretical_pct) == (blocks, pct), (g.name, g.threads)
        assert g.active_warps == blocks * -(-g.threads // 64)
        assert g.upper_bound is True and g.limits_not_applied == "vgprs,sgprs,lds"
        assert g.registers is None and g.smem_bytes is None  # ROCm Kineto records neither
    assert got_threads == want_threads
    assert any("upper bound" in n for n in r.notes)


def test_summary_section_flags_the_upper_bound() -> None:
    if not TRACES:
        pytest.skip("TraceLens traces not present")
    rel = "mi210/gpu_only_trace/gpu_only_trace.json.gz"
    sec = occupancy_section(load(tracelens_path(rel)), AnalysisOptions(), AnalysisInputs())
    assert sec is not None and sec["arch"] == "gfx90a"
    assert sec["upper_bound"] is True and sec["limits_not_applied"] == ["vgprs", "sgprs", "lds"]
    row = sec["by_kernel"][0]
    assert row["limits_not_applied"] == ["vgprs", "sgprs", "lds"] and row["registers"] is None
    assert sec["time_weighted_theoretical_pct"] == 100.0  # every block is 64..1024 wide


def test_amd_kernel_with_recorded_lds_applies_the_lds_limit() -> None:
    dev = DeviceInfo(id=0, name="AMD Instinct MI300X", vendor="AMD", warp_size=64, sm_count=304)
    t = make_trace(
        TraceMeta(rank=0, source_format="synthetic", devices=[dev]),
        gpu={
            "name": ["k"],
            "kind": ["kernel"],
            "device": [0],
            "start_ns": [0],
            "end_ns": [10],
            "block_x": [256],
            "block_y": [1],
            "block_z": [1],
            "shared_mem_bytes": [20_000],
        },
    )
    g = kernel_occupancy(t).groups.iloc[0]
    # roundup(20000, 512) = 20480 -> 3 WGs of 4 waves = 37.5 %; VGPRs/SGPRs still unknown
    assert (g["theoretical_pct"], g["limiters"], g["limits_not_applied"]) == (
        37.5,
        "lds",
        "vgprs,sgprs",
    )
