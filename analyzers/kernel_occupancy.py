"""Theoretical occupancy of every traced kernel launch, achieved occupancy beside it, and the
hot kernels that run at low theoretical occupancy.

For each kernel row of ``trace.gpu`` with a launch configuration (``block_*``,
``registers_per_thread`` and shared memory known) the calculator of :mod:`analyzers.occupancy`
runs on the device's limits (:func:`analyzers.arch.limits_for_device`).  Shared memory per block
is ``static + dynamic`` where the source splits it (nsys), else ``shared_mem_bytes`` (Kineto
``shared memory``).  Launches are grouped by (name, block, registers, shared memory):

* ``theoretical_pct``: the calculator's occupancy; ``limiters``: every binding resource;
* ``est_achieved_pct``: CUPTI's ``est. achieved occupancy %`` (Kineto), duration-weighted mean
  over the group's launches that carry it;
* ``ncu_achieved_pct``: mean ``sm__warps_active.avg.pct_of_peak_sustained_active`` of the ncu
  launches with the same kernel name (anonymous-namespace spellings unified) and block size.

A CUPTI estimate of exactly 0 is treated as not measured: Kineto writes
``(int)(0.5 + occupancy·100)`` and its own calculation answers 0 when it cannot place a block
(kernels that opted in to more shared memory, dynamic shared memory: it assumes neither), so a 0
is not an observation; such launches are counted in ``est_achieved_zero_launches`` and a note.

AMD devices (:func:`analyzers.arch.is_amd`) use the CDNA calculator of
:mod:`analyzers.occupancy_cdna` on every kernel with a workgroup size: registers and LDS are
applied where the trace records them (Kineto on ROCm records neither), and a result missing one
of them is an upper bound (``upper_bound``, ``limits_not_applied``); for AMD a *block* is a
workgroup, a *warp* a wavefront and the per-SM figures are per compute unit.

Per rank: ``time_weighted_pct = Σ dur·theoretical / Σ dur`` over the kernels with a
configuration, and ``coverage`` = that kernel time ÷ all kernel time.  Flagged: groups with at
least ``min_time_share`` of the kernel time whose theoretical occupancy is below ``low_pct``,
with the limiter and the nearest change that raises it; NCCL kernels (one block per SM by
design) are not flagged.  Low occupancy is not a defect in
itself (large GEMM tiles trade occupancy for registers); the flag says where to look.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from analyzers.arch import ArchLimits, is_amd, limits_for_device
from analyzers.occupancy import LaunchConfig, OccupancyResult, first_suggestion, occupancy
from analyzers.occupancy_cdna import (
    CdnaLaunch,
    CdnaLimits,
    CdnaOccupancy,
    cdna_limits_for_device,
    cdna_occupancy,
    cdna_suggestion,
)
from collectors.errors import UsageError
from collectors.model import Trace

NCU_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"

_ANON = re.compile(r"\(anonymous namespace\)|<unnamed>|(?<![\w<])unnamed>")


def is_communication_kernel(name: str) -> bool:
    """NCCL kernels run one block per SM by design; they are never flagged."""
    return name.lstrip().startswith(("nccl", "void nccl"))


def normalize_kernel_name(name: str) -> str:
    """Unify anonymous-namespace spellings (CUPTI ``(anonymous namespace)``, ncu
    ``<unnamed>``/``unnamed>``) and surrounding blanks, for joining sources."""
    return _ANON.sub("(anon)", name.strip())


@dataclass(frozen=True)
class Flag:
    """A hot kernel at low theoretical occupancy."""

    name: str
    block: str
    time_share: float
    theoretical_pct: float
    limiters: tuple[str, ...]
    suggestion: str | None


@dataclass(frozen=True)
class KernelOccupancy:
    """Per-kernel theoretical occupancy of one rank (see the module docstring)."""

    arch: str | None
    limits_source: str | None
    groups: pd.DataFrame
    """name, block, threads, registers, smem_bytes, calls, time_ns, time_share,
    theoretical_pct, active_blocks, active_warps, limiters, est_achieved_pct,
    ncu_achieved_pct, ncu_launches, error."""
    time_weighted_pct: float | None
    est_achieved_time_weighted_pct: float | None
    coverage: float | None
    kernels_with_config: int
    kernels: int
    flags: tuple[Flag, ...]
    reason: str | None = None
    """Why nothing was computed (no device properties, unknown architecture...)."""
    upper_bound: bool = False
    """True when a limit could not be applied to some kernel (AMD: registers, LDS)."""
    limits_not_applied: tuple[str, ...] = ()
    est_achieved_zero_launches: int = 0
    """Launches whose CUPTI estimate is 0, left out of the achieved means (not measured)."""
    notes: tuple[str, ...] = ()


def _ncu_achieved(ncu: Any) -> dict[tuple[str, tuple[int, int, int] | None], list[float]]:
    out: dict[tuple[str, tuple[int, int, int] | None], list[float]] = {}
    if ncu is None:
        return out
    for la in getattr(ncu, "launches", ()):
        v = la.get(NCU_ACHIEVED)
        if v is None:
            continue
        name = normalize_kernel_name(la.kernel_name)
        out.setdefault((name, la.block), []).append(v)
        out.setdefault((name, None), []).append(v)
    return out


def _config(row: Any) -> LaunchConfig:
    threads = int(row.block_x) * int(row.block_y) * int(row.block_z)
    if row.static_smem_bytes >= 0 or row.dynamic_smem_bytes >= 0:
        static, dynamic = max(int(row.static_smem_bytes), 0), max(int(row.dynamic_smem_bytes), 0)
    else:
        static, dynamic = 0, max(int(row.shared_mem_bytes), 0)
    return LaunchConfig(threads, int(row.registers_per_thread), static, dynamic)


def _cdna_config(row: Any) -> CdnaLaunch:
    """A ROCm dispatch: workgroup size, and VGPRs / LDS only where the trace recorded them."""
    threads = int(row.block_x) * int(row.block_y) * int(row.block_z)
    regs = int(row.registers_per_thread)
    if row.static_smem_bytes >= 0 or row.dynamic_smem_bytes >= 0:
        lds: int | None = max(int(row.static_smem_bytes), 0) + max(int(row.dynamic_smem_bytes), 0)
    else:
        lds = int(row.shared_mem_bytes) if row.shared_mem_bytes >= 0 else None
    return CdnaLaunch(threads, vgprs=regs if regs >= 0 else None, lds_bytes=lds)


class _KeyRow(NamedTuple):
    """One launch configuration's :data:`KEYS` values, as :func:`_config` reads them."""

    block_x: int
    block_y: int
    block_z: int
    registers_per_thread: int
    static_smem_bytes: int
    dynamic_smem_bytes: int
    shared_mem_bytes: int


