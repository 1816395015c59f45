"""Per-architecture limits that CUDA's occupancy calculation needs (sm_70 … sm_120), and the
architecture name a traced device is shown with (``sm_90`` on NVIDIA, ``gfx942`` on AMD).

The built-in table restates ``reference/occupancy.md`` §3 (CUDA C++ Programming Guide,
"Technical Specifications per Compute Capability", and NVIDIA's ``cuda_occupancy.h``).  Device
properties recorded in a trace (:class:`collectors.model.DeviceInfo`, from Kineto
``deviceProperties`` or nsys ``TARGET_INFO_GPU``) override the table field by field, so a
trace from a GPU whose driver reports other limits is computed with what it reported.

    ========  =========  ======  =======  ==========  ============  =========
    arch      threads/SM warps   blocks   smem/SM     opt-in/block  reserved
    ========  =========  ======  =======  ==========  ============  =========
    sm_70     2048       64      32       96 KiB      96 KiB        0
    sm_80     2048       64      32       164 KiB     163 KiB       1 KiB
    sm_90     2048       64      32       228 KiB     227 KiB       1 KiB
    sm_120    1536       48      24       100 KiB     99 KiB        1 KiB
    ========  =========  ======  =======  ==========  ============  =========
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from collectors.errors import UsageError
from collectors.model import DeviceInfo

KIB = 1024


@dataclass(frozen=True)
class ArchLimits:
    """Occupancy-relevant limits of one compute capability (bytes, registers, threads)."""

    compute_major: int
    compute_minor: int
    example_gpus: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int
    """Largest shared-memory carveout per SM (``sharedMemPerMultiprocessor``)."""
    smem_per_block_optin: int
    """Largest shared memory per block after opting in (``sharedMemPerBlockOptin``)."""
    reserved_smem_per_block: int
    """Shared memory the driver reserves per block (1 KiB on cc ≥ 8.0)."""
    smem_alloc_unit: int
    carveouts_kib: tuple[int, ...]
    """Legal shared-memory carveout sizes of the architecture, KiB, ascending."""
    barrier_slots_per_block_limit: int
    """Barrier slots per SM as a multiple of max blocks/SM (0 = no barrier limit, cc < 9)."""
    max_threads_per_block: int = 1024
    warp_size: int = 32
    regs_per_sm: int = 65_536
    regs_per_block: int = 65_536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    """Registers are allocated per warp in units of this many registers."""
    smem_per_block: int = 48 * KIB
    """Default per-block shared-memory limit without opt-in (``sharedMemPerBlock``)."""
    sub_partitions: int = 4
    source: str = "built-in table (reference/occupancy.md §3)"

    @property
    def arch(self) -> str:
        return f"sm_{self.compute_major}{self.compute_minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def legal_carveouts(self) -> tuple[int, ...]:
        """Legal carveout sizes in bytes that fit this device's shared memory per SM."""
        sizes = [k * KIB for k in self.carveouts_kib if k * KIB <= self.smem_per_sm]
        if not sizes or sizes[-1] != self.smem_per_sm:
            sizes.append(self.smem_per_sm)
        return tuple(sizes)


_C90 = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
_C80 = (0, 8, 16, 32, 64, 100, 132, 164)
_C86 = (0, 8, 16, 32, 64, 100)

ARCHS: dict[str, ArchLimits] = {
    a.arch: a
    for a in (
        ArchLimits(7, 0, "V100", 2048, 32, 96 * KIB, 96 * KIB, 0, 256, (0, 8, 16, 32, 64, 96), 0),
        ArchLimits(7, 5, "T4, RTX 20", 1024, 16, 64 * KIB, 64 * KIB, 0, 256, (32, 64), 0),
        ArchLimits(8, 0, "A100", 2048, 32, 164 * KIB, 163 * KIB, KIB, 128, _C80, 0),
        ArchLimits(8, 6, "RTX 30, A40, A10", 1536, 16, 100 * KIB, 99 * KIB, KIB, 128, _C86, 0),
        ArchLimits(8, 7, "Jetson Orin", 1536, 16, 164 * KIB, 163 * KIB, KIB, 128, _C80, 0),
        ArchLimits(8, 9, "L4, L40S, RTX 40", 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, _C86, 0),
        ArchLimits(9, 0, "H100, H200", 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, _C90, 2),
        ArchLimits(10, 0, "B200, GB200", 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, _C90, 2),
        ArchLimits(12, 0, "RTX 50, RTX PRO 6000", 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, _C86, 1),
    )
}
"""Built-in limits keyed by ``sm_XY``."""

_ARCH_RE = re.compile(r"^(?:sm_?|compute_?|cc)?\s*(\d{1,2})[._]?(\d)$", re.IGNORECASE)


def normalize_arch(text: str) -> str:
    """``sm_90``, ``sm90``, ``90``, ``9.0``, ``cc9.0`` → ``sm_90``.

    Raises:
        UsageError: not an architecture spelling.
    """
    s = text.strip()
    m = _ARCH_RE.match(s)
    if m is None:
        raise UsageError(f"unknown architecture {text!r}: expected e.g. sm_90 or 9.0")
    return f"sm_{int(m.group(1))}{m.group(2)}"


def arch_limits(arch: str) -> ArchLimits:
    """The built-in limits of *arch* (any spelling :func:`normalize_arch` accepts).

    Raises:
        UsageError: the architecture is not in the table.
    """
    key = normalize_arch(arch)
    try:
        return ARCHS[key]
    except KeyError:
        known = ", ".join(ARCHS)
        raise UsageError(f"unknown architecture {arch!r}: known are {known}") from None


