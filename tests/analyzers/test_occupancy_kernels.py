"""Per-kernel theoretical occupancy from traced launch configurations, achieved figures joined
beside it (CUPTI estimate, ncu), time weighting, flags; on hand-built and real traces."""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from analyzers.kernel_occupancy import kernel_occupancy, normalize_kernel_name
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from collectors.ncu import read_ncu_csv
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

NAN = float("nan")


def _trace(device: DeviceInfo | None, **gpu: list) -> Trace:
    meta = TraceMeta(rank=0, source_format="synthetic", devices=[device] if device else [])
    n = len(gpu["name"])
    gpu.setdefault("kind", ["kernel"] * n)
    gpu.setdefault("device", [0] * n)
    gpu.setdefault("block_y", [1] * n)
    gpu.setdefault("block_z", [1] * n)
    return make_trace(meta, gpu=gpu)


A100 = DeviceInfo(id=0, name="NVIDIA A100-SXM4-40GB", compute_major=8, compute_minor=0)


def _hand() -> Trace:
    return _trace(
        A100,
        name=["k1", "k1", "k2", "k3", "ncclKernel_AllReduce", "memcpy"],
        kind=["kernel"] * 5 + ["memcpy"],
        start_ns=[0, 100, 200, 1000, 2000, 3000],
        end_ns=[50, 160, 400, 1010, 2600, 3100],
        block_x=[128, 128, 256, -1, 640, -1],
        registers_per_thread=[37, 37, 128, -1, 96, -1],
        shared_mem_bytes=[0, 0, 16_384, -1, 0, -1],
        est_achieved_occupancy=[70.0, 60.0, NAN, NAN, 3.0, NAN],
    )


def test_theoretical_occupancy_limiters_and_time_weighting_on_a_hand_trace() -> None:
    r = kernel_occupancy(_hand())
    g = {row.name: row for row in r.groups.itertuples()}
    # k1 = reference vector sm_80/128 threads/37 regs: 12 blocks, 75 %, registers
    assert (g["k1"].theoretical_pct, g["k1"].active_blocks, g["k1"].limiters) == (
        75.0,
        12,
        "registers",
    )
    # k2 by hand: 256 thr, 128 regs -> regs/warp 4096, floor(16384/4096)=4 -> 16/8 = 2 blocks
    # (smem (16384+1024) -> 9 blocks): 16 warps = 25 %, registers
    assert (g["k2"].theoretical_pct, g["k2"].limiters) == (25.0, "registers")
    assert "k3" not in g  # no launch configuration
    # time weights: k1 110 ns @75, k2 200 ns @25, nccl 600 ns; nccl: 640 thr, 96 regs ->
    # 3072 regs/warp, 5 warps/sub-partition, 20/20 = 1 block, 20 warps = 31.25 %
    assert g["ncclKernel_AllReduce"].theoretical_pct == 31.25
    want = (110 * 75.0 + 200 * 25.0 + 600 * 31.25) / 910
    assert r.time_weighted_pct == pytest.approx(want)
    assert r.coverage == pytest.approx(910 / 920)  # k3's 10 ns has no configuration
    assert (r.kernels, r.kernels_with_config) == (5, 4)


def test_cupti_estimate_is_joined_beside_theoretical_duration_weighted() -> None:
    r = kernel_occupancy(_hand())
    g = {row.name: row for row in r.groups.itertuples()}
    assert g["k1"].est_achieved_pct == pytest.approx((50 * 70 + 60 * 60) / 110)
    assert math.isnan(g["k2"].est_achieved_pct)
    assert r.est_achieved_time_weighted_pct == pytest.approx((50 * 70 + 60 * 60 + 600 * 3) / 710)


def test_hot_low_occupancy_kernels_are_flagged_with_limiter_and_change() -> None:
    r = kernel_occupancy(_hand())
    assert [f.name for f in r.flags] == ["k2"]  # the NCCL kernel is never flagged
    f = r.flags[0]
    assert f.limiters == ("registers",) and f.theoretical_pct == 25.0
    # hand: 80 regs -> 2560 regs/warp -> 6 warps/sub-partition -> 24/8 = 3 blocks = 37.5 %
    assert f.suggestion is not None and f.suggestion.startswith("registers per thread 128 → 80")
    assert kernel_occupancy(_hand(), low_pct=20.0).flags == ()


def test_trace_without_device_properties_says_why_and_accepts_an_arch() -> None:
    t = _trace(
        None,
        name=["k"],
        start_ns=[0],
        end_ns=[10],
        block_x=[128],
        registers_per_thread=[37],
        shared_mem_bytes=[0],
    )
    r = kernel_occupancy(t)
    assert r.groups.empty and "no device properties" in (r.reason or "")
    r2 = kernel_occupancy(t, arch="sm_70")
    assert r2.groups.iloc[0]["theoretical_pct"] == 75.0


def test_impossible_traced_configuration_is_reported_not_raised() -> None:
    t = _trace(
        A100,
        name=["bad"],
        start_ns=[0],
        end_ns=[10],
        block_x=[2048],
        registers_per_thread=[32],
        shared_mem_bytes=[0],
    )
    row = kernel_occupancy(t).groups.iloc[0]
    assert math.isnan(row["theoretical_pct"]) and "block size 2048" in row["error"]


