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
    else from the GPU peak table (:mod:`collectors.peak_table`, looked up by
    :mod:`analyzers.gpu_peaks`) when a GPU is named.

* **Op shapes** (:func:`op_roofline`): FLOP and bytes of :mod:`analyzers.op_models` over the
  kernel time of the kernels each op launched, ceilings from the peak table; each point says
  whether its cost is exact or an estimate (``exact``, ``model_note``).

Per point: FLOP/s = FLOP / time; bandwidth = bytes / time; intensity (per level) = total FLOP /
bytes; with the peak FLOP/s ``P`` of the dominant precision and the DRAM peak ``B``: ridge =
``P / B``, attainable = ``min(P, AI_dram × B)``, bound = ``memory`` if ``AI_dram < ridge`` else
``compute``, ``pct_of_attainable = 100 × FLOP/s / attainable`` (for a memory-bound point this
equals achieved ÷ peak DRAM bandwidth; a point with zero FLOP, e.g. a copy, is memory-bound
with that fraction), ``headroom_ns = time × (1 − pct_of_attainable / 100)`` (time that running
at the roof would save).  Points are ranked by headroom, then by time.

``time_share`` of an op point = its time ÷ the trace's GPU time (Σ durations of kernels,
memcpys and memsets; never a share of the modelled time alone); of an ncu point, ÷ the summed
time of the profiled launches.  A point above its roof (``pct_of_attainable`` > 100) is a
**model error** (``model_error`` says so; no headroom): the model over-counts or the peak is
wrong, so it is never counted as achieved.  :class:`RooflineCoverage` gives every derived
headline (achieved TFLOP/s, % of roofline) with the share of GPU time it covers and how much
of that is exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, overload

import msgspec
import pandas as pd

from analyzers.op_models import GPU_TIME
from analyzers.roofline_ncu import (
    FLOP_COUNTERS,
    NCU_BYTES_HELP,
    NCU_FLOP_HELP,
    NCU_TIME_HELP,
    PEAK_FMA,
    TENSOR_PREFIX,
    NcuRoofline,
    ncu_point,
    ncu_roofline,
)
from analyzers.roofline_points import (
    TABLE_PRECISION,
    Ceilings,
    RooflinePoint,
    _frozen,
    merge_ceilings,
    rank_points,
    table_ceilings,
    time_share,
)
from collectors.peak_table import GpuPeaks

__all__ = [
    "FLOP_COUNTERS",
    "NCU_BYTES_HELP",
    "NCU_FLOP_HELP",
    "NCU_TIME_HELP",
    "PEAK_FMA",
    "TABLE_PRECISION",
    "TENSOR_PREFIX",
    "Ceilings",
    "NcuRoofline",
    "OpRoofline",
    "RooflineCoverage",
    "RooflinePoint",
    "merge_ceilings",
    "ncu_point",
    "ncu_roofline",
    "op_roofline",
    "rank_points",
    "roofline_coverage",
    "table_ceilings",
]


OP_TIME_SOURCE = "sum of the durations of the kernels the op launched"


@dataclass(frozen=True)
class RooflineCoverage:
    """What the derived roofline headlines cover, as time and as a share of the GPU time.

    ``gpu_time_ns``: Σ durations of the trace's kernels, memcpys and memsets.  Over the op
    points (all of them, not a top-N):

    * ``modelled``: every point; ``exact``: those whose cost is exact;
    * ``achieved``: the points achieved TFLOP/s is computed from — a time, a FLOP count, not
      above their roof; ``achieved_flops_per_s`` = Σ FLOP / Σ time over them;
    * ``roofline``: those of ``achieved`` with an attainable rate; ``pct_of_roofline`` =
      100 × Σ FLOP / Σ (attainable × time) over them;
    * ``model_error``: points above their roof (left out of both headlines).

    Each ``*_ns`` has a ``*_share`` = it ÷ ``gpu_time_ns`` (None when the GPU time is unknown).
    """

    gpu_time_ns: int | None
    modelled_ns: int
    exact_ns: int
    achieved_ns: int
    achieved_exact_ns: int
    achieved_flops_per_s: float | None
    roofline_ns: int
    roofline_exact_ns: int
    pct_of_roofline: float | None
    model_errors: int
    model_error_ns: int

    def share(self, ns: int) -> float | None:
        return ns / self.gpu_time_ns if self.gpu_time_ns else None

    def to_dict(self) -> dict[str, object]:
        times = {
            "modelled": self.modelled_ns,
            "exact": self.exact_ns,
            "achieved": self.achieved_ns,
            "achieved_exact": self.achieved_exact_ns,
            "roofline": self.roofline_ns,
            "roofline_exact": self.roofline_exact_ns,
            "model_error": self.model_error_ns,
        }
        out: dict[str, object] = {"gpu_time_ns": self.gpu_time_ns}
        for k, v in times.items():
            out[f"{k}_ns"] = v
            out[f"{k}_share"] = self.share(v)
        out["achieved_flops_per_s"] = self.achieved_flops_per_s
        out["pct_of_roofline"] = self.pct_of_roofline
        out["model_errors"] = self.model_errors
        return out


