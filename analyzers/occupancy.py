"""CUDA theoretical occupancy: active blocks and warps per SM, limiters, what-if curves.

The algorithm is NVIDIA's ``cudaOccMaxActiveBlocksPerMultiprocessor`` (``cuda_occupancy.h``) as
restated in ``reference/occupancy.md`` §2.  With ``W = ceil(threads / 32)`` warps per block:

* warps limit     = ``floor(max_warps_per_sm / W)``;
* registers limit = ``floor(4 · floor((regs_per_sm / 4) / regs_per_warp) / W)`` with
  ``regs_per_warp = roundup(regs · 32, 256)`` (0 registers → unlimited; 0 when one block does
  not fit the register file);
* blocks limit    = the architecture's max resident blocks per SM;
* shared memory   = ``floor(smem_per_sm_config / roundup(static + reserved + dynamic, unit))``
  where the SM's configured size follows the carveout preference, rounded up to a legal size;
* barriers limit  = ``barrier slots / barriers per block`` on cc ≥ 9.0.

``active_blocks = min(limits)``; ``occupancy = active_blocks · W / max_warps_per_sm``; every limit
equal to the minimum is a limiter (ties are reported, mask bits as in ``cuda_occupancy.h``).

    ======  =======  ====  ====  ======  =====================
    arch    threads  regs  smem  blocks  occupancy, limiter
    ======  =======  ====  ====  ======  =====================
    sm_70   128      37    0     12      75 %, registers
    sm_86   96       40    0     16      100 %, warps+regs+blocks
    ======  =======  ====  ====  ======  =====================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from analyzers.arch import KIB, ArchLimits
from collectors.errors import UsageError

UNLIMITED = 2**31 - 1
"""A limit that does not bind (``INT32_MAX`` as in ``cuda_occupancy.h``)."""

LIMITER_BITS: dict[str, int] = {
    "warps": 0x01,
    "registers": 0x02,
    "shared_memory": 0x04,
    "blocks": 0x08,
    "barriers": 0x10,
}
"""Limiter names and their ``cudaOccLimitingFactor`` bits."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, unit: int) -> int:
    return _ceil_div(a, unit) * unit


@dataclass(frozen=True)
class LaunchConfig:
    """One kernel's launch: block size and per-block resources."""

    threads_per_block: int
    regs_per_thread: int = 0
    """As reported by the compiler; 0 = unknown, registers then do not limit."""
    static_smem: int = 0
    dynamic_smem: int = 0
    optin: bool | None = None
    """Kernel opted in to more than 48 KiB per block; None = exactly when it asks for more."""
    carveout_pct: int = -1
    """Shared-memory carveout preference in % of the SM's shared memory; −1 = driver default."""
    barriers_per_block: int = 1

    @property
    def smem(self) -> int:
        return self.static_smem + self.dynamic_smem


