"""Roofline: achieved FLOP/s and bytes per kernel, arithmetic intensity, ceilings, bound.

Two sources, one result shape (:class:`RooflinePoint`):

* **Nsight Compute** (:func:`ncu_roofline`), formulas of ``reference/ncu.md`` §2 on the raw
  counters of each launch:

  - time = ``gpu__time_duration.sum``, else ``smsp__cycles_elapsed.avg /
    smsp__cycles_elapsed.avg.per_second`` (or the ``sm__`` pair);
  - FLOP: fp64 = ``dadd + dmul + 2·dfma``, fp32 = ``fadd + fmul + 2·ffma``, fp16 =
    ``2·hadd + 2·hmul + 4·hfma`` (``smsp__sass_thread_inst_executed_op_<x>_pred_on.sum``, or the
    ``sm__`` variants), tensor = ``sm__ops_path_tensor_src_<type>.sum``; a precision is
    computed only when all its counters are present (never guessed);
  - bytes: DRAM = ``dram__bytes.sum`` (else read + write, else ``op_read + op_write``), L2 =
    ``lts__t_bytes.sum`` or ``lts__lts2xbar_cycles_active.sum × 32``, L1 =
    ``l1tex__t_bytes.sum`` or ``l1tex__lsu_writeback_active_mem_lg[ds].sum × 128``;
  - ceilings from the same file when it carries the ``.peak_sustained`` metrics (§2.1, §2.3),
    else from the GPU peak table (:mod:`collectors.peaks`, looked up by
    :mod:`analyzers.gpu_peaks`) when a GPU is named.

* **Op shapes** (:func:`op_roofline`): FLOP and bytes of :mod:`analyzers.op_models` over the
  kernel time of the kernels each op launched, ceilings from the peak table.

Per point: FLOP/s = FLOP / time; bandwidth = bytes / time; intensity (per level) = total FLOP /
bytes; with the peak FLOP/s ``P`` of the dominant precision and the DRAM peak ``B``: ridge =
``P / B``, attainable = ``min(P, AI_dram × B)``, bound = ``memory`` if ``AI_dram < ridge`` else
``compute``, ``pct_of_attainable = 100 × FLOP/s / attainable`` (for a memory-bound point this
equals achieved ÷ peak DRAM bandwidth; a point with zero FLOP, e.g. a copy, is memory-bound
with that fraction), ``headroom_ns = time × (1 − pct_of_attainable / 100)`` (time that running
at the roof would save).  Points are ranked by headroom, then by time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import pandas as pd

from collectors.errors import InputError
from collectors.ncu import NcuLaunch, NcuReport
from collectors.peaks import GpuPeaks

FLOP_COUNTERS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}
"""Per precision: (SASS op, FLOP per thread instruction), ncu.md §2.2."""

PEAK_FMA = {"fp64": ("dfma", 2), "fp32": ("ffma", 2), "fp16": ("hfma", 4)}
"""Per precision: the FMA counter whose ``.peak_sustained`` × FLOP × SM clock is the peak."""

TENSOR_PREFIX = "sm__ops_path_tensor_src_"
TABLE_PRECISION = {"fp64": "fp64", "fp32": "fp32", "fp16": None}
"""Roofline precision → peak-table precision (the table has no non-tensor FP16 peak)."""

NCU_TIME_HELP = (
    "a kernel time (gpu__time_duration.sum, or smsp__cycles_elapsed.avg with "
    "smsp__cycles_elapsed.avg.per_second)"
)
NCU_FLOP_HELP = (
    "FLOP counters (smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum)"
)
NCU_BYTES_HELP = "DRAM bytes (dram__bytes.sum, or dram__bytes_read.sum + dram__bytes_write.sum)"


def _frozen(d: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Ceilings:
    """Peak FLOP/s per precision and peak bandwidth per memory level, with their sources."""

    flops: Mapping[str, float] = field(default_factory=dict)
    bandwidth: Mapping[str, float] = field(default_factory=dict)
    source: Mapping[str, str] = field(default_factory=dict)
    """Key (``fp32``, ``dram``, ...) → ``ncu file`` | ``table: <GPU>`` | ``calibration``."""
    unverified: frozenset[str] = frozenset()
    """Keys whose figure is marked [unverified] in the peak table."""

    def to_dict(self) -> dict[str, object]:
        return {
            "flops_per_s": dict(self.flops),
            "bytes_per_s": dict(self.bandwidth),
            "source": dict(self.source),
            "unverified": sorted(self.unverified),
        }


def table_ceilings(peaks: GpuPeaks, tensor_precision: str | None = None) -> Ceilings:
    """Ceilings from a peak-table entry; ``tensor`` uses *tensor_precision* (e.g.
    ``fp16_tensor``) when given."""
    flops: dict[str, float] = {}
    source: dict[str, str] = {}
    unverified: set[str] = set()
    wanted = dict(TABLE_PRECISION)
    if tensor_precision:
        wanted["tensor"] = tensor_precision
    for prec, key in wanted.items():
        if key is None:
            continue
        v = peaks.peak_flops(key)
        if v is not None:
            flops[prec] = v
            source[prec] = f"table: {peaks.name} ({key})"
            if peaks.is_unverified(f"{key}_tflops"):
                unverified.add(prec)
    bw: dict[str, float] = {}
    if peaks.mem_bw_bytes_per_s is not None:
        bw["dram"] = peaks.mem_bw_bytes_per_s
        source["dram"] = f"table: {peaks.name}"
        if peaks.is_unverified("mem_bw_gbs"):
            unverified.add("dram")
    return Ceilings(_frozen(flops), _frozen(bw), MappingProxyType(source), frozenset(unverified))


def merge_ceilings(first: Ceilings, then: Ceilings | None) -> Ceilings:
    """Every key of *first*, completed by the keys only *then* has."""
    if then is None:
        return first
    flops = {**then.flops, **first.flops}
    bw = {**then.bandwidth, **first.bandwidth}
    src = {**then.source, **first.source}
    unv = {k for k in then.unverified if k not in first.source} | set(first.unverified)
    return Ceilings(_frozen(flops), _frozen(bw), MappingProxyType(src), frozenset(unv))


@dataclass(frozen=True)
class RooflinePoint:
    """One kernel launch (ncu) or one op/shape group (op models) on the roofline."""

    key: str
    """ncu launch id, or ``op name | input dims`` for op points."""
    name: str
    time_ns: float | None
    time_source: str | None
    flop: Mapping[str, float]
    """Precision → FLOP (only precisions whose counters are all present)."""
    bytes: Mapping[str, float]
    """Level (``dram``, ``l2``, ``l1``) → bytes."""
    byte_sources: Mapping[str, str] = field(default_factory=dict)
    ceilings: Ceilings = field(default_factory=Ceilings)
    calls: int = 1
    achieved_occupancy_pct: float | None = None
    tensor_instructions: float | None = None
    """``smsp__inst_executed_pipe_tensor.sum`` (instructions, not FLOP; ncu.md §2.1)."""
    missing: tuple[str, ...] = ()
    """What could not be computed, and why (partial points)."""
    time_share: float | None = None
    """Fraction of the summed time of all points."""
    tensor_precision: str | None = None

    @property
    def flop_total(self) -> float | None:
        return sum(self.flop.values()) if self.flop else None

    @property
    def dominant_precision(self) -> str | None:
        if not self.flop:
            return None
        return max(self.flop, key=lambda k: (self.flop[k], k))

    def _per_s(self, amount: float | None) -> float | None:
        if amount is None or not self.time_ns:
            return None
        return amount / (self.time_ns * 1e-9)

    @property
    def flops_per_s(self) -> dict[str, float]:
        return {k: v / (self.time_ns * 1e-9) for k, v in self.flop.items()} if self.time_ns else {}

    @property
    def flops_per_s_total(self) -> float | None:
        return self._per_s(self.flop_total)

    @property
    def bandwidth(self) -> dict[str, float]:
        return {k: v / (self.time_ns * 1e-9) for k, v in self.bytes.items()} if self.time_ns else {}

    @property
    def intensity(self) -> dict[str, float]:
        """FLOP per byte at each memory level (total FLOP over that level's bytes)."""
        total = self.flop_total
        if total is None:
            return {}
        return {k: total / v for k, v in self.bytes.items() if v > 0}

    @property
    def peak_flops(self) -> float | None:
        dom = self.dominant_precision
        return None if dom is None else self.ceilings.flops.get(dom)

    @property
    def peak_bandwidth(self) -> float | None:
        return self.ceilings.bandwidth.get("dram")

    @property
    def ridge(self) -> float | None:
        p, b = self.peak_flops, self.peak_bandwidth
        return None if p is None or not b else p / b

    @property
    def attainable_flops_per_s(self) -> float | None:
        p, b = self.peak_flops, self.peak_bandwidth
        ai = self.intensity.get("dram")
        if p is None or b is None or ai is None:
            return None
        return min(p, ai * b)

    @property
    def _moves_only(self) -> bool:
        """FLOP counted and zero (copies, fills) while DRAM bytes moved."""
        return self.flop_total == 0 and self.bytes.get("dram", 0) > 0

    @property
    def bound(self) -> str | None:
        if self._moves_only and self.peak_bandwidth:
            return "memory"
        ai, ridge = self.intensity.get("dram"), self.ridge
        if ai is None or ridge is None:
            return None
        return "memory" if ai < ridge else "compute"

    @property
    def pct_of_attainable(self) -> float | None:
        """Achieved ÷ attainable FLOP/s × 100; for a point without FLOP (a copy) the limit of
        the memory roof, i.e. the fraction of peak DRAM bandwidth."""
        if self._moves_only:
            return self.pct_of_peak_bandwidth
        a, f = self.attainable_flops_per_s, self.flops_per_s_total
        return None if a is None or f is None or a <= 0 else 100.0 * f / a

    @property
    def pct_of_peak_bandwidth(self) -> float | None:
        bw, peak = self.bandwidth.get("dram"), self.peak_bandwidth
        return None if bw is None or not peak else 100.0 * bw / peak

    @property
    def headroom_ns(self) -> float | None:
        pct = self.pct_of_attainable
        if pct is None or self.time_ns is None:
            return None
        return self.time_ns * max(0.0, 1.0 - pct / 100.0)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (NaN/inf become ``null``)."""
        return _clean(
            {
                "key": self.key,
                "name": self.name,
                "calls": self.calls,
                # ncu derives times from cycles / clock rate: the JSON's *_ns are integers
                "time_ns": None if self.time_ns is None else round(self.time_ns),
                "time_source": self.time_source,
                "time_share": self.time_share,
                "flop": dict(self.flop),
                "flop_total": self.flop_total,
                "flops_per_s": self.flops_per_s,
                "flops_per_s_total": self.flops_per_s_total,
                "dominant_precision": self.dominant_precision,
                "tensor_precision": self.tensor_precision,
                "bytes": dict(self.bytes),
                "byte_sources": dict(self.byte_sources),
                "bytes_per_s": self.bandwidth,
                "intensity_flop_per_byte": self.intensity,
                "ceilings": self.ceilings.to_dict(),
                "ridge_flop_per_byte": self.ridge,
                "attainable_flops_per_s": self.attainable_flops_per_s,
                "bound": self.bound,
                "pct_of_attainable": self.pct_of_attainable,
                "pct_of_peak_bandwidth": self.pct_of_peak_bandwidth,
                "headroom_ns": None if self.headroom_ns is None else round(self.headroom_ns),
                "achieved_occupancy_pct": self.achieved_occupancy_pct,
                "tensor_instructions": self.tensor_instructions,
                "missing": list(self.missing),
            }
        )


def _clean(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def rank_points(points: Sequence[RooflinePoint]) -> list[RooflinePoint]:
    """Add time shares and sort: largest headroom first, then longest time, then key."""
    total = sum(p.time_ns for p in points if p.time_ns)
    shared = [
        replace(p, time_share=(p.time_ns / total) if (p.time_ns and total) else None)
        for p in points
    ]
    return sorted(
        shared,
        key=lambda p: (
            p.headroom_ns is None,
            -(p.headroom_ns or 0.0),
            -(p.time_ns or 0.0),
            p.key,
        ),
    )


# --- Nsight Compute ----------------------------------------------------------------------------


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
            if all(v is not None for v in vals):
                flop[prec] = sum(v * w for v, (_, w) in zip(vals, ops, strict=True))  # type: ignore[operator]
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
            if peaks and all(p is not None for p in peaks):
                flops["tensor"] = max(peaks) * sm_clock  # type: ignore[type-var, operator]
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


# --- op shapes ---------------------------------------------------------------------------------


def op_roofline(groups: pd.DataFrame, peaks: GpuPeaks | None) -> list[RooflinePoint]:
    """Roofline points of op groups (:func:`analyzers.op_models.op_groups`), ranked.

    Each group's FLOP/bytes/time are sums over its calls; the peak is the table's entry for
    the group's precision (``fp32``, ``fp16_tensor``, ...).
    """
    points = []
    for row in groups.itertuples(index=False):
        ceil = Ceilings()
        prec = row.precision
        if peaks is not None:
            tensor = prec if prec and prec.endswith("_tensor") else None
            ceil = table_ceilings(peaks, tensor)
        flop_key = "tensor" if prec and prec.endswith("_tensor") else (prec or "fp32")
        missing = []
        if peaks is None:
            missing.append("ceilings: the device is not in the GPU peak table")
        if getattr(row, "host_copy", False):
            ceil = Ceilings()
            missing.append("copies to/from host memory: bound by the host link, not DRAM")
        points.append(
            RooflinePoint(
                key=f"{row.op} | {row.input_dims}",
                name=row.op,
                time_ns=float(row.kernel_time_ns) if row.kernel_time_ns > 0 else None,
                time_source="sum of the durations of the kernels the op launched",
                flop=_frozen({flop_key: float(row.flops)}),
                bytes=_frozen({"dram": float(row.bytes)}),
                byte_sources=MappingProxyType({"dram": "op model: inputs + output, once"}),
                ceilings=ceil,
                calls=int(row.calls),
                missing=tuple(missing),
                tensor_precision=prec if flop_key == "tensor" else None,
            )
        )
    return rank_points(points)
