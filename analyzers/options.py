"""Options shared by the analyzers (frozen, so results are a pure function of trace + options)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analyses; defaults are HTA 0.6-compatible with exact times."""

    all_events: bool = False
    """Analyse every event instead of HTA's ProfilerStep window (metrics.md §2)."""
    hta_version: str = "0.6"
    """Kernel-classification rule set: ``"0.6"`` (default) or ``"0.5"`` (metrics.md §3)."""
    consecutive_kernel_delay_ns: int = 30_000
    """Idle gaps shorter than this are ``kernel_wait`` (metrics.md §8)."""
    host_threshold: float = 0.10
    """A step is host-bound when the GPU waits for the CPU more than this share of it."""
    comm_threshold: float = 0.10
    """A step is communication-bound when exposed communication exceeds this share of it."""
    include_prelaunched: bool = False
    """Count GPU work launched before the profiler started (no launching call in the trace)
    in the per-step figures (``--include-prelaunched``; metrics.md §7)."""