@dataclass(frozen=True)
class OccupancyResult:
    """Theoretical occupancy of one launch configuration on one architecture."""

    arch: str
    config: LaunchConfig
    warps_per_block: int
    active_blocks: int
    """Resident blocks per SM (min of the limits)."""
    active_warps: int
    """``active_blocks × warps_per_block``."""
    max_warps: int
    occupancy_pct: float
    """``100 × active_warps / max_warps``."""
    limit_warps: int
    limit_registers: int
    limit_shared_memory: int
    limit_blocks: int
    limit_barriers: int
    limiter_mask: int
    limiters: tuple[str, ...]
    """Every resource whose limit equals ``active_blocks``."""
    alloc_regs_per_block: int
    alloc_smem_per_block: int
    """Static + reserved + dynamic shared memory rounded up to the allocation unit."""
    smem_per_sm_config: int
    """Shared memory per SM under the carveout that applies (bytes)."""
    optin: bool

    def limits(self) -> dict[str, int]:
        return {
            "warps": self.limit_warps,
            "registers": self.limit_registers,
            "shared_memory": self.limit_shared_memory,
            "blocks": self.limit_blocks,
            "barriers": self.limit_barriers,
        }

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (``null`` for an unlimited resource)."""
        return {
            "arch": self.arch,
            "threads_per_block": self.config.threads_per_block,
            "registers_per_thread": self.config.regs_per_thread,
            "static_smem_bytes": self.config.static_smem,
            "dynamic_smem_bytes": self.config.dynamic_smem,
            "optin": self.optin,
            "carveout_pct": self.config.carveout_pct,
            "warps_per_block": self.warps_per_block,
            "active_blocks_per_sm": self.active_blocks,
            "active_warps_per_sm": self.active_warps,
            "max_warps_per_sm": self.max_warps,
            "occupancy_pct": self.occupancy_pct,
            "limiters": list(self.limiters),
            "limiter_mask": f"0x{self.limiter_mask:02x}",
            "limits": {k: (None if v == UNLIMITED else v) for k, v in self.limits().items()},
            "alloc_regs_per_block": self.alloc_regs_per_block,
            "alloc_smem_per_block": self.alloc_smem_per_block,
            "smem_per_sm_config": self.smem_per_sm_config,
        }


def validate(lim: ArchLimits, cfg: LaunchConfig) -> None:
    """Reject configurations no kernel can be launched with.

    Shared memory above the architecture's opt-in limit is not rejected: such a block fits no
    SM, and the calculator answers as ``cuda_occupancy.h`` does (0 blocks, limiter shared
    memory).

    Raises:
        UsageError: block size outside 1…max threads per block, registers outside 0…255,
            negative shared memory, static shared memory above 48 KiB, shared memory above
            48 KiB for a kernel that explicitly did not opt in, carveout outside −1…100.
    """
    t = cfg.threads_per_block
    if t < 1 or t > lim.max_threads_per_block:
        raise UsageError(
            f"impossible block size {t}: must be 1..{lim.max_threads_per_block} threads"
        )
    if cfg.regs_per_thread < 0 or cfg.regs_per_thread > lim.max_regs_per_thread:
        raise UsageError(
            f"impossible register count {cfg.regs_per_thread}: "
            f"must be 0..{lim.max_regs_per_thread} per thread"
        )
    if cfg.static_smem < 0 or cfg.dynamic_smem < 0:
        raise UsageError("shared memory per block cannot be negative")
    if cfg.static_smem > lim.smem_per_block:
        raise UsageError(
            f"static shared memory {cfg.static_smem} B exceeds the {lim.smem_per_block} B "
            "static limit per block (use dynamic shared memory above it)"
        )
    if cfg.optin is False and cfg.smem > lim.smem_per_block:
        raise UsageError(
            f"shared memory {cfg.smem} B per block exceeds {lim.smem_per_block} B "
            "without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)"
        )
    if not (cfg.carveout_pct == -1 or 0 <= cfg.carveout_pct <= 100):
        raise UsageError(f"carveout {cfg.carveout_pct} %: must be -1 (default) or 0..100")
    if cfg.barriers_per_block < 0:
        raise UsageError("barriers per block cannot be negative")


def _smem_per_sm_config(lim: ArchLimits, per_block: int, carveout_pct: int) -> int:
    legal = lim.legal_carveouts()
    want = lim.smem_per_sm if carveout_pct == -1 else carveout_pct * lim.smem_per_sm // 100
    size = next((c for c in legal if c >= want), legal[-1])
    if per_block > size:  # the driver picks the smallest carveout that fits one block
        size = next((c for c in legal if c >= per_block), legal[-1])
    return size


@lru_cache(maxsize=65_536)
def occupancy(lim: ArchLimits, cfg: LaunchConfig) -> OccupancyResult:
    """Theoretical occupancy of *cfg* on *lim* (see the module docstring).  A block that fits
    no SM gives 0 active blocks with the resource that does not fit as limiter.

    Raises:
        UsageError: an impossible configuration (:func:`validate`).
    """
    validate(lim, cfg)
    warps = _ceil_div(cfg.threads_per_block, lim.warp_size)
    max_warps = lim.max_warps_per_sm

    limit_warps = max_warps // warps

    regs = cfg.regs_per_thread
    if regs == 0:
        limit_regs = UNLIMITED
        alloc_regs = 0
    else:
        regs_per_warp = _round_up(regs * lim.warp_size, lim.reg_alloc_unit)
        alloc_regs = regs_per_warp * warps
        sp = lim.sub_partitions
        if (
            lim.regs_per_block < regs_per_warp * _round_up(warps, sp)
            or lim.regs_per_block < alloc_regs
        ):
            limit_regs = 0
        else:
            per_sub = (lim.regs_per_sm // sp) // regs_per_warp
            limit_regs = (sp * per_sub) // warps

    limit_blocks = lim.max_blocks_per_sm

    optin = cfg.optin if cfg.optin is not None else cfg.smem > lim.smem_per_block
    per_block = _round_up(cfg.smem + lim.reserved_smem_per_block, lim.smem_alloc_unit)
    per_block_limit = lim.smem_per_block_optin if optin else lim.smem_per_block
    smem_sm = _smem_per_sm_config(lim, per_block, cfg.carveout_pct)
    if per_block == 0:
        limit_smem = UNLIMITED
    elif per_block > per_block_limit + lim.reserved_smem_per_block:
        limit_smem = 0
    else:
        limit_smem = smem_sm // per_block

    if lim.barrier_slots_per_block_limit and cfg.barriers_per_block > 0:
        slots = lim.barrier_slots_per_block_limit * lim.max_blocks_per_sm
        limit_barriers = slots // cfg.barriers_per_block
    else:
        limit_barriers = UNLIMITED

    limits = {
        "warps": limit_warps,
        "registers": limit_regs,
        "shared_memory": limit_smem,
        "blocks": limit_blocks,
        "barriers": limit_barriers,
    }
    active = min(limits.values())
    limiters = tuple(k for k, v in limits.items() if v == active)
    mask = 0
    for k in limiters:
        mask |= LIMITER_BITS[k]
    active_warps = active * warps
    return OccupancyResult(
        arch=lim.arch,
        config=cfg,
        warps_per_block=warps,
        active_blocks=active,
        active_warps=active_warps,
        max_warps=max_warps,
        occupancy_pct=100.0 * active_warps / max_warps,
        limit_warps=limit_warps,
        limit_registers=limit_regs,
        limit_shared_memory=limit_smem,
        limit_blocks=limit_blocks,
        limit_barriers=limit_barriers,
        limiter_mask=mask,
        limiters=limiters,
        alloc_regs_per_block=alloc_regs,
        alloc_smem_per_block=per_block,
        smem_per_sm_config=smem_sm,
        optin=optin,
    )


# --- what-if ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Curve:
    """Occupancy against one varied quantity, every other input held fixed."""

    varied: str
    """``threads_per_block`` | ``registers_per_thread`` | ``smem_per_block``."""
    values: tuple[int, ...]
    occupancy_pct: tuple[float, ...]


@dataclass(frozen=True)
class Suggestion:
    """The smallest change of one input that raises occupancy, and the best along that axis."""

    change: str
    current: int
    to: int
    """Nearest value (to the current one) with a strictly higher occupancy."""
    occupancy_pct: float
    best: int
    """Value closest to the current one that reaches the highest occupancy along the axis."""
    best_occupancy_pct: float

    def text(self) -> str:
        what = {
            "threads_per_block": "block size",
            "registers_per_thread": "registers per thread",
            "smem_per_block": "shared memory per block (bytes)",
        }[self.change]
        s = f"{what} {self.current} → {self.to}: {self.occupancy_pct:.2f} %"
        if self.best != self.to:
            s += f" (→ {self.best}: {self.best_occupancy_pct:.2f} %)"
        return s


@dataclass(frozen=True)
class WhatIf:
    """Occupancy curves around a configuration and the changes that would raise it."""

    base: OccupancyResult
    curves: tuple[Curve, ...]
    suggestions: tuple[Suggestion, ...]
    """Ordered: changes of the limiting resource(s) first."""


def _try(lim: ArchLimits, cfg: LaunchConfig) -> float | None:
    try:
        return occupancy(lim, cfg).occupancy_pct
    except UsageError:
        return None


def _curve(
    lim: ArchLimits, varied: str, values: list[int], make: Callable[[int], LaunchConfig]
) -> Curve:
    xs: list[int] = []
    ys: list[float] = []
    for v in values:
        occ = _try(lim, make(v))
        if occ is not None:
            xs.append(v)
            ys.append(occ)
    return Curve(varied, tuple(xs), tuple(ys))


def _suggest(curve: Curve, current: int, base_pct: float) -> Suggestion | None:
    better = [
        (x, y) for x, y in zip(curve.values, curve.occupancy_pct, strict=True) if y > base_pct
    ]
    if not better:
        return None
    nearest = min(better, key=lambda p: (abs(p[0] - current), -p[1]))
    top = max(y for _, y in better)
    best = min((p for p in better if p[1] == top), key=lambda p: abs(p[0] - current))
    return Suggestion(curve.varied, current, nearest[0], nearest[1], best[0], best[1])


def _axes(lim: ArchLimits, cfg: LaunchConfig, smem_step: int) -> dict[str, Callable[[], Curve]]:
    """The three what-if curves around *cfg*, each computed when called, in curve order."""

    def with_threads(t: int) -> LaunchConfig:
        return replace(cfg, threads_per_block=t)

    def with_regs(r: int) -> LaunchConfig:
        return replace(cfg, regs_per_thread=r)

    def with_smem(total: int) -> LaunchConfig:
        static = min(cfg.static_smem, total)
        return replace(cfg, static_smem=static, dynamic_smem=total - static, optin=None)

    ws = lim.warp_size
    threads = sorted({*range(ws, lim.max_threads_per_block + 1, ws), cfg.threads_per_block})
    regs = list(range(1, lim.max_regs_per_thread + 1))
    smem = sorted({*range(0, lim.smem_per_block_optin + 1, smem_step), cfg.smem})
    return {
        "threads_per_block": lambda: _curve(lim, "threads_per_block", threads, with_threads),
        "registers_per_thread": lambda: _curve(lim, "registers_per_thread", regs, with_regs),
        "smem_per_block": lambda: _curve(lim, "smem_per_block", smem, with_smem),
    }


_AXIS_OF = {
    "warps": "threads_per_block",
    "blocks": "threads_per_block",
    "registers": "registers_per_thread",
    "shared_memory": "smem_per_block",
    "barriers": "threads_per_block",
}
"""The input whose change moves each limiter."""


def _suggestion_axes(base: OccupancyResult, cfg: LaunchConfig) -> list[str]:
    """The axes to suggest along, in order: the limiting resource(s)' first, then the rest in
    curve order; registers only when known."""
    order = [_AXIS_OF[k] for k in base.limiters]
    order += [a for a in ("threads_per_block", "registers_per_thread", "smem_per_block")]
    return [
        a
        for a in dict.fromkeys(order)
        if not (a == "registers_per_thread" and cfg.regs_per_thread == 0)
    ]


def _current(cfg: LaunchConfig, axis: str) -> int:
    return {
        "threads_per_block": cfg.threads_per_block,
        "registers_per_thread": cfg.regs_per_thread,
        "smem_per_block": cfg.smem,
    }[axis]


def what_if(lim: ArchLimits, cfg: LaunchConfig, smem_step: int = KIB) -> WhatIf:
    """Occupancy curves against block size (multiples of the warp size), registers per
    thread (1…255) and shared memory per block (dynamic part varied in *smem_step* steps up
    to the opt-in limit), each with the other inputs held at *cfg*; plus a suggestion per axis.

    Raises:
        UsageError: *cfg* itself is impossible.
    """
    base = occupancy(lim, cfg)
    curves = {axis: make() for axis, make in _axes(lim, cfg, smem_step).items()}
    suggestions = []
    for axis in _suggestion_axes(base, cfg):
        s = _suggest(curves[axis], _current(cfg, axis), base.occupancy_pct)
        if s is not None:
            suggestions.append(s)
    return WhatIf(base, tuple(curves.values()), tuple(suggestions))


@lru_cache(maxsize=4096)
def first_suggestion(lim: ArchLimits, cfg: LaunchConfig, smem_step: int = KIB) -> Suggestion | None:
    """``what_if(lim, cfg, smem_step).suggestions[0]`` (None when there is none), computing
    only the curves up to the first axis that gives one; remembered per (limits, launch
    configuration): a run's ranks launch the same kernels.

    Raises:
        UsageError: *cfg* itself is impossible.
    """
    base = occupancy(lim, cfg)
    axes = _axes(lim, cfg, smem_step)
    for axis in _suggestion_axes(base, cfg):
        s = _suggest(axes[axis](), _current(cfg, axis), base.occupancy_pct)
        if s is not None:
            return s
    return None
