"""CDNA occupancy calculator against hand computations from the documented limits
(docs/efficiency.md §1b: LLVM AMDGPU, ROCm GPU specifications) and LLVM's own example."""

from __future__ import annotations

import pytest

from analyzers.arch import amd_gfx
from analyzers.occupancy import UNLIMITED
from analyzers.occupancy_cdna import (
    CDNA_ARCHS,
    CdnaLaunch,
    cdna_limits_for_device,
    cdna_occupancy,
    cdna_suggestion,
    unified_vgprs,
)
from collectors.errors import UsageError
from collectors.model import DeviceInfo
from tests.support.amd_traces import load, tracelens_path, tracelens_traces

GFX90A, GFX942 = CDNA_ARCHS["gfx90a"], CDNA_ARCHS["gfx942"]


def test_llvm_calc_occupancy_documented_example_gfx90a() -> None:
    # llvm.org/docs/CommandGuide/llvm-calc-occupancy.html: gfx90a, --wg-size=512 --vgprs=50
    # --sgprs=30 -> 8 waves/EU (32 waves/CU), limited by workgroup size / LDS, VGPRs, SGPRs.
    r = cdna_occupancy(GFX90A, CdnaLaunch(512, vgprs=50, sgprs=30, lds_bytes=0))
    assert (r.waves_per_workgroup, r.active_workgroups, r.active_waves) == (8, 4, 32)
    assert r.occupancy_pct == 100.0 and not r.upper_bound
    assert r.limiters == ("waves", "vgprs", "sgprs")
    # hand: VGPRs 50 -> roundup 56 -> floor(512/56) = 9 -> capped 8/SIMD -> 4*8/8 = 4 WGs
    assert r.limits["vgprs"] == 4 and r.alloc_vgprs_per_wave == 56
    assert r.limits["lds"] == UNLIMITED and r.limits["workgroups"] == 16


def test_vgprs_limit_by_hand_256_work_items_128_vgprs_is_50_pct() -> None:
    # 512 / 128 = 4 waves per SIMD -> 16 per CU -> 16 / 4 waves per WG = 4 WGs = 16 of 32
    r = cdna_occupancy(GFX90A, CdnaLaunch(256, vgprs=128, sgprs=40, lds_bytes=0))
    assert (r.active_workgroups, r.occupancy_pct, r.limiters) == (4, 50.0, ("vgprs",))


def test_lds_limit_by_hand_rounds_to_512_byte_granules() -> None:
    # 20,000 B -> roundup(20000, 512) = 20,480 -> floor(65536 / 20480) = 3 WGs x 4 waves
    r = cdna_occupancy(GFX942, CdnaLaunch(256, vgprs=32, sgprs=32, lds_bytes=20_000))
    assert r.alloc_lds_per_workgroup == 20_480
    assert (r.active_workgroups, r.occupancy_pct, r.limiters) == (3, 37.5, ("lds",))


def test_workgroup_that_fits_no_cu_gives_zero_with_its_limiter() -> None:
    r = cdna_occupancy(GFX942, CdnaLaunch(256, lds_bytes=64 * 1024 + 1))
    assert (r.active_workgroups, r.occupancy_pct, r.limiters) == (0, 0.0, ("lds",))
    # 1024 work-items (16 waves), 512 VGPRs: 1 wave per SIMD = 4 per CU < 16
    r = cdna_occupancy(GFX90A, CdnaLaunch(1024, vgprs=512))
    assert (r.active_workgroups, r.limiters) == (0, ("vgprs",))


def test_sgpr_limit_follows_llvms_gfx9_table() -> None:
    # > 100 SGPRs -> 7 waves per SIMD -> 28 per CU -> 7 single-wave... here 64 work-items: 28
    r = cdna_occupancy(GFX942, CdnaLaunch(64, vgprs=0, sgprs=104, lds_bytes=0))
    assert (r.active_workgroups, r.limiters) == (28, ("sgprs",))
    assert r.occupancy_pct == pytest.approx(100 * 28 / 32)


