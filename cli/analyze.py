"""``gpuscope analyze``'s options for typer; the work is :mod:`cli.analyze_run`'s.

Heavy modules (pandas via the collectors and analyzers, plotly via the HTML report) are
imported inside the command so that ``gpuscope --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli import analyze_run
from cli.captures import GRAPH_CAPTURE_HELP
from cli.outputs import ForceOpt

PATHS_HELP = (
    "Trace files or directories: Kineto / PyTorch-profiler traces (.json, .json.gz; a directory "
    "of per-rank files) or Nsight Systems exports (.sqlite, .nsys-rep).  One rank per file; "
    "ranks come from distributedInfo, else from the file name."
)
JSON_HELP = (
    "Write the JSON summary (schema_version 1: per rank device, window, kernel_summary, "
    "temporal, overlap, steps; times in integer ns) to FILE."
)
ALL_EVENTS_HELP = (
    "Analyse every GPU event.  By default only work launched before the last ProfilerStep "
    "starts is analysed (HTA's window: complete steps only) when the trace has 2 or more "
    "ProfilerSteps."
)
HTA_VERSION_HELP = (
    "HTA rule set for kernel types and step markers: 0.6 (default; HTA 0.6.x) or 0.5 "
    "(HTA 0.5.0, which counts 'Stream Wait Event' as computation and only nccl*Kernel as "
    "communication)."
)
NCU_HELP = (
    "An Nsight Compute CSV export (ncu --csv, details or raw page); its per-kernel metrics are "
    "added to the summary."
)
HTML_HELP = "Also write the self-contained HTML report to FILE."
GPU_HELP = (
    "GPU model whose peaks are the roofline ceilings of the --ncu report (a name from "
    "`gpuscope roofline --list-gpus`); by default the file's own ceilings are used."
)
SCHEDULER_HELP = (
    "Run the per-rank work on an existing Dask distributed cluster (tcp://HOST:PORT).  By "
    "default local worker processes are used, sized from CPUs and available memory."
)
WORKERS_HELP = "Number of local worker processes (default: from CPUs and available memory)."
NO_CACHE_HELP = (
    "Neither read nor write the parsed-trace cache (~/.cache/gpuscope or GPUSCOPE_CACHE_DIR; "
    "see docs/scale.md)."
)
PRELAUNCHED_HELP = (
    "Count GPU work launched before the profiler started (no launching call in the trace) in "
    "the per-step figures; by default it is left out and counted in the trace notes "
    "(docs/metrics.md §7, §10)."
)
PEAKS_HELP = (
    "A TOML file of GPU peak figures overriding the built-in table (see docs/efficiency.md)."
)


def register(app: typer.Typer) -> None:
    """Add ``analyze`` to *app*."""

    @app.command("analyze")
    def analyze(
        paths: Annotated[
            list[str], typer.Argument(metavar="PATH", help=PATHS_HELP, show_default=False)
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", metavar="FILE", help=JSON_HELP)
        ] = None,
        all_events: Annotated[bool, typer.Option("--all-events", help=ALL_EVENTS_HELP)] = False,
        hta_version: Annotated[
            str, typer.Option("--hta-version", metavar="0.6|0.5", help=HTA_VERSION_HELP)
        ] = "0.6",
        ncu: Annotated[
            Path | None, typer.Option("--ncu", metavar="FILE.csv", help=NCU_HELP)
        ] = None,
        html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=HTML_HELP)] = None,
        gpu: Annotated[str | None, typer.Option("--gpu", metavar="NAME", help=GPU_HELP)] = None,
        peaks: Annotated[
            Path | None, typer.Option("--peaks", metavar="FILE.toml", help=PEAKS_HELP)
        ] = None,
        scheduler: Annotated[
            str | None, typer.Option("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)
        ] = None,
        workers: Annotated[
            int | None, typer.Option("--workers", metavar="N", help=WORKERS_HELP)
        ] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
        force: ForceOpt = False,
        include_prelaunched: Annotated[
            bool, typer.Option("--include-prelaunched", help=PRELAUNCHED_HELP)
        ] = False,
        graph_capture: Annotated[
            list[Path] | None,
            typer.Option("--graph-capture", metavar="FILE", help=GRAPH_CAPTURE_HELP),
        ] = None,
    ) -> None:
        """Analyse traces: kernel summary, GPU time breakdown, communication overlap, steps.

        Prints tables and, with --json, writes the JSON summary.  Numbers are defined in
        docs/metrics.md; the breakdown and overlap reproduce Holistic Trace Analysis (HTA)
        with exact times.
        """
        analyze_run.analyze_command(
            paths,
            json_out,
            all_events,
            hta_version,
            ncu,
            html,
            gpu,
            peaks,
            scheduler=scheduler,
            workers=workers,
            no_cache=no_cache,
            force=force,
            include_prelaunched=include_prelaunched,
            graph_capture=graph_capture,
        )