KEYS = [
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "shared_mem_bytes",
]
"""Kernel columns that make up a launch configuration (grouping key)."""


def kernel_occupancy(
    trace: Trace,
    ncu: Any = None,
    *,
    arch: str | None = None,
    low_pct: float = 50.0,
    min_time_share: float = 0.01,
    max_flags: int = 10,
) -> KernelOccupancy:
    """Theoretical (and achieved, where recorded) occupancy of *trace*'s kernels.

    *ncu* is an optional :class:`collectors.ncu_report.NcuReport`; *arch* overrides the device's
    compute capability (e.g. for traces without device properties).
    """
    gpu = trace.gpu
    kernels = np.flatnonzero(np.asarray(gpu["kind"] == "kernel", dtype=bool))
    n_kernels = len(kernels)
    device = trace.gpu_device
    amd = device is not None and is_amd(device) and arch is None
    key_cols = np.stack([gpu[c].to_numpy(dtype=np.int64)[kernels] for c in KEYS], axis=1)
    block = key_cols[:, :3]
    regs, static, dynamic, shared = (key_cols[:, i] for i in range(3, 7))
    has_block = (block > 0).all(axis=1)
    if not amd:
        has_block &= (regs >= 0) & ((shared >= 0) | (static >= 0) | (dynamic >= 0))
    configured = kernels[has_block]  # the kernels with a launch configuration
    key_cols = key_cols[has_block]

    def empty(reason: str, lim: ArchLimits | CdnaLimits | None = None) -> KernelOccupancy:
        return KernelOccupancy(
            lim.arch if lim else arch,
            lim.source if lim else None,
            pd.DataFrame(),
            None,
            None,
            None,
            len(configured),
            n_kernels,
            (),
            reason,
        )

    if not len(configured):
        what = (
            "a workgroup size"
            if amd
            else "a launch configuration (block, registers, shared memory)"
        )
        return empty(f"no kernel carries {what}")
    lim: ArchLimits | CdnaLimits
    try:
        if amd:
            assert device is not None
            lim = cdna_limits_for_device(device)
        elif device is not None:
            lim = limits_for_device(device, arch)
        elif arch is not None:
            from analyzers.arch import arch_limits

            lim = arch_limits(arch)
        else:
            return empty("the trace records no device properties (compute capability)")
    except UsageError as err:
        return empty(str(err))

    start, end = gpu["start_ns"].to_numpy(), gpu["end_ns"].to_numpy()
    dur = (end[configured] - start[configured]).astype(np.int64)
    # one code per launch configuration, numbered in order of first appearance
    cfg_code = _config_codes(key_cols)
    first = np.unique(cfg_code, return_index=True)[1]
    uniq_keys = [tuple(int(v) for v in r) for r in key_cols[first].tolist()]
    results: dict[tuple[int, ...], OccupancyResult | CdnaOccupancy | str] = {}
    configs: list[LaunchConfig | CdnaLaunch] = []
    for key in uniq_keys:
        row = _KeyRow(*key)
        try:
            if isinstance(lim, CdnaLimits):
                results[key] = cdna_occupancy(lim, _cdna_config(row))
            else:
                results[key] = occupancy(lim, _config(row))
        except UsageError as err:
            results[key] = str(err)
        configs.append(_cdna_config(row) if isinstance(lim, CdnaLimits) else _config(row))
    occ_u = np.array(
        [r.occupancy_pct if not isinstance(r, str) else np.nan for r in results.values()],
        dtype=float,
    )
    occ = occ_u[cfg_code]
    est = gpu["est_achieved_occupancy"].to_numpy(dtype=float)[configured]

    ok = ~np.isnan(occ)
    all_time = int((end[kernels] - start[kernels]).sum())
    tw = float((dur[ok] * occ[ok]).sum() / dur[ok].sum()) if dur[ok].sum() > 0 else None
    est_zero = int((est == 0).sum())
    est_ok = ~np.isnan(est) & (est != 0)
    est_tw = (
        float((dur[est_ok] * est[est_ok]).sum() / dur[est_ok].sum())
        if dur[est_ok].sum() > 0
        else None
    )
    coverage = float(dur[ok].sum() / all_time) if all_time > 0 else None

    # (name, configuration) groups in order of first appearance; rows without a name drop out
    name_code, names = _names(gpu["name"], configured)
    named = name_code >= 0
    frame = pd.DataFrame(
        {
            "pair": (name_code.astype(np.int64) * len(uniq_keys) + cfg_code)[named],
            "dur": dur[named],
            "est_w": np.where(est_ok, est * dur, 0.0)[named],
            "est_dur": np.where(est_ok, dur, 0)[named],
        }
    )
    agg = frame.groupby("pair", sort=False).agg(
        calls=("dur", "size"),
        time_ns=("dur", "sum"),
        est_w=("est_w", "sum"),
        est_dur=("est_dur", "sum"),
    )
    ncu_map = _ncu_achieved(ncu)
    rows = []
    pair: Any
    for pair, g in agg.iterrows():
        name_i, cfg_i = divmod(int(pair), len(uniq_keys))
        name = names[name_i]
        cfg_key = uniq_keys[cfg_i]
        res = results[cfg_key]
        bx, by, bz = cfg_key[0], cfg_key[1], cfg_key[2]
        nname = normalize_kernel_name(str(name))
        ncu_vals = ncu_map.get((nname, (bx, by, bz))) or ncu_map.get((nname, None)) or []
        is_ok = not isinstance(res, str)
        cfg = configs[cfg_i]
        if isinstance(cfg, CdnaLaunch):
            threads, registers, smem = cfg.threads_per_workgroup, cfg.vgprs, cfg.lds_bytes
        else:
            threads, registers, smem = cfg.threads_per_block, cfg.regs_per_thread, cfg.smem
        row_out: dict[str, Any] = {
            "name": name,
            "block": f"{bx}x{by}x{bz}",
            "threads": threads,
            "registers": registers,
            "smem_bytes": smem,
            "calls": int(g["calls"]),
            "time_ns": int(g["time_ns"]),
            "time_share": float(g["time_ns"] / all_time) if all_time else math.nan,
            "theoretical_pct": res.occupancy_pct if not isinstance(res, str) else math.nan,
            "active_blocks": res.active_blocks if not isinstance(res, str) else -1,
            "active_warps": res.active_warps if not isinstance(res, str) else -1,
            "limiters": ",".join(res.limiters) if not isinstance(res, str) else "",
            "est_achieved_pct": float(g["est_w"] / g["est_dur"]) if g["est_dur"] > 0 else math.nan,
            "ncu_achieved_pct": float(np.mean(ncu_vals)) if ncu_vals else math.nan,
            "ncu_launches": len(ncu_vals),
            "error": "" if is_ok else str(res),
        }
        if isinstance(lim, CdnaLimits):
            cdna = res if isinstance(res, CdnaOccupancy) else None
            row_out["upper_bound"] = cdna.upper_bound if cdna else None
            row_out["limits_not_applied"] = ",".join(cdna.not_applied) if cdna else ""
        row_out["launch_config"] = cfg
        rows.append(row_out)
    groups = pd.DataFrame(rows).sort_values(
        ["time_ns", "name"], ascending=[False, True], kind="stable"
    )
    flags: list[Flag] = []
    r: Any
    for r in groups.itertuples(index=False):
        if len(flags) >= max_flags:
            break
        if (
            not math.isnan(r.theoretical_pct)
            and r.theoretical_pct < low_pct
            and r.time_share >= min_time_share
            and not is_communication_kernel(str(r.name))
        ):
            limiters = tuple(r.limiters.split(","))
            flags.append(
                Flag(
                    str(r.name),
                    r.block,
                    float(r.time_share),
                    float(r.theoretical_pct),
                    limiters,
                    _advice(lim, r.launch_config, limiters, int(r.active_blocks)),
                )
            )
    groups = groups.drop(columns="launch_config").reset_index(drop=True)
    not_applied: tuple[str, ...] = ()
    if isinstance(lim, CdnaLimits):
        seen = {x for v in results.values() if isinstance(v, CdnaOccupancy) for x in v.not_applied}
        not_applied = tuple(x for x in ("vgprs", "sgprs", "lds") if x in seen)
    notes = []
    if not_applied:
        notes.append(
            "the trace does not record "
            + ", ".join({"vgprs": "VGPRs", "sgprs": "SGPRs", "lds": "LDS"}[x] for x in not_applied)
            + " per kernel: occupancy is an upper bound from the wavefront and workgroup limits"
        )
    if est_zero:
        notes.append(
            f"{est_zero} launch(es) with CUPTI est. achieved occupancy 0 % treated as not "
            "measured (Kineto writes 0 when its estimate finds no block)"
        )
    return KernelOccupancy(
        lim.arch,
        lim.source,
        groups,
        tw,
        est_tw,
        coverage,
        len(configured),
        n_kernels,
        tuple(flags),
        upper_bound=bool(not_applied),
        limits_not_applied=not_applied,
        est_achieved_zero_launches=est_zero,
        notes=tuple(notes),
    )


