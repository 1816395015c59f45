"""The GPU peak table as data: :class:`GpuPeaks` (one GPU model's peak FLOP/s and bandwidth),
:class:`PeakTable` (all of them), the precisions and keys of an entry.  Loading it from TOML:
:mod:`collectors.peaks`; look-ups (which entry a traced device uses): :mod:`analyzers.gpu_peaks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32_tensor", "fp16_tensor", "fp8_tensor")
"""The roofline precisions, each with a ``<precision>_tflops`` key."""

NUMERIC_KEYS = (
    "sm_count",
    "boost_clock_mhz",
    *(f"{p}_tflops" for p in PRECISIONS),
    "fp32_tensor_tflops",
    "bf16_tensor_tflops",
    "int8_tensor_tops",
    "memory_gib",
    "mem_bw_gbs",
    "nvlink_gbs",
)
"""The numeric keys of a peak-table entry (everything else is text)."""
TEXT_KEYS = ("memory", "l2", "notes", "source", "gfx")
"""The text keys of an entry."""


@dataclass(frozen=True)
class GpuPeaks:
    """Peak figures of one GPU model (None = not published / not applicable)."""

    name: str
    match: tuple[str, ...]
    values: Mapping[str, float]
    """Numeric keys of the TOML entry (``fp32_tflops``, ``mem_bw_gbs``, ...)."""
    text: Mapping[str, str]
    unverified: frozenset[str] = field(default_factory=frozenset)
    origin: str = "built-in"
    """``built-in`` | the user file that set or changed the entry."""

    def peak_flops(self, precision: str) -> float | None:
        """Peak FLOP/s for *precision* (one of :data:`PRECISIONS`), or None."""
        v = self.values.get(f"{precision}_tflops")
        return None if v is None else v * 1e12

    @property
    def mem_bw_bytes_per_s(self) -> float | None:
        v = self.values.get("mem_bw_gbs")
        return None if v is None else v * 1e9

    def is_unverified(self, key: str) -> bool:
        return key in self.unverified

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every key, plus ``unverified`` and ``origin``."""
        out: dict[str, Any] = {"name": self.name, "match": list(self.match)}
        out.update(self.values)
        out.update(self.text)
        out["unverified"] = sorted(self.unverified)
        out["origin"] = self.origin
        return out


@dataclass(frozen=True)
class PeakTable:
    """All known GPUs (look-ups: :mod:`analyzers.gpu_peaks`)."""

    gpus: tuple[GpuPeaks, ...]

    def names(self) -> list[str]:
        return [g.name for g in self.gpus]
