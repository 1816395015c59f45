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
    else from the GPU peak table (:mod:`analyzers.gpu_peaks`) when a GPU is named.

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

from types import MappingProxyType

import pandas as pd  # type: ignore[import-untyped]

from analyzers.gpu_peaks import GpuPeaks
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
)

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
    "RooflinePoint",
    "merge_ceilings",
    "ncu_point",
    "ncu_roofline",
    "op_roofline",
    "rank_points",
    "table_ceilings",
]


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
