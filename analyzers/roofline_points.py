"""Roofline points and their ceilings: the one result shape of both roofline sources
(definitions: :mod:`analyzers.roofline`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

from collectors.peak_table import GpuPeaks

TABLE_PRECISION = {"fp64": "fp64", "fp32": "fp32", "fp16": None}
"""Roofline precision → peak-table precision (the table has no non-tensor FP16 peak)."""


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
    """One kernel launch (ncu) or one op/shape group (op models) on the roofline.

    Immutable (its mappings are read-only views), so the scalar figures derived from it are
    computed once per point (``cached_property``)."""

    key: str
    """ncu launch id, or ``op name | input dims`` (``| concrete inputs`` when recorded) for op
    points."""
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
    """Op points: fraction of the trace's GPU time (Σ kernel, memcpy and memset durations);
    ncu points: fraction of the summed time of the profiled launches."""
    tensor_precision: str | None = None
    exact: bool | None = None
    """Op points: every call's cost is exact (all arguments its model needs were recorded);
    False: an estimate (``model_note`` says why).  None for measured (ncu) points."""
    model_note: str = ""

    @cached_property
    def flop_total(self) -> float | None:
        return sum(self.flop.values()) if self.flop else None

    @cached_property
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

    @cached_property
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

    @cached_property
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

    @cached_property
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

    @cached_property
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
    def above_roof(self) -> bool:
        """Achieved more than the attainable rate (``pct_of_attainable`` > 100)."""
        pct = self.pct_of_attainable
        return pct is not None and pct > 100.0

    @property
    def model_error(self) -> str | None:
        """Why the point cannot be real: above its roof, the FLOP/bytes (op model) or the
        ceiling (a peak below what the hardware did) are wrong.  Such a point is never plotted
        or counted as achieved."""
        if not self.above_roof:
            return None
        what = "the ceiling is too low" if self.exact is None else "the op model over-counts"
        return (
            f"above its roof ({self.pct_of_attainable:.1f} % of attainable): {what} "
            "or the peak table is wrong"
        )

    @cached_property
    def headroom_ns(self) -> float | None:
        """Time running at the roof would save; None above the roof (a model error)."""
        pct = self.pct_of_attainable
        if pct is None or self.time_ns is None or pct > 100.0:
            return None
        return self.time_ns * (1.0 - pct / 100.0)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (NaN/inf become ``null``)."""
        return _clean_dict(
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
                "exact": self.exact,
                "model_note": self.model_note,
                "model_error": self.model_error,
            }
        )


def _clean_dict(d: dict[str, object]) -> dict[str, object]:
    return {k: _clean(v) for k, v in d.items()}


def _clean(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def time_share(time_ns: float | None, total_ns: float) -> float | None:
    """A point's share of the GPU time: its time ÷ *total_ns* (None without either)."""
    return (time_ns / total_ns) if (time_ns and total_ns) else None


def rank_points(
    points: Sequence[RooflinePoint], total_ns: float | None = None
) -> list[RooflinePoint]:
    """Add time shares (of *total_ns*, by default of the points' summed time) and sort: largest
    headroom first, then longest time, then key (points without headroom, model errors
    included, last)."""
    total = total_ns if total_ns is not None else sum(p.time_ns for p in points if p.time_ns)
    shares = [time_share(p.time_ns, total) for p in points]
    shared = [
        p if p.time_share == share else replace(p, time_share=share)
        for p, share in zip(points, shares, strict=True)
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
