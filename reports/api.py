"""The Python analysis API, for notebooks: load the traces once, then one call per analysis.

::

    from reports.api import TraceAnalysis

    ta = TraceAnalysis(trace_dir="sample_traces/synthetic_8rank")
    ta.ranks                        # [0, 1, ..., 7]
    ta.kernel_summary(rank=0)       # DataFrame: one row per kernel name
    ta.temporal_breakdown()         # DataFrame: one row per rank (span, idle, compute, ...)
    ta.comm_comp_overlap()          # DataFrame: one row per rank (comm, overlap, exposed, ...)
    ta.idle(rank=0).breakdown       # typed result of analyzers.idle
    ta.skew().collectives           # cross-rank skew per collective
    ta.summary()                    # the document ``gpuscope analyze --json`` writes

Each method calls the analyzer the JSON summary's section calls (:mod:`reports.summary.registry`),
with the same :class:`~analyzers.options.AnalysisOptions` and side inputs, so its numbers are the
summary's numbers; the results are the analyzers' own typed objects and DataFrames (their
definitions: ``docs/metrics.md``, ``docs/idle-and-launch.md``, ``docs/efficiency.md``,
``docs/critical-path.md``, ``docs/inference.md``).  Times are integer nanoseconds.  Reading files
happens here, once, in the constructor (the analyzers never read files).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import Trace

if TYPE_CHECKING:
    from analyzers.comm import ExposedComm
    from analyzers.critical_path.analysis import CriticalPath
    from analyzers.idle import IdleResult
    from analyzers.kernel_occupancy import KernelOccupancy
    from analyzers.launch import LaunchResult
    from analyzers.memory import MemoryResult
    from analyzers.roofline import OpRoofline
    from analyzers.serving import ServingAnalysis
    from analyzers.serving.graphs import Capture
    from analyzers.skew import Skew
    from analyzers.temporal import Overlap, TemporalBreakdown
    from analyzers.window import Window
    from collectors.peak_table import PeakTable

__all__ = ["TraceAnalysis"]


class TraceAnalysis:
    """The traces of one run, loaded once, and every analysis of them.

    Args:
        trace_dir: a folder of traces (Kineto JSON, Nsight Systems exports), or one file.
        paths: files or folders, as ``gpuscope analyze`` takes them (instead of *trace_dir*).
        traces: already loaded traces (instead of either).
        options: the analysis window and thresholds (``gpuscope analyze`` flags); default
            options are the CLI's defaults.
        inputs: side inputs already loaded (an ncu report, a peak table).

    Raises:
        InputError: an input is missing, unreadable or corrupt (the message names it).
        ValueError: none or more than one of *trace_dir*, *paths*, *traces* given.
    """

    def __init__(
        self,
        trace_dir: str | Path | None = None,
        *,
        paths: Sequence[str | Path] | None = None,
        traces: Sequence[Trace] | None = None,
        options: AnalysisOptions | None = None,
        inputs: AnalysisInputs | None = None,
    ) -> None:
        if sum(x is not None for x in (trace_dir, paths, traces)) != 1:
            raise ValueError("give exactly one of trace_dir, paths, traces")
        if traces is None:
            from collectors.load import load_traces

            traces = load_traces([trace_dir] if trace_dir is not None else list(paths or ()))
        self.traces: list[Trace] = sorted(traces, key=lambda t: t.rank)
        self.options = options or AnalysisOptions()
        self.inputs = inputs or AnalysisInputs()

    # ------------------------------------------------------------------------ the traces

    @property
    def ranks(self) -> list[int]:
        """The ranks, ascending."""
        return [t.rank for t in self.traces]

    def trace(self, rank: int | None = None) -> Trace:
        """The trace of *rank* (None: the only rank, or the first).

        Raises:
            KeyError: no trace has that rank.
        """
        if rank is None:
            return self.traces[0]
        for t in self.traces:
            if t.rank == rank:
                return t
        raise KeyError(f"no rank {rank}: the ranks are {self.ranks}")

    def _per_rank(self, fn: Any) -> pd.DataFrame:
        """One row per rank of a dataclass result, with a ``rank`` column first."""
        rows = [{"rank": t.rank, **asdict(fn(t.rank))} for t in self.traces]
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------------ per rank

    def window(self, rank: int | None = None) -> Window:
        """The analysis window: its bounds and the ProfilerSteps in it."""
        from analyzers.window import window

        return window(self.trace(rank), self.options)

    def kernel_summary(self, rank: int | None = None) -> pd.DataFrame:
        """Per kernel name: type, count, total / avg / median / min / max / stddev ns, time %."""
        from analyzers.kernel_summary import kernel_summary

        return kernel_summary(self.trace(rank), self.options)

    def temporal(self, rank: int | None = None) -> TemporalBreakdown:
        """Span, idle, compute and non-compute time of the rank's GPU."""
        from analyzers.temporal import temporal_breakdown

        return temporal_breakdown(self.trace(rank), self.options)

    def overlap(self, rank: int | None = None) -> Overlap:
        """Communication, computation, their overlap and the exposed communication."""
        from analyzers.temporal import overlap

        return overlap(self.trace(rank), self.options)

    def steps(self, rank: int | None = None) -> pd.DataFrame:
        """One row per ProfilerStep of the window: duration, compute, exposed comm, idle."""
        from analyzers.steps import step_breakdown

        return step_breakdown(self.trace(rank), self.options)

    def idle(self, rank: int | None = None) -> IdleResult:
        """GPU idle time by stream and by cause (HTA's idle-time breakdown)."""
        from analyzers.idle import idle_analysis

        return idle_analysis(self.trace(rank), self.options)

    def launch(self, rank: int | None = None) -> LaunchResult:
        """Kernel launch delays and durations, queue lengths."""
        from analyzers.launch import launch_analysis

        return launch_analysis(self.trace(rank), self.options)

    def memory(self, rank: int | None = None) -> MemoryResult:
        """The allocator's memory timeline: peaks per device and per step."""
        from analyzers.memory import memory_analysis

        return memory_analysis(self.trace(rank), self.options)

    def collectives(self, rank: int | None = None) -> pd.DataFrame:
        """Every collective of the rank: type, size, time, algorithm and bus bandwidth."""
        from analyzers.collectives import collectives_table

        return collectives_table(self.trace(rank))

    def collective_summary(self, rank: int | None = None) -> pd.DataFrame:
        """Collectives of the window by (type, size bucket): count, time, median bandwidth."""
        from analyzers.comm import collective_summary

        return collective_summary(self.trace(rank), self.options)

    def comm(self, rank: int | None = None) -> ExposedComm:
        """Exposed communication per collective type and per step."""
        from analyzers.comm import exposed_by_collective

        return exposed_by_collective(self.trace(rank), self.options)

    def occupancy(self, rank: int | None = None) -> KernelOccupancy:
        """Theoretical occupancy per kernel configuration (and ncu's achieved one, if given)."""
        from analyzers.kernel_occupancy import kernel_occupancy

        return kernel_occupancy(self.trace(rank), self.inputs.ncu)

    def op_costs(self, rank: int | None = None) -> pd.DataFrame:
        """FLOP and bytes of every modelled op call, with the GPU time of its kernels."""
        from analyzers.op_models import op_costs

        return op_costs(self.trace(rank))

    def roofline(self, rank: int | None = None) -> OpRoofline | None:
        """Op-shape roofline of the rank's GPU: the ranked points (intensity, achieved FLOP/s,
        ceilings) and their coverage of the GPU time; None when no op is modelled."""
        from analyzers.gpu_peaks import peaks_for_device
        from analyzers.op_models import op_costs, op_groups
        from analyzers.roofline import op_roofline

        t = self.trace(rank)
        costs = op_costs(t)
        if costs.empty:
            return None
        peaks = peaks_for_device(self._peak_table(), t.gpu_device).peaks
        return op_roofline(op_groups(costs), peaks)

    def serving(
        self, rank: int | None = None, captures: Sequence[Trace | Capture] = ()
    ) -> ServingAnalysis:
        """Serving analyses: op categories, graph-replay attribution (through the capture
        traces *captures*), prefill/decode phases, MoE."""
        from analyzers.serving import serving_analysis

        return serving_analysis(self.trace(rank), captures)

    # ------------------------------------------------------------------------ across ranks

    def temporal_breakdown(self) -> pd.DataFrame:
        """:meth:`temporal` of every rank, one row each (HTA's ``get_temporal_breakdown``)."""
        return self._per_rank(self.temporal)

    def comm_comp_overlap(self) -> pd.DataFrame:
        """:meth:`overlap` of every rank, one row each (HTA's ``get_comm_comp_overlap``)."""
        return self._per_rank(self.overlap)

    def skew(self) -> Skew:
        """Cross-rank skew of the matched collectives: late ranks, waits, stragglers."""
        from analyzers.skew import cross_rank_skew

        return cross_rank_skew(self.traces, self.options)

    def critical_path(self, busbw_gbps: float | None = None) -> CriticalPath:
        """The critical path of every step across ranks, its causes and ranked what-ifs."""
        from analyzers.critical_path.analysis import critical_path_analysis

        return critical_path_analysis(self.traces, busbw_gbps)

    def summary(self) -> dict[str, Any]:
        """The JSON summary, exactly as ``gpuscope analyze --json`` writes it for these
        traces, options and side inputs."""
        from reports.summary import build_summary

        return build_summary(self.traces, self.options, self.inputs)

    # ------------------------------------------------------------------------ helpers

    def _peak_table(self) -> PeakTable:
        """The peak table given in the inputs, else the built-in one."""
        if self.inputs.gpu_peaks is not None:
            return self.inputs.gpu_peaks
        from collectors.peaks import load_peaks

        return load_peaks(None)
