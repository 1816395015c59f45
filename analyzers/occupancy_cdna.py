"""Theoretical occupancy on AMD CDNA GPUs (CDNA2 ``gfx90a``: MI210/MI250/MI250X; CDNA3
``gfx942``: MI300X/MI300A/MI325X): resident workgroups and wavefronts per compute unit.

A CU has 4 SIMDs; each SIMD holds at most 8 wavefronts of 64 work-items, so a CU holds 32.  With
``W = ceil(work-items per workgroup / 64)`` wavefronts per workgroup, the workgroups one CU
holds are limited by (sources of every number: ``docs/efficiency.md`` §1b):

* waves      = ``floor(32 / W)``;
* workgroups = 16 barrier slots per CU for workgroups of more than one wavefront
  (single-wave workgroups use none: no limit beyond the waves limit);
* VGPRs      = ``floor(4 · v / W)`` with ``v`` = wavefronts per SIMD the unified VGPR file
  allows: ``min(8, max(1, floor(512 / roundup(VGPRs, 8))))`` (8 when VGPRs < 8); VGPRs here are
  the architected plus accumulation (AGPR) registers, ``roundup(arch, 4) + AGPRs``;
* SGPRs      = ``floor(4 · s / W)`` with ``s`` = LLVM's gfx9 table: ≤ 80 SGPRs → 10,
  ≤ 88 → 9, ≤ 100 → 8, else 7 wavefronts per SIMD, capped at 8;
* LDS        = ``floor(64 KiB / roundup(LDS bytes, 512))`` (0 when one workgroup asks for more
  than 64 KiB; no limit for 0 bytes).

``active_workgroups = min`` of the limits that apply; ``occupancy = 100 · active_workgroups ·
W / 32``.  A limit whose input the trace does not record (Kineto on ROCm records neither
registers nor LDS) is **not applied**: the result is then an upper bound, and says so
(``upper_bound``, ``not_applied``).

    =======  ==========  =====  =====  =============================
    arch     work-items  VGPRs  LDS    occupancy, limiters
    =======  ==========  =====  =====  =============================
    gfx90a   512         50     –      100 %, waves+vgprs+sgprs(30)
    gfx90a   256         128    –      50 %, vgprs
    gfx942   192         –      –      ≤ 93.75 %, waves (upper bound)
    =======  ==========  =====  =====  =============================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from analyzers.arch import KIB, amd_gfx
from analyzers.occupancy import UNLIMITED
from collectors.errors import UsageError
from collectors.model import DeviceInfo

CDNA_LIMITERS = ("waves", "workgroups", "vgprs", "sgprs", "lds")
"""Limit names, in the order they are reported."""


@dataclass(frozen=True)
class CdnaLimits:
    """Occupancy-relevant limits of one CDNA target (per CU unless named per SIMD/wave)."""

    gfx: str
    generation: str
    example_gpus: str
    wavefront_size: int = 64
    simds_per_cu: int = 4
    max_waves_per_cu: int = 32
    """4 SIMDs × 8 wavefront slots."""
    vgprs_per_simd: int = 512
    """Unified VGPR + AGPR file per lane of a SIMD (512 KiB per CU = 4 × 512 × 64 × 4 B)."""
    vgpr_granule: int = 8
    max_vgprs_per_wave: int = 512
    max_sgprs_per_wave: int = 112
    """Allocated SGPRs including VCC, FLAT_SCRATCH and XNACK_MASK (102 addressable)."""
    lds_per_cu: int = 64 * KIB
    lds_per_workgroup: int = 64 * KIB
    lds_granule: int = 512
    max_workgroup_size: int = 1024
    barrier_workgroups_per_cu: int = 16
    source: str = "built-in CDNA table (docs/efficiency.md §1b)"

    @property
    def arch(self) -> str:
        return self.gfx

    @property
    def max_waves_per_simd(self) -> int:
        return self.max_waves_per_cu // self.simds_per_cu


CDNA_ARCHS: dict[str, CdnaLimits] = {
    "gfx90a": CdnaLimits("gfx90a", "CDNA2", "MI210, MI250, MI250X"),
    "gfx942": CdnaLimits("gfx942", "CDNA3", "MI300X, MI300A, MI325X"),
}
"""Built-in limits keyed by LLVM target."""


def cdna_limits_for_device(device: DeviceInfo) -> CdnaLimits:
    """The built-in limits of the device's target, overridden by what the trace recorded:
    threads per CU (``maxThreadsPerMultiprocessor`` / 64 = wavefront slots), threads per block,
    LDS per CU (``maxSharedMemoryPerMultiProcessor``) and per workgroup (``sharedMemPerBlock``).

    Raises:
        UsageError: the target cannot be told from the device, or is not CDNA2/CDNA3.
    """
    gfx = amd_gfx(device)
    if gfx is None:
        raise UsageError(
            f"AMD device {device.name or device.id!r}: the GPU target (gfx) cannot be told from "
            f"its name, GFXIP {device.compute_major}.{device.compute_minor} and "
            f"{device.sm_count} CUs"
        )
    base = CDNA_ARCHS.get(gfx)
    if base is None:
        raise UsageError(f"no CDNA occupancy limits for {gfx}: known are {', '.join(CDNA_ARCHS)}")
    over: dict[str, Any] = {}
    if device.max_threads_per_sm and device.max_threads_per_sm > 0:
        over["max_waves_per_cu"] = device.max_threads_per_sm // base.wavefront_size
    pairs = (
        ("max_workgroup_size", device.max_threads_per_block),
        ("lds_per_cu", device.smem_per_sm_bytes),
        ("lds_per_workgroup", device.smem_per_block_bytes),
    )
    for name, value in pairs:
        if value is not None and value > 0:
            over[name] = int(value)
    changed = {k: v for k, v in over.items() if getattr(base, k) != v}
    if not changed:
        return base
    return replace(base, **changed, source="trace device properties over the built-in table")


@dataclass(frozen=True)
class CdnaLaunch:
    """One dispatch: workgroup size and per-wavefront resources (None = not recorded)."""

    threads_per_workgroup: int
    vgprs: int | None = None
    """Unified VGPRs per work-item (architected + AGPRs, see :func:`unified_vgprs`)."""
    sgprs: int | None = None
    lds_bytes: int | None = None


def unified_vgprs(arch_vgprs: int, agprs: int = 0) -> int:
    """VGPRs a wavefront allocates from the unified file: ``roundup(arch, 4) + AGPRs`` when the
    kernel uses AGPRs, else the architected count (LLVM ``getTotalNumVGPRs`` on gfx90a+)."""
    return -(-arch_vgprs // 4) * 4 + agprs if agprs > 0 else arch_vgprs


@dataclass(frozen=True)
class CdnaOccupancy:
    """Theoretical (or upper-bound) occupancy of one dispatch on one CDNA target."""

    arch: str
    launch: CdnaLaunch
    waves_per_workgroup: int
    active_workgroups: int
    """Resident workgroups per CU (min of the applied limits)."""
    active_waves: int
    max_waves: int
    occupancy_pct: float
    """``100 × active_waves / max_waves``."""
    limits: Mapping[str, int | None] = field(default_factory=dict)
    """Workgroups per CU each limit allows; :data:`UNLIMITED` = does not bind, None = not
    applied (input not recorded)."""
    limiters: tuple[str, ...] = ()
    not_applied: tuple[str, ...] = ()
    alloc_vgprs_per_wave: int | None = None
    alloc_lds_per_workgroup: int | None = None

    @property
    def upper_bound(self) -> bool:
        """True when a limit could not be applied: the real occupancy may be lower."""
        return bool(self.not_applied)

    @property
    def active_blocks(self) -> int:
        return self.active_workgroups

    @property
    def active_warps(self) -> int:
        return self.active_waves

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (``null`` for a limit that does not bind or was not applied)."""
        return {
            "arch": self.arch,
            "threads_per_workgroup": self.launch.threads_per_workgroup,
            "vgprs": self.launch.vgprs,
            "sgprs": self.launch.sgprs,
            "lds_bytes": self.launch.lds_bytes,
            "waves_per_workgroup": self.waves_per_workgroup,
            "active_workgroups_per_cu": self.active_workgroups,
            "active_waves_per_cu": self.active_waves,
            "max_waves_per_cu": self.max_waves,
            "occupancy_pct": self.occupancy_pct,
            "upper_bound": self.upper_bound,
            "limiters": list(self.limiters),
            "limits_not_applied": list(self.not_applied),
            "limits": {k: (None if v in (None, UNLIMITED) else v) for k, v in self.limits.items()},
            "alloc_vgprs_per_wave": self.alloc_vgprs_per_wave,
            "alloc_lds_per_workgroup": self.alloc_lds_per_workgroup,
        }


