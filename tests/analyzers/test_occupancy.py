"""Occupancy calculator against NVIDIA's cuda_occupancy.h reference vectors and hand cases."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from analyzers.arch import ARCHS, arch_limits, limits_for_device, normalize_arch
from analyzers.occupancy import UNLIMITED, LaunchConfig, occupancy, what_if
from collectors.errors import UsageError
from collectors.model import DeviceInfo
from tests.support.env import SHARED_DATA, shared_path


def _vector_rows() -> list[dict[str, str]]:
    p = SHARED_DATA / "occupancy" / "occupancy_vectors.csv"
    if not p.exists():
        return []
    with p.open(newline="") as f:
        return list(csv.DictReader(f))


ROWS = _vector_rows()


def _cfg(r: dict[str, str], optin: bool | None) -> LaunchConfig:
    return LaunchConfig(
        threads_per_block=int(r["blockSize"]),
        regs_per_thread=int(r["regsPerThread"]),
        static_smem=int(r["staticSmem"]),
        dynamic_smem=int(r["dynSmem"]),
        optin=optin,
        carveout_pct=int(r["carveout"]),
    )


def test_reference_vectors_file_has_72_rows() -> None:
    shared_path("occupancy", "occupancy_vectors.csv")
    assert len(ROWS) == 72


@pytest.mark.parametrize(
    "row",
    ROWS,
    ids=[f"{r['arch']}-{r['blockSize']}t-{r['regsPerThread']}r-{i}" for i, r in enumerate(ROWS)],
)
def test_every_reference_vector_is_reproduced_exactly(row: dict[str, str]) -> None:
    r = occupancy(arch_limits(row["arch"]), _cfg(row, bool(int(row["optin"]))))
    assert r.active_blocks == int(row["activeBlocks"])
    assert r.active_warps == int(row["activeWarps"])
    assert r.max_warps == int(row["maxWarps"])
    assert f"{r.occupancy_pct:.2f}" == row["occupancyPct"]
    assert r.limit_registers == int(row["limitRegs"])
    assert r.limit_shared_memory == int(row["limitSmem"])
    assert r.limit_warps == int(row["limitWarps"])
    assert r.limit_blocks == int(row["limitBlocks"])
    assert r.limiter_mask == int(row["limiterMask"], 16)
    assert r.alloc_regs_per_block == int(row["allocRegsPerBlock"])
    assert r.alloc_smem_per_block == int(row["allocSmemPerBlock"])


@pytest.mark.parametrize("row", ROWS)
def test_opt_in_is_assumed_exactly_when_shared_memory_exceeds_48_kib(row: dict[str, str]) -> None:
    # occupancy.md: a calculator without kernel attributes assumes opt-in above 48 KiB
    auto = occupancy(arch_limits(row["arch"]), _cfg(row, None))
    assert auto.optin == bool(int(row["optin"]))
    assert auto.active_blocks == int(row["activeBlocks"])


def test_best_practices_guide_example_sm70_128_threads_37_registers() -> None:
    r = occupancy(arch_limits("sm_70"), LaunchConfig(128, 37))
    assert (r.active_blocks, r.occupancy_pct, r.limiters) == (12, 75.0, ("registers",))
    # same guide, 320 threads: 4 blocks = 62.5 %
    assert occupancy(arch_limits("sm_70"), LaunchConfig(320, 37)).occupancy_pct == 62.5


def test_1000_threads_20_registers_rounds_registers_per_warp_to_768() -> None:
    # occupancy.md §2 second example: roundup(640, 256) = 768, floor(16384/768) = 21 -> 2 blocks
    r = occupancy(arch_limits("sm_70"), LaunchConfig(1000, 20))
    assert r.limit_registers == 2
    assert r.alloc_regs_per_block == 768 * 32


def test_sm120_barrier_limit_ties_with_block_limit() -> None:
    # occupancy.md §2.5: on 12.x barrier slots = 1 x max blocks (24): mask 0x18 for tiny blocks
    # (32 threads, 16 regs: warps 48, registers 128, smem 100 x 1 KiB reserved -> blocks bind)
    r = occupancy(arch_limits("sm_120"), LaunchConfig(32, 16))
    assert r.active_blocks == 24
    assert r.limiter_mask == 0x18
    assert r.limiters == ("blocks", "barriers")


def test_registers_255_is_valid_and_may_fit_no_block() -> None:
    r = occupancy(arch_limits("sm_90"), LaunchConfig(512, 255))
    assert r.active_blocks == 0 and r.occupancy_pct == 0.0 and r.limiters == ("registers",)


def test_zero_shared_memory_without_reserved_memory_does_not_limit() -> None:
    r = occupancy(arch_limits("sm_75"), LaunchConfig(256, 32))
    assert r.limit_shared_memory == UNLIMITED


@pytest.mark.parametrize(
    ("arch", "cfg", "words"),
    [
        ("sm_90", LaunchConfig(1025, 32), "block size 1025"),
        ("sm_90", LaunchConfig(0, 32), "block size 0"),
        ("sm_90", LaunchConfig(128, 256), "register count 256"),
        ("sm_80", LaunchConfig(128, 32, 50_000, 0), "static shared memory"),
        ("sm_80", LaunchConfig(128, 32, 0, 60_000, optin=False), "without opting in"),
        ("sm_80", LaunchConfig(128, 32, carveout_pct=101), "carveout"),
    ],
)
def test_impossible_configuration_is_a_usage_error(
    arch: str, cfg: LaunchConfig, words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        occupancy(arch_limits(arch), cfg)


@pytest.mark.parametrize("bad", ["sm_99", "sm_61", "hopper", ""])
def test_unknown_architecture_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="architecture"):
        arch_limits(bad)


@pytest.mark.parametrize(
    ("text", "arch"), [("sm_90", "sm_90"), ("9.0", "sm_90"), ("sm120", "sm_120"), ("86", "sm_86")]
)
def test_architecture_spellings(text: str, arch: str) -> None:
    assert normalize_arch(text) == arch


def test_arch_table_matches_target_info_gpu_of_real_nsys_exports() -> None:
    p = shared_path("nsys", "TARGET_INFO_GPU_observed.csv")
    with p.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        lim = arch_limits(f"sm_{r['computeMajor']}{r['computeMinor']}")
        got = (
            lim.smem_per_sm,
            lim.smem_per_block,
            lim.smem_per_block_optin,
            lim.regs_per_sm,
            lim.regs_per_block,
            lim.max_warps_per_sm,
            lim.max_blocks_per_sm,
            lim.max_threads_per_block,
            lim.warp_size,
        )
        want = tuple(
            int(r[k])
            for k in (
                "maxShmemPerSm",
                "maxShmemPerBlock",
                "maxShmemPerBlockOptin",
                "maxRegistersPerSm",
                "maxRegistersPerBlock",
                "maxWarpsPerSm",
                "maxBlocksPerSm",
                "maxThreadsPerBlock",
                "threadsPerWarp",
            )
        )
        assert got == want, r["name"]
        # reserved smem per block = maxShmemPerSm - maxShmemPerBlockOptin (occupancy.md §1)
        assert lim.reserved_smem_per_block == want[0] - want[2]


def test_every_table_architecture_has_ascending_carveouts_ending_at_smem_per_sm() -> None:
    for lim in ARCHS.values():
        sizes = lim.legal_carveouts()
        assert list(sizes) == sorted(sizes)
        assert sizes[-1] == lim.smem_per_sm


def test_device_properties_from_the_trace_override_the_table() -> None:
    dev = DeviceInfo(
        id=0,
        compute_major=8,
        compute_minor=0,
        max_threads_per_sm=1024,
        smem_per_sm_bytes=102_400,
        smem_per_block_optin_bytes=101_376,
    )
    lim = limits_for_device(dev)
    assert lim.max_threads_per_sm == 1024
    assert lim.reserved_smem_per_block == 1024
    # 256 threads, no registers: warps limit 1024/32/8 = 4 blocks = 100 % of 32 warps
    r = occupancy(lim, LaunchConfig(256, 0))
    assert (r.active_blocks, r.max_warps, r.occupancy_pct) == (4, 32, 100.0)
    assert limits_for_device(DeviceInfo(id=0, compute_major=9, compute_minor=0)) == ARCHS["sm_90"]


def test_amd_wavefront_64_device_is_rejected() -> None:
    dev = DeviceInfo(id=0, compute_major=9, compute_minor=0, warp_size=64)
    with pytest.raises(UsageError, match="warp size 64"):
        limits_for_device(dev)


def test_what_if_register_suggestion_is_the_nearest_count_that_raises_occupancy() -> None:
    # sm_90, 256 threads, 64 regs: 4 blocks (50 %).  Hand: 48 regs -> roundup(1536,256)=1536,
    # floor(16384/1536)=10 warps/sub-partition, floor(40/8)=5 blocks = 62.5 %; 49..63 regs give
    # roundup(>=1568,256)=1792 -> 9 -> 4 blocks (no gain); 32 regs -> 8 blocks = 100 %.
    wi = what_if(arch_limits("sm_90"), LaunchConfig(256, 64))
    s = wi.suggestions[0]
    assert (s.change, s.current, s.to, s.occupancy_pct) == ("registers_per_thread", 64, 48, 62.5)
    assert (s.best, s.best_occupancy_pct) == (32, 100.0)


def test_what_if_curves_pass_through_reference_vectors() -> None:
    by_regs = {
        (r["blockSize"], r["regsPerThread"]): float(r["occupancyPct"])
        for r in ROWS
        if r["arch"] == "sm_70" and r["staticSmem"] == "0" and r["dynSmem"] == "0"
    }
    if not by_regs:
        pytest.skip("reference vectors absent")
    wi = what_if(arch_limits("sm_70"), LaunchConfig(128, 37))
    regs_curve = dict(zip(wi.curves[1].values, wi.curves[1].occupancy_pct, strict=True))
    assert regs_curve[37] == by_regs[("128", "37")] == 75.0
    assert regs_curve[128] == by_regs[("128", "128")] == 25.0
    threads_curve = dict(zip(wi.curves[0].values, wi.curves[0].occupancy_pct, strict=True))
    assert threads_curve[320] == by_regs[("320", "37")] == 62.5


def test_what_if_shared_memory_suggestion_when_shared_memory_limits() -> None:
    # sm_80, 128 threads, 32 regs, 16 KiB static: 9 blocks (reference vector).  Hand: 12 KiB
    # -> (12288+1024)=13312 B/block -> floor(167936/13312)=12 blocks = 75 %.
    wi = what_if(arch_limits("sm_80"), LaunchConfig(128, 32, 16_384, 0))
    assert wi.base.limiters == ("shared_memory",)
    s = wi.suggestions[0]
    assert s.change == "smem_per_block" and s.to < 16_384
    base = occupancy(arch_limits("sm_80"), LaunchConfig(128, 32, 0, 12_288))
    assert base.active_blocks == 12
    assert s.occupancy_pct > wi.base.occupancy_pct


def test_no_suggestion_at_full_occupancy() -> None:
    assert what_if(arch_limits("sm_90"), LaunchConfig(256, 32)).suggestions == ()


def test_occupancy_result_is_a_pure_function_of_its_inputs() -> None:
    lim = arch_limits("sm_86")
    a = occupancy(lim, LaunchConfig(96, 40))
    b = occupancy(replace(lim), LaunchConfig(96, 40))
    assert a == b and a.limiter_mask == 0x0B
