"""The Nsight Compute report as data: one :class:`NcuLaunch` per profiled kernel launch, the
:class:`NcuReport` that holds them.  Reading the CSV export: :mod:`collectors.ncu`; analyses take
these types without importing the reader."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class NcuLaunch:
    """One profiled kernel launch: identification plus its metrics in base units."""

    id: int
    kernel_name: str
    block: tuple[int, int, int] | None
    grid: tuple[int, int, int] | None
    device: int | None
    cc: str | None
    """Compute capability as written, e.g. ``"8.0"``."""
    process_id: int | None
    stream: int | None
    metrics: Mapping[str, float | None]
    """Metric name → value in base units (None = ``n/a`` or unparseable)."""
    units: Mapping[str, str]
    """Metric name → base unit (``byte``, ``ns``, ``cycle/s``, ``%``, ``""``...)."""
    raw: Mapping[str, tuple[str, str]]
    """Metric name → (unit, value) exactly as written, for messages."""

    def get(self, name: str) -> float | None:
        """A metric's value in base units, or None when absent or unavailable."""
        return self.metrics.get(name)


@dataclass(frozen=True)
class NcuReport:
    """A parsed Nsight Compute CSV: launches in file order."""

    path: str
    layout: str
    """``long`` | ``wide``."""
    launches: tuple[NcuLaunch, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    preamble: tuple[str, ...] = field(default_factory=tuple)
    """Lines before the header (application output, ``==PROF==``/``==ERROR==`` messages)."""

    def metric_names(self) -> set[str]:
        return {m for la in self.launches for m in la.metrics}

    def table(self) -> pd.DataFrame:
        """Tidy table: launch_id, kernel, metric, unit, value (base units)."""
        rows = [
            (la.id, la.kernel_name, m, la.units[m], v)
            for la in self.launches
            for m, v in la.metrics.items()
        ]
        return pd.DataFrame(rows, columns=["launch_id", "kernel", "metric", "unit", "value"])