@pytest.mark.parametrize(
    ("threads", "workgroups", "pct", "limiters"),
    [
        (64, 32, 100.0, ("waves",)),  # single-wave workgroups use no barrier slot
        (128, 16, 100.0, ("waves", "workgroups")),
        (192, 10, 93.75, ("waves",)),  # 3 waves: floor(32/3) = 10 -> 30 of 32
        (320, 6, 93.75, ("waves",)),
        (704, 2, 68.75, ("waves",)),  # 11 waves: 2 WGs -> 22 of 32
        (1024, 2, 100.0, ("waves",)),
        (32, 32, 100.0, ("waves",)),  # half a wavefront still takes a wave slot
    ],
)
def test_unknown_registers_and_lds_give_an_upper_bound_from_waves_and_workgroups(
    threads: int, workgroups: int, pct: float, limiters: tuple[str, ...]
) -> None:
    r = cdna_occupancy(GFX942, CdnaLaunch(threads))
    assert (r.active_workgroups, r.occupancy_pct, r.limiters) == (workgroups, pct, limiters)
    assert r.upper_bound and r.not_applied == ("vgprs", "sgprs", "lds")
    d = r.to_dict()
    assert d["upper_bound"] is True and d["limits"]["vgprs"] is None


def test_unified_vgprs_add_agprs_after_aligning_to_4() -> None:
    assert unified_vgprs(50) == 50
    assert unified_vgprs(50, 64) == 52 + 64


@pytest.mark.parametrize(
    ("launch", "words"),
    [
        (CdnaLaunch(1025), "workgroup size 1025"),
        (CdnaLaunch(0), "workgroup size 0"),
        (CdnaLaunch(64, vgprs=513), "VGPR count 513"),
        (CdnaLaunch(64, sgprs=113), "SGPR count 113"),
        (CdnaLaunch(64, lds_bytes=-1), "negative"),
    ],
)
def test_impossible_dispatch_is_a_usage_error(launch: CdnaLaunch, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        cdna_occupancy(GFX942, launch)


def test_suggestion_is_the_nearest_workgroup_size_with_higher_occupancy() -> None:
    # 704 (68.75 %): 640 = 10 waves -> 3 WGs = 93.75 %; 768 = 12 waves -> 2 WGs = 75 %
    text = cdna_suggestion(GFX942, CdnaLaunch(704))
    assert text == "workgroup size 704 → 640: 93.75 %"
    assert cdna_suggestion(GFX942, CdnaLaunch(256)) is None


def test_register_file_constants_equal_the_rocm_specification_table() -> None:
    # ROCm "AMD GPU specifications": VGPR file 512 KiB per CU, LDS 64 KiB, wavefront 64 for
    # MI300X/MI325X (gfx942) and MI250X/MI250/MI210 (gfx90a)
    for lim in (GFX90A, GFX942):
        assert lim.simds_per_cu * lim.vgprs_per_simd * lim.wavefront_size * 4 == 512 * 1024
        assert lim.lds_per_cu == 64 * 1024 and lim.wavefront_size == 64


TRACES = tracelens_traces()


@pytest.mark.parametrize("rel", TRACES)
def test_built_in_limits_agree_with_every_amd_traces_device_properties(rel: str) -> None:
    dev = load(tracelens_path(rel)).gpu_device
    assert dev is not None and dev.warp_size == 64
    gfx = amd_gfx(dev)
    assert gfx in CDNA_ARCHS
    # 2048 threads per CU = 32 wave slots, 64 KiB LDS per CU and per workgroup, 1024 per block:
    # the trace's properties change nothing in the table
    assert cdna_limits_for_device(dev) is CDNA_ARCHS[gfx]


def test_device_properties_override_the_table() -> None:
    dev = DeviceInfo(
        id=0, name="AMD Instinct MI300X", warp_size=64, max_threads_per_sm=1024, sm_count=304
    )
    lim = cdna_limits_for_device(dev)
    assert lim.max_waves_per_cu == 16 and "trace device properties" in lim.source
    with pytest.raises(UsageError, match="cannot be told"):
        cdna_limits_for_device(DeviceInfo(id=0, name="AMD Radeon Graphics", warp_size=64))