def roofline_coverage(points: Sequence[RooflinePoint], gpu_time_ns: int | None) -> RooflineCoverage:
    """The :class:`RooflineCoverage` of op *points* against *gpu_time_ns*."""
    modelled = exact = ach = ach_exact = roof = roof_exact = err = errors = 0
    flop = roof_flop = attained = 0.0
    for p in points:
        t = round(p.time_ns or 0)
        modelled += t
        exact += t if p.exact else 0
        if p.model_error is not None:
            errors += 1
            err += t
            continue
        f = p.flop_total
        if not t or f is None:
            continue
        ach += t
        ach_exact += t if p.exact else 0
        flop += f
        a = p.attainable_flops_per_s
        if a is not None and a > 0:
            roof += t
            roof_exact += t if p.exact else 0
            roof_flop += f
            attained += a * t * 1e-9
    return RooflineCoverage(
        gpu_time_ns=gpu_time_ns,
        modelled_ns=modelled,
        exact_ns=exact,
        achieved_ns=ach,
        achieved_exact_ns=ach_exact,
        achieved_flops_per_s=flop / (ach * 1e-9) if ach else None,
        roofline_ns=roof,
        roofline_exact_ns=roof_exact,
        pct_of_roofline=100.0 * roof_flop / attained if attained > 0 else None,
        model_errors=errors,
        model_error_ns=err,
    )


@dataclass(frozen=True)
class OpRoofline(Sequence[RooflinePoint]):
    """The ranked op points (a sequence of them) and their :class:`RooflineCoverage`."""

    points: tuple[RooflinePoint, ...]
    coverage: RooflineCoverage

    @overload
    def __getitem__(self, i: int) -> RooflinePoint: ...

    @overload
    def __getitem__(self, i: slice) -> list[RooflinePoint]: ...

    def __getitem__(self, i: int | slice) -> RooflinePoint | list[RooflinePoint]:
        return list(self.points[i]) if isinstance(i, slice) else self.points[i]

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[RooflinePoint]:
        return iter(self.points)


def _op_key(row: Any) -> str:
    key = f"{row.op} | {row.input_dims}"
    concrete = getattr(row, "concrete_inputs", "") or ""
    try:
        recorded = any(msgspec.json.decode(concrete)) if concrete else False
    except msgspec.DecodeError:
        recorded = bool(concrete)
    return f"{key} | {concrete}" if recorded else key


def op_roofline(
    groups: pd.DataFrame, peaks: GpuPeaks | None, gpu_time_ns: int | None = None
) -> OpRoofline:
    """Roofline points of op groups (:func:`analyzers.op_models.op_groups`), ranked, and their
    coverage of the GPU time.

    Each group's FLOP/bytes/time are sums over its calls; the peak is the table's entry for
    the group's precision (``fp32``, ``fp16_tensor``, ...).  *gpu_time_ns* (default: the
    groups' ``attrs["gpu_time_ns"]``, which :func:`~analyzers.op_models.op_costs` sets) is
    the denominator of every ``time_share``; unknown, the shares are None.
    """
    if gpu_time_ns is None:
        gpu_time_ns = groups.attrs.get(GPU_TIME)
    points = []
    total = gpu_time_ns if gpu_time_ns is not None else 0
    tables: dict[str | None, Ceilings] = {}  # the peak table's ceilings per tensor precision
    row: Any
    for row in groups.itertuples(index=False):
        ceil = Ceilings()
        prec = row.precision
        if peaks is not None:
            tensor = prec if prec and prec.endswith("_tensor") else None
            if tensor not in tables:
                tables[tensor] = table_ceilings(peaks, tensor)
            ceil = tables[tensor]
        flop_key = "tensor" if prec and prec.endswith("_tensor") else (prec or "fp32")
        missing = []
        if peaks is None:
            missing.append("ceilings: the device is not in the GPU peak table")
        if getattr(row, "host_copy", False):
            ceil = Ceilings()
            missing.append("copies to/from host memory: bound by the host link, not DRAM")
        points.append(
            RooflinePoint(
                key=_op_key(row),
                name=row.op,
                time_ns=(t := float(row.kernel_time_ns) if row.kernel_time_ns > 0 else None),
                time_source=OP_TIME_SOURCE,
                flop=_frozen({flop_key: float(row.flops)}),
                bytes=_frozen({"dram": float(row.bytes)}),
                byte_sources=MappingProxyType({"dram": "op model: inputs + output, once"}),
                ceilings=ceil,
                calls=int(row.calls),
                missing=tuple(missing),
                tensor_precision=prec if flop_key == "tensor" else None,
                exact=bool(getattr(row, "exact", False)),
                model_note=str(getattr(row, "note", "") or ""),
                time_share=time_share(t, total),  # as rank_points sets it
            )
        )
    ranked = rank_points(points, total)
    return OpRoofline(tuple(ranked), roofline_coverage(ranked, gpu_time_ns))
