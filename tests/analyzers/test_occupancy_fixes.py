"""Issue 16's smaller occupancy items: a CUPTI estimate of 0 is not a measurement, and a block
that fits no SM gets NVIDIA's calculator answer (0 blocks, the limiter named)."""

from __future__ import annotations

import math

import pytest

from analyzers.arch import arch_limits
from analyzers.kernel_occupancy import kernel_occupancy
from analyzers.occupancy import LaunchConfig, occupancy
from collectors.errors import UsageError
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

NAN = float("nan")
A100 = DeviceInfo(id=0, name="NVIDIA A100-SXM4-40GB", compute_major=8, compute_minor=0)


def _trace(**gpu: list) -> Trace:
    n = len(gpu["name"])
    gpu.setdefault("kind", ["kernel"] * n)
    gpu.setdefault("device", [0] * n)
    gpu.setdefault("block_y", [1] * n)
    gpu.setdefault("block_z", [1] * n)
    return make_trace(TraceMeta(rank=0, source_format="synthetic", devices=[A100]), gpu=gpu)


def test_cupti_estimate_of_zero_is_not_averaged_in() -> None:
    t = _trace(
        name=["k", "k", "j"],
        start_ns=[0, 100, 200],
        end_ns=[50, 160, 240],
        block_x=[128, 128, 256],
        registers_per_thread=[37, 37, 32],
        shared_mem_bytes=[0, 0, 0],
        est_achieved_occupancy=[0.0, 60.0, 0.0],
    )
    r = kernel_occupancy(t)
    g = {row.name: row for row in r.groups.itertuples()}
    assert g["k"].est_achieved_pct == 60.0  # not (0·50 + 60·60) / 110
    assert math.isnan(g["j"].est_achieved_pct)  # only zeros: not measured
    assert r.est_achieved_time_weighted_pct == 60.0
    assert r.est_achieved_zero_launches == 2
    assert any("0 %" in n and "not measured" in n for n in r.notes)


def test_real_trace_estimate_mean_leaves_out_the_zero_launches() -> None:
    path = shared_path("kineto", "hta", "negative_queue_length_values_check", "rank0.json.gz")
    ev = trace_events(path)
    raw = [e for e in ev if e.get("cat") == "kernel" and "block" in e.get("args", {})]
    est = [(e["args"]["est. achieved occupancy %"], e["dur"]) for e in raw]
    zeros = sum(1 for v, _ in est if v == 0)
    want = sum(v * d for v, d in est if v != 0) / sum(d for v, d in est if v != 0)
    with_zeros = sum(v * d for v, d in est) / sum(d for _, d in est)
    from collectors.load import load_traces

    (t,) = load_traces([path])
    r = kernel_occupancy(t)
    assert zeros > 0 and r.est_achieved_zero_launches == zeros
    assert r.est_achieved_time_weighted_pct == pytest.approx(want, rel=1e-9)
    assert abs(want - with_zeros) > 1.0  # the fix changes the figure


@pytest.mark.parametrize(
    ("arch", "dyn", "alloc"),
    [
        # occupancy.md §2.4: perBlock = roundup(232449 + 1024 reserved, 128) = 233600 >
        # opt-in 232448 + reserved 1024 -> shared-memory limit 0
        ("sm_90", 232_449, 233_600),
        # sm_70: no reserved memory, unit 256: roundup(98305, 256) = 98560 > 98304
        ("sm_70", 98_305, 98_560),
    ],
)
def test_block_above_the_opt_in_limit_fits_no_sm_and_names_shared_memory(
    arch: str, dyn: int, alloc: int
) -> None:
    r = occupancy(arch_limits(arch), LaunchConfig(128, 32, 0, dyn))
    assert (r.active_blocks, r.active_warps, r.occupancy_pct) == (0, 0, 0.0)
    assert r.limiters == ("shared_memory",) and r.limiter_mask == 0x04
    assert r.limit_shared_memory == 0 and r.alloc_smem_per_block == alloc
    # the other limits are the hand values: 4 warps/block -> 64/4 = 16; 32 regs -> 1024
    # regs/warp -> 4·16/4 = 16 blocks
    assert (r.limit_warps, r.limit_registers) == (16, 16)


def test_explicit_no_opt_in_and_static_limits_stay_invalid_input() -> None:
    with pytest.raises(UsageError, match="without opting in"):
        occupancy(arch_limits("sm_80"), LaunchConfig(128, 32, 0, 60_000, optin=False))
    with pytest.raises(UsageError, match="static shared memory"):
        occupancy(arch_limits("sm_80"), LaunchConfig(128, 32, 50_000, 0))


def test_traced_kernel_that_fits_no_sm_is_reported_with_zero_and_flagged() -> None:
    t = _trace(
        name=["huge_smem"],
        start_ns=[0],
        end_ns=[10],
        block_x=[128],
        registers_per_thread=[32],
        shared_mem_bytes=[170_000],  # A100 opt-in limit 166,912 B
    )
    r = kernel_occupancy(t)
    row = r.groups.iloc[0]
    assert (row["theoretical_pct"], row["active_blocks"], row["limiters"], row["error"]) == (
        0.0,
        0,
        "shared_memory",
        "",
    )
    (flag,) = r.flags
    assert flag.suggestion is not None and flag.suggestion.startswith("shared memory per block")