def test_ncu_achieved_occupancy_joins_on_normalised_name_and_block(tmp_path: Path) -> None:
    name_trace = "(anonymous namespace)::saxpy_kernel(float, const float *, float *, int)"
    t = _trace(
        A100,
        name=[name_trace],
        start_ns=[0],
        end_ns=[10],
        block_x=[256],
        registers_per_thread=[16],
        shared_mem_bytes=[0],
    )
    csv_path = tmp_path / "ncu.csv"
    head = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"'
    )
    rows = [
        f'"{i}","1","a","h","unnamed>::saxpy_kernel(float, const float *, float *, int)","1","7",'
        f'"({blk}, 1, 1)","(10, 1, 1)","0","8.0","s",'
        f'"sm__warps_active.avg.pct_of_peak_sustained_active","%","{v}"'
        for i, (blk, v) in enumerate([(256, "80.00"), (256, "90.00"), (128, "10.00")])
    ]
    csv_path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    r = kernel_occupancy(t, read_ncu_csv(csv_path))
    row = r.groups.iloc[0]
    assert row["ncu_achieved_pct"] == pytest.approx(85.0)  # block 128 launch not joined
    assert row["ncu_launches"] == 2
    assert row["theoretical_pct"] == 100.0
    assert normalize_kernel_name("<unnamed>::f()") == normalize_kernel_name("unnamed>::f()")


def test_ncu_join_with_the_shared_export_name_spelling() -> None:
    path = shared_path("ncu", "GPU-Roofline-Profiler__results_sample_run_ncu_saxpy.csv")
    rep = read_ncu_csv(path)
    la = rep.launches[0]
    dev = DeviceInfo(id=0, name="NVIDIA GeForce RTX 5070", compute_major=12, compute_minor=0)
    name = la.kernel_name.replace("unnamed>", "(anonymous namespace)")
    t = _trace(
        dev,
        name=[name],
        start_ns=[0],
        end_ns=[10],
        block_x=[256],
        registers_per_thread=[16],
        shared_mem_bytes=[0],
    )
    row = kernel_occupancy(t, rep).groups.iloc[0]
    assert (
        row["ncu_achieved_pct"] == la.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"]
    )
    # sm_120 by hand: 8 warps/block, 48 warps/SM -> 6 blocks = 100 % (warps)
    assert row["theoretical_pct"] == 100.0


# --- real traces ---------------------------------------------------------------------------


@cache
def _kineto(*parts: str) -> Trace:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", "hta", *parts)])
    return t


def test_real_kineto_kernels_get_theoretical_occupancy_beside_cuptis_estimate() -> None:
    parts = ("negative_queue_length_values_check", "rank0.json.gz")
    ev = trace_events(shared_path("kineto", "hta", *parts))
    raw = [e for e in ev if e.get("cat") == "kernel" and "block" in e.get("args", {})]
    # independent join: duration-weighted CUPTI estimate per (name, block, regs, smem)
    est: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in raw:
        a = e["args"]
        key = (
            e["name"],
            "x".join(map(str, a["block"])),
            a["registers per thread"],
            a["shared memory"],
        )
        acc = est[key]
        if a["est. achieved occupancy %"] == 0:  # Kineto's 0 = not measured (efficiency.md §2)
            continue
        acc[0] += a["est. achieved occupancy %"] * e["dur"]
        acc[1] += e["dur"]
    r = kernel_occupancy(_kineto(*parts))
    assert r.arch == "sm_80"
    assert r.kernels_with_config == len(raw) == 6080
    assert r.coverage == pytest.approx(1.0)
    assert len(r.groups) == len(est)
    for row in r.groups.itertuples():
        assert 0 < row.theoretical_pct <= 100, row.name
        w, d = est[(row.name, row.block, row.registers, row.smem_bytes)]
        if d > 0:
            assert row.est_achieved_pct == pytest.approx(w / d, rel=1e-9)


def test_real_kineto_trace_without_device_properties_reports_why() -> None:
    r = kernel_occupancy(_kineto("trace_filter", "sampled_rank-0.json.gz"))
    assert r.kernels_with_config == 1154 and r.groups.empty
    assert "device properties" in (r.reason or "")


NSYS = "nsys2022.4.1.21__parallel_course_2__report4.sqlite"


def test_real_nsys_kernels_get_theoretical_occupancy() -> None:
    from collectors.load import load_traces

    path = shared_path("nsys", NSYS)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        configs = db.execute(
            "SELECT blockX*blockY*blockZ, registersPerThread, staticSharedMemory, "
            "dynamicSharedMemory, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2, 3, 4"
        ).fetchall()
    (t,) = load_traces([path])
    r = kernel_occupancy(t)
    assert r.arch == "sm_70" and r.kernels_with_config == sum(c[-1] for c in configs) == 1000
    assert r.coverage == pytest.approx(1.0)
    # hand (occupancy.md §2), sm_70, 1-thread blocks: warps limit 64; 26 regs -> 1024
    # regs/warp -> 4*16 = 64 blocks, 40 regs -> 1280 -> 4*12 = 48 blocks; blocks limit 32
    # binds: 32 warps of 64 = 50 % for both configurations
    assert sorted(c[:4] for c in configs) == [(1, 26, 0, 0), (1, 40, 0, 0)]
    for threads, regs, _, _, _ in configs:
        rows = r.groups[(r.groups["threads"] == threads) & (r.groups["registers"] == regs)]
        assert not rows.empty
        assert set(rows["theoretical_pct"]) == {50.0}
        assert set(rows["limiters"]) == {"blocks"}
        assert set(rows["active_blocks"]) == {32}
    assert r.time_weighted_pct == 50.0
