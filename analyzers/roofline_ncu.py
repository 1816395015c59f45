"""Nsight Compute roofline: the formulas of ``reference/ncu.md`` §2 on the raw counters of
each profiled launch (definitions: :mod:`analyzers.roofline`)."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from analyzers.roofline_points import (
    Ceilings,
    RooflinePoint,
    _frozen,
    merge_ceilings,
    rank_points,
    table_ceilings,
)
from collectors.errors import InputError
from collectors.ncu_report import NcuLaunch, NcuReport
from collectors.peak_table import GpuPeaks

FLOP_COUNTERS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}
"""Per precision: (SASS op, FLOP per thread instruction), ncu.md §2.2."""

PEAK_FMA = {"fp64": ("dfma", 2), "fp32": ("ffma", 2), "fp16": ("hfma", 4)}
"""Per precision: the FMA counter whose ``.peak_sustained`` × FLOP × SM clock is the peak."""

TENSOR_PREFIX = "sm__ops_path_tensor_src_"
NCU_TIME_HELP = (
    "a kernel time (gpu__time_duration.sum, or smsp__cycles_elapsed.avg with "
    "smsp__cycles_elapsed.avg.per_second)"
)
NCU_FLOP_HELP = (
    "FLOP counters (smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum)"
)
NCU_BYTES_HELP = "DRAM bytes (dram__bytes.sum, or dram__bytes_read.sum + dram__bytes_write.sum)"


def _ncu_time(la: NcuLaunch) -> tuple[float | None, str | None]:
    t = la.get("gpu__time_duration.sum")
    if t is not None and t > 0:
        return t, "gpu__time_duration.sum"
    for unit in ("smsp", "sm"):
        cyc = la.get(f"{unit}__cycles_elapsed.avg")
        rate = la.get(f"{unit}__cycles_elapsed.avg.per_second")
        if cyc is not None and rate:
            return cyc / rate * 1e9, f"{unit}__cycles_elapsed.avg / .per_second"
    return None, None


def _ncu_flops(la: NcuLaunch) -> tuple[dict[str, float], dict[str, str], list[str]]:
    flop: dict[str, float] = {}
    missing: list[str] = []
    tensor_src: dict[str, str] = {}
    for prec, ops in FLOP_COUNTERS.items():
        for unit in ("smsp", "sm"):
            names = [f"{unit}__sass_thread_inst_executed_op_{op}_pred_on.sum" for op, _ in ops]
            vals = [la.get(n) for n in names]
            known = [v for v in vals if v is not None]
            if len(known) == len(vals):
                flop[prec] = sum(v * w for v, (_, w) in zip(known, ops, strict=True))
                break
        else:
            present = any(
                la.get(f"{u}__sass_thread_inst_executed_op_{op}_pred_on.sum") is not None
                for u in ("smsp", "sm")
                for op, _ in ops
            )
            if present:
                missing.append(f"{prec}: not all of its add/mul/fma counters are present")
    types = {
        m[len(TENSOR_PREFIX) : -len(".sum")]: v
        for m, v in la.metrics.items()
        if m.startswith(TENSOR_PREFIX) and m.endswith(".sum") and v is not None
    }
    # a type that is a prefix of another present type aggregates it: count the leaves only
    leaves = {t: v for t, v in types.items() if not any(o.startswith(t + "_") for o in types)}
    if leaves:
        flop["tensor"] = sum(leaves.values())
        tensor_src = {"tensor": ", ".join(sorted(leaves))}
    return flop, tensor_src, missing


def _ncu_bytes(la: NcuLaunch) -> tuple[dict[str, float], dict[str, str]]:
    out: dict[str, float] = {}
    src: dict[str, str] = {}

    def one(level: str, name: str, scale: float = 1.0) -> bool:
        v = la.get(name)
        if v is None:
            return False
        out[level] = v * scale
        src[level] = name if scale == 1.0 else f"{name} × {scale:g}"
        return True

    def pair(level: str, a: str, b: str) -> bool:
        va, vb = la.get(a), la.get(b)
        if va is None or vb is None:
            return False
        out[level] = va + vb
        src[level] = f"{a} + {b}"
        return True

    _ = (
        one("dram", "dram__bytes.sum")
        or pair("dram", "dram__bytes_read.sum", "dram__bytes_write.sum")
        or pair("dram", "dram__bytes_op_read.sum", "dram__bytes_op_write.sum")
    )
    _ = one("l2", "lts__t_bytes.sum") or one("l2", "lts__lts2xbar_cycles_active.sum", 32.0)
    _ = (
        one("l1", "l1tex__t_bytes.sum")
        or one("l1", "l1tex__lsu_writeback_active_mem_lgds.sum", 128.0)
        or one("l1", "l1tex__lsu_writeback_active_mem_lg.sum", 128.0)
        or one("l1", "l1tex__lsu_writeback_active.sum", 128.0)
    )
    return out, src


def _ncu_ceilings(la: NcuLaunch, tensor_types: str | None) -> Ceilings:
    flops: dict[str, float] = {}
    bw: dict[str, float] = {}
    sm_clock = la.get("sm__cycles_elapsed.avg.per_second")
    if sm_clock:
        for prec, (op, w) in PEAK_FMA.items():
            peak = la.get(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained")
            if peak is not None:
                flops[prec] = peak * w * sm_clock
        if tensor_types:
            peaks = [
                la.get(f"{TENSOR_PREFIX}{t}.sum.peak_sustained") for t in tensor_types.split(", ")
            ]
            known = [p for p in peaks if p is not None]
            if peaks and len(known) == len(peaks):
                flops["tensor"] = max(known) * sm_clock
    levels = (
        ("dram", "dram__bytes.sum.peak_sustained", 1.0, "dram__cycles_elapsed.avg.per_second"),
        (
            "l2",
            "lts__lts2xbar_cycles_active.sum.peak_sustained",
            32.0,
            "lts__cycles_elapsed.avg.per_second",
        ),
    )
    for level, name, scale, clock in levels:
        v, c = la.get(name), la.get(clock)
        if v is not None and c:
            bw[level] = v * scale * c
    for wb in ("lgds", "lg"):
        v = la.get(f"l1tex__lsu_writeback_active_mem_{wb}.sum.peak_sustained")
        c = la.get("l1tex__cycles_elapsed.avg.per_second")
        if v is not None and c:
            bw["l1"] = v * 128.0 * c
            break
    source = {k: "ncu file" for k in (*flops, *bw)}
    return Ceilings(_frozen(flops), _frozen(bw), MappingProxyType(source))


def ncu_point(la: NcuLaunch, peaks: GpuPeaks | None = None) -> RooflinePoint:
    """The roofline point of one profiled launch (partial where counters are missing)."""
    time_ns, time_src = _ncu_time(la)
    flop, tensor_src, missing = _ncu_flops(la)
    nbytes, byte_src = _ncu_bytes(la)
    if time_ns is None:
        missing.append(f"time: needs {NCU_TIME_HELP}")
    if not flop:
        missing.append(f"FLOP/s and intensity: needs {NCU_FLOP_HELP}")
    if "dram" not in nbytes:
        missing.append(f"DRAM bandwidth and bound: needs {NCU_BYTES_HELP}")
    tensor_prec = _tensor_table_precision(tensor_src.get("tensor"))
    ceilings = _ncu_ceilings(la, tensor_src.get("tensor"))
    if peaks is not None:
        ceilings = merge_ceilings(ceilings, table_ceilings(peaks, tensor_prec))
    return RooflinePoint(
        key=str(la.id),
        name=la.kernel_name,
        time_ns=time_ns,
        time_source=time_src,
        flop=_frozen(flop),
        bytes=_frozen(nbytes),
        byte_sources=MappingProxyType({**byte_src, **tensor_src}),
        ceilings=ceilings,
        achieved_occupancy_pct=la.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
        tensor_instructions=la.get("smsp__inst_executed_pipe_tensor.sum")
        if la.get("smsp__inst_executed_pipe_tensor.sum") is not None
        else la.get("sm__inst_executed_pipe_tensor.sum"),
        missing=tuple(missing),
        tensor_precision=tensor_prec,
    )


def _tensor_table_precision(types: str | None) -> str | None:
    if not types:
        return None
    t = types.split(", ")[0]
    for key, prec in (
        ("fp64", "fp64_tensor"),
        ("tf32", "tf32_tensor"),
        ("fp8", "fp8_tensor"),
        ("bf16", "fp16_tensor"),
        ("fp16", "fp16_tensor"),
    ):
        if t.startswith(key):
            return prec
    return None


@dataclass(frozen=True)
class NcuRoofline:
    """Ranked roofline points of an ncu export, and what the file lacked."""

    path: str
    points: tuple[RooflinePoint, ...]
    missing: tuple[str, ...]
    """Messages that apply to every launch (e.g. no FLOP counters in the file)."""
    peaks_name: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.path,
            "gpu_peaks": self.peaks_name,
            "missing": list(self.missing),
            "kernels": [p.to_dict() for p in self.points],
        }

    def frame(self) -> pd.DataFrame:
        """One row per point with the headline numbers (for tables and tests)."""
        rows = [
            {
                "key": p.key,
                "name": p.name,
                "time_ns": p.time_ns,
                "time_share": p.time_share,
                "flops_per_s": p.flops_per_s_total,
                "dram_bytes_per_s": p.bandwidth.get("dram"),
                "intensity_dram": p.intensity.get("dram"),
                "bound": p.bound,
                "pct_of_attainable": p.pct_of_attainable,
                "headroom_ns": p.headroom_ns,
            }
            for p in self.points
        ]
        return pd.DataFrame(rows)


def ncu_roofline(report: NcuReport, peaks: GpuPeaks | None = None) -> NcuRoofline:
    """Roofline points for every launch of an ncu export, ranked by headroom.

    Raises:
        InputError: no launch has enough counters for any roofline figure (FLOP/s, bandwidth
            or intensity); the message names what is needed.
    """
    points = [ncu_point(la, peaks) for la in report.launches]
    useful = [p for p in points if p.flops_per_s_total is not None or p.bandwidth or p.intensity]
    if not useful:
        raise InputError(
            f"no roofline metrics in this ncu export: needs {NCU_TIME_HELP} and "
            f"{NCU_FLOP_HELP} or {NCU_BYTES_HELP}",
            path=report.path,
        )
    common = set(points[0].missing)
    for p in points[1:]:
        common &= set(p.missing)
    ordered = tuple(m for m in points[0].missing if m in common)
    return NcuRoofline(
        report.path, tuple(rank_points(points)), ordered, peaks.name if peaks else None
    )
