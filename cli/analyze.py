"""``gpuscope analyze``: load traces, print the foundation analyses, write the JSON summary.

Heavy modules (pandas via the collectors and analyzers, plotly via the HTML report) are
imported inside the command so that ``gpuscope --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import memory_settings
from cli.captures import GRAPH_CAPTURE_HELP
from cli.early_read import start_read_early
from cli.outputs import ForceOpt
from collectors.errors import UsageError
from reports.output import check_outputs

if TYPE_CHECKING:
    from analyzers.inputs import AnalysisInputs

HTA_VERSIONS = ("0.6", "0.5")

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


def _check_options(hta_version: str) -> None:
    if hta_version not in HTA_VERSIONS:
        raise UsageError(
            f"--hta-version must be one of {', '.join(HTA_VERSIONS)}, not {hta_version!r}"
        )


def load_inputs(ncu: Path | None, gpu: str | None, peaks: Path | None) -> AnalysisInputs:
    """The side inputs, each file read once here: the ncu CSV, the peak table (the built-in
    one overridden by *peaks*) and, with an ncu report, the ceilings of the *gpu* named.

    Raises:
        InputError: the ncu CSV or the peak file is missing or invalid.
        UsageError: *gpu* names no known GPU.
    """
    from analyzers.gpu_peaks import peaks_named
    from analyzers.inputs import AnalysisInputs
    from collectors.peaks import load_peaks

    report = None
    if ncu is not None:
        from collectors.ncu import read_ncu_csv

        report = read_ncu_csv(ncu)
    table = load_peaks(peaks)
    ncu_peaks = peaks_named(table, gpu) if report is not None and gpu else None
    return AnalysisInputs(ncu=report, ncu_peaks=ncu_peaks, gpu_peaks=table)


def run_analyze(
    paths: list[str],
    json_out: Path | None = None,
    all_events: bool = False,
    hta_version: str = "0.6",
    ncu: Path | None = None,
    html: Path | None = None,
    gpu: str | None = None,
    peaks: Path | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    no_cache: bool = False,
    force: bool = False,
    include_prelaunched: bool = False,
    graph_capture: list[Path] | None = None,
) -> dict[str, Any]:
    """The command's work, callable from Python; returns the summary dict.

    Raises:
        InputError: an input is missing, unreadable, corrupt, or two files claim one rank.
        UsageError: a bad option, an option whose module is not available, or an output
            that exists without *force* or cannot be written.
    """
    _check_options(hta_version)
    check_outputs([json_out, html], force=force)
    if scheduler is None and workers is None:
        start_read_early(paths)  # a no-op when cli.launch began the read
    import dataclasses

    from rich.console import Console

    from analyzers.options import AnalysisOptions
    from cli import gc_hold
    from cli.captures import split_graph_captures
    from reports.console import print_summary
    from reports.summary import write_summary
    from reports.summary.engine import analyze_paths, progress_bar

    inputs = load_inputs(ncu, gpu, peaks)
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    options = AnalysisOptions(
        all_events=all_events, hta_version=hta_version, include_prelaunched=include_prelaunched
    )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    paths, captures, capture_notes = split_graph_captures(paths, graph_capture or ())
    if captures:
        inputs = dataclasses.replace(inputs, graph_captures=captures)
    for line in capture_notes:
        err.print(f"gpuscope: note: {line}", markup=False)
    gc_hold.release()  # the imports are done (cli.launch held the collector off for them)
    with progress_bar(err) as progress:
        result = analyze_paths(
            paths,
            options,
            inputs,
            scheduler=scheduler,
            workers=workers,
            use_cache=not no_cache,
            progress=progress,
        )
    from collectors.kineto import early

    early.cancel()  # a read the parse cache made useless
    for line in result.cache_notes:  # once: the entry is rebuilt, the next run is quiet
        err.print(f"gpuscope: note: {line}", markup=False)
    # two files claiming one rank make the input set wrong, not one file: no output at all
    conflicts = [e for e in result.errors if e.message.startswith("claims rank ")]
    if conflicts:
        raise conflicts[0].to_exception()
    summary = result.summary
    written: list[Path] = []
    if json_out is not None:
        written.append(write_summary(summary, json_out, force=force))
    if html is not None:
        from reports.html import write_report

        written.append(write_report(summary, html, force=force))
    out = Console(highlight=False)
    print_summary(summary, out)
    for p in written:
        out.print(f"Wrote {p}", markup=False)
    if result.errors:  # the readable inputs were analysed and written; say what was not
        for bad in result.errors:
            err.print(f"gpuscope: error: {bad.line()}", markup=False)
        raise typer.Exit(result.exit_code)
    return summary


def analyze_command(*args: Any, **kwargs: Any) -> None:
    """The command as the command line runs it (typer, or :func:`cli.analyze_args.fast_args`):
    its memory settings, then :func:`run_analyze` with the arguments."""
    memory_settings.apply()
    run_analyze(*args, **kwargs)


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
        analyze_command(
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