def _validate(lim: CdnaLimits, la: CdnaLaunch) -> None:
    t = la.threads_per_workgroup
    if t < 1 or t > lim.max_workgroup_size:
        raise UsageError(
            f"impossible workgroup size {t}: must be 1..{lim.max_workgroup_size} work-items"
        )
    if la.vgprs is not None and not 0 <= la.vgprs <= lim.max_vgprs_per_wave:
        raise UsageError(f"impossible VGPR count {la.vgprs}: must be 0..{lim.max_vgprs_per_wave}")
    if la.sgprs is not None and not 0 <= la.sgprs <= lim.max_sgprs_per_wave:
        raise UsageError(f"impossible SGPR count {la.sgprs}: must be 0..{lim.max_sgprs_per_wave}")
    if la.lds_bytes is not None and la.lds_bytes < 0:
        raise UsageError("LDS per workgroup cannot be negative")


def _waves_per_simd_vgprs(lim: CdnaLimits, vgprs: int) -> int:
    if vgprs < lim.vgpr_granule:
        return lim.max_waves_per_simd
    rounded = -(-vgprs // lim.vgpr_granule) * lim.vgpr_granule
    return min(max(lim.vgprs_per_simd // rounded, 1), lim.max_waves_per_simd)


def _waves_per_simd_sgprs(lim: CdnaLimits, sgprs: int) -> int:
    waves = 10 if sgprs <= 80 else 9 if sgprs <= 88 else 8 if sgprs <= 100 else 7
    return min(waves, lim.max_waves_per_simd)


def cdna_occupancy(lim: CdnaLimits, launch: CdnaLaunch) -> CdnaOccupancy:
    """Occupancy of *launch* on *lim* (module docstring); an upper bound when registers or LDS
    are unknown.

    Raises:
        UsageError: workgroup size outside 1…1024, VGPRs outside 0…512, SGPRs outside 0…112,
            negative LDS.
    """
    _validate(lim, launch)
    w = -(-launch.threads_per_workgroup // lim.wavefront_size)
    limits: dict[str, int | None] = {
        "waves": lim.max_waves_per_cu // w,
        "workgroups": lim.barrier_workgroups_per_cu if w > 1 else UNLIMITED,
        "vgprs": None,
        "sgprs": None,
        "lds": None,
    }
    alloc_vgprs = alloc_lds = None
    if launch.vgprs is not None:
        limits["vgprs"] = lim.simds_per_cu * _waves_per_simd_vgprs(lim, launch.vgprs) // w
        alloc_vgprs = -(-max(launch.vgprs, 1) // lim.vgpr_granule) * lim.vgpr_granule
    if launch.sgprs is not None:
        limits["sgprs"] = lim.simds_per_cu * _waves_per_simd_sgprs(lim, launch.sgprs) // w
    if launch.lds_bytes is not None:
        alloc_lds = -(-launch.lds_bytes // lim.lds_granule) * lim.lds_granule
        if alloc_lds == 0:
            limits["lds"] = UNLIMITED
        elif alloc_lds > lim.lds_per_workgroup:
            limits["lds"] = 0
        else:
            limits["lds"] = lim.lds_per_cu // alloc_lds
    applied = {k: v for k, v in limits.items() if v is not None}
    active = min(applied.values())
    waves = active * w
    return CdnaOccupancy(
        arch=lim.arch,
        launch=launch,
        waves_per_workgroup=w,
        active_workgroups=active,
        active_waves=waves,
        max_waves=lim.max_waves_per_cu,
        occupancy_pct=100.0 * waves / lim.max_waves_per_cu,
        limits=MappingProxyType(limits),
        limiters=tuple(k for k in CDNA_LIMITERS if applied.get(k) == active),
        not_applied=tuple(k for k in CDNA_LIMITERS if limits[k] is None),
        alloc_vgprs_per_wave=alloc_vgprs,
        alloc_lds_per_workgroup=alloc_lds,
    )


def cdna_suggestion(lim: CdnaLimits, launch: CdnaLaunch) -> str | None:
    """The workgroup size nearest to the current one (multiples of 64, other inputs fixed) with
    a strictly higher occupancy, as text; None when no size does better."""
    base = cdna_occupancy(lim, launch).occupancy_pct
    sizes = range(lim.wavefront_size, lim.max_workgroup_size + 1, lim.wavefront_size)
    better = []
    for t in sizes:
        occ = cdna_occupancy(lim, replace(launch, threads_per_workgroup=t)).occupancy_pct
        if occ > base:
            better.append((abs(t - launch.threads_per_workgroup), -occ, t, occ))
    if not better:
        return None
    _, _, t, occ = min(better)
    return f"workgroup size {launch.threads_per_workgroup} → {t}: {occ:.2f} %"