def limits_for_device(device: DeviceInfo, arch: str | None = None) -> ArchLimits:
    """Limits for a traced device: the table row of its compute capability, overridden by
    every property the trace recorded.

    The reserved shared memory per block is ``smem_per_sm − smem_per_block_optin`` when the
    device reports both (nsys and Kineto record no separate field; occupancy.md §1).

    Raises:
        UsageError: no compute capability known, not in the table, or not an NVIDIA warp-32
            device (the NVIDIA algorithm does not apply, e.g. AMD wavefront 64).
    """
    key = arch or device.arch
    if key is None:
        raise UsageError("the trace records no compute capability for the device")
    base = arch_limits(key)
    if device.warp_size is not None and device.warp_size != base.warp_size:
        raise UsageError(
            f"device {device.name or device.id} has warp size {device.warp_size}: "
            "the CUDA occupancy algorithm applies to NVIDIA warp-32 GPUs only"
        )
    over: dict[str, Any] = {}
    pairs = (
        ("max_threads_per_sm", device.max_threads_per_sm),
        ("max_threads_per_block", device.max_threads_per_block),
        ("max_blocks_per_sm", device.max_blocks_per_sm),
        ("regs_per_sm", device.regs_per_sm),
        ("regs_per_block", device.regs_per_block),
        ("smem_per_sm", device.smem_per_sm_bytes),
        ("smem_per_block", device.smem_per_block_bytes),
        ("smem_per_block_optin", device.smem_per_block_optin_bytes),
    )
    for name, value in pairs:
        if value is not None and value > 0:
            over[name] = int(value)
    if device.max_threads_per_sm is None and device.max_warps_per_sm:
        over["max_threads_per_sm"] = int(device.max_warps_per_sm) * base.warp_size
    if not over:
        return base
    lim = replace(base, **over, source="trace device properties over the built-in table")
    if device.smem_per_sm_bytes and device.smem_per_block_optin_bytes:
        reserved = max(0, int(device.smem_per_sm_bytes) - int(device.smem_per_block_optin_bytes))
        lim = replace(lim, reserved_smem_per_block=reserved)
    return lim


# --- device naming (NVIDIA sm_XY, AMD gfxNNN) --------------------------------------------------

AMD_GFX_BY_NAME: tuple[tuple[str, str], ...] = (
    ("MI355X", "gfx950"),
    ("MI350X", "gfx950"),
    ("MI325X", "gfx942"),
    ("MI300X", "gfx942"),
    ("MI300A", "gfx942"),
    ("MI308X", "gfx942"),
    ("MI250X", "gfx90a"),
    ("MI250", "gfx90a"),
    ("MI210", "gfx90a"),
    ("MI100", "gfx908"),
    ("MI60", "gfx906"),
    ("MI50", "gfx906"),
)
"""Marketing-name substring → LLVM target (ROCm "AMD GPU specifications" table)."""

AMD_GFX_BY_VERSION: dict[tuple[int, int], str] = {(9, 4): "gfx942", (9, 5): "gfx950"}
"""HIP ``major.minor`` (the GFXIP version Kineto records as ``computeMajor/Minor``) → LLVM
target where the version names one shipping target (9.4: MI300X/MI300A/MI325X; 9.5: MI350)."""

AMD_GFX9_BY_CUS: dict[int, str] = {104: "gfx90a", 110: "gfx90a", 120: "gfx908", 64: "gfx906"}
"""GFXIP 9.0 is shared by gfx906/908/90a: the compute-unit count per device tells them apart
(MI210 and one MI250 GCD 104, one MI250X GCD 110, MI100 120, MI60 64; ROCm specifications)."""


def is_amd(device: DeviceInfo) -> bool:
    """An AMD GPU: vendor AMD, or a wavefront of 64 (no NVIDIA GPU has one)."""
    return device.vendor == "AMD" or device.warp_size == 64


def amd_gfx(device: DeviceInfo) -> str | None:
    """The LLVM target (``gfx942``, ``gfx90a``...) of an AMD device, or None when neither its
    name nor its GFXIP version and compute-unit count determine it."""
    name = (device.name or "").upper()
    for key, gfx in AMD_GFX_BY_NAME:
        if key in name:
            return gfx
    major, minor = device.compute_major, device.compute_minor
    if major is None or minor is None:
        return None
    if (major, minor) in AMD_GFX_BY_VERSION:
        return AMD_GFX_BY_VERSION[(major, minor)]
    if (major, minor) == (9, 0) and device.sm_count is not None:
        return AMD_GFX9_BY_CUS.get(device.sm_count)
    return None


def device_arch_name(device: DeviceInfo) -> str | None:
    """``gfx942``-style LLVM target for AMD devices, ``sm_XY`` for NVIDIA ones (None unknown).

    AMD devices report their GFXIP version in the compute-capability fields (MI300X: 9.4), so
    ``sm_94`` would name an NVIDIA architecture that does not exist.
    """
    return amd_gfx(device) if is_amd(device) else device.arch


def compute_unit_word(vendor: str | None, warp_size: int | None = None) -> str:
    """``CUs`` (AMD compute units) or ``SMs`` (NVIDIA streaming multiprocessors)."""
    return "CUs" if vendor == "AMD" or warp_size == 64 else "SMs"
