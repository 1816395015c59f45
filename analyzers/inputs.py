"""Side inputs of an analysis that are not traces, already loaded (frozen and typed).

The CLI (or whoever builds a summary) reads each side input once — an Nsight Compute CSV, a GPU
peak file, the NVML counters and ``meta.json`` of a run directory, graph capture traces — and
passes the parsed objects here; sections and analyzers never see a path and never read a
file.  Every field is picklable, so the inputs travel to worker processes and key the
per-rank results cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.serving.graphs import Capture
    from collectors.ncu_report import NcuReport
    from collectors.peak_table import GpuPeaks, PeakTable


@dataclass(frozen=True)
class AnalysisInputs:
    """What the sections read besides the traces (all optional; the default is none)."""

    ncu: NcuReport | None = None
    """A parsed Nsight Compute report (``gpuscope analyze --ncu``): achieved occupancy beside
    the theoretical one, and the ncu roofline of its launches (the same in every rank)."""
    ncu_peaks: GpuPeaks | None = None
    """Ceilings of the ncu roofline (``--gpu NAME``); None: the report's own device."""
    gpu_peaks: PeakTable | None = None
    """The GPU peak table of the op roofline (``--peaks FILE`` merged into the built-in table);
    None: the built-in table."""
    nvml: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """NVML counter samples of a run directory, per host (``collectors.nvml`` counters
    tables), for the ``run`` section's timelines."""
    run_meta: Mapping[str, Any] | None = None
    """The parsed ``meta.json`` of a ``gpuscope run`` directory (``collectors.rundir``), or
    None."""
    graph_captures: Mapping[int, tuple[Capture, ...]] = field(default_factory=dict)
    """CUDA/HIP-graph capture traces (``--graph-capture FILE``, or TraceLens's
    ``capture_traces/execution_details.json`` beside a trace), loaded, by the rank they claim:
    a rank's graph replays are attributed through the captures of its rank
    (docs/inference.md "Graph attribution")."""