def _config_codes(cols: np.ndarray) -> np.ndarray:
    """One code per distinct row of an integer matrix, numbered in order of first appearance
    (``groupby(columns, sort=False).ngroup()``): the columns' codes as the digits of one
    integer (mixed radix; folded column by column when that integer could overflow)."""
    digits = [np.asarray(pd.factorize(cols[:, j])[0], np.int64) for j in range(cols.shape[1])]
    sizes = [int(d.max(initial=0)) + 1 for d in digits]
    code = np.zeros(len(cols), dtype=np.int64)
    fold = math.prod(sizes) >= 2**62
    for d, size in zip(digits, sizes, strict=True):
        code = code * size + d
        if fold:
            code = np.asarray(pd.factorize(code)[0], np.int64)
    return np.asarray(pd.factorize(code)[0], np.int64)


def _names(col: pd.Series, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of the name column's values at *rows* as objects (codes in order of
    first appearance, -1 for a missing name; the distinct names), from a categorical's codes
    without converting every row."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        codes, uniques = pd.factorize(col.astype(object).to_numpy()[rows])
        return np.asarray(codes), np.asarray(uniques, dtype=object)
    cat = col.cat.codes.to_numpy()[rows].astype(np.int64)
    named = cat >= 0
    out = np.full(len(cat), -1, dtype=np.int64)
    codes, first_cats = pd.factorize(cat[named])  # in order of first appearance
    out[named] = codes
    values = np.asarray(col.cat.categories.astype(object), dtype=object)
    return out, values[np.asarray(first_cats, dtype=np.int64)]


def _advice(
    lim: ArchLimits | CdnaLimits,
    cfg: LaunchConfig | CdnaLaunch,
    limiters: tuple[str, ...],
    active_blocks: int,
) -> str:
    """The flag's suggestion: the nearest change that raises occupancy, or why none does."""
    if isinstance(lim, CdnaLimits) and isinstance(cfg, CdnaLaunch):
        text = cdna_suggestion(lim, cfg)
    elif isinstance(lim, ArchLimits) and isinstance(cfg, LaunchConfig):
        first = first_suggestion(lim, cfg)
        text = first.text() if first is not None else None
    else:  # pragma: no cover - the two pairs above are the only ones built
        text = None
    if text is not None:
        return text
    unit = "a CU" if isinstance(lim, CdnaLimits) else "an SM"
    if active_blocks == 0:
        return f"the block does not fit on {unit}: reduce " + " and ".join(limiters)
    return (
        " and ".join(limiters).replace("_", " ")
        + " bind together: changing one of them alone does not raise occupancy"
    )
