"""``gpuscope analyze``: load traces, print the foundation analyses, write the JSON summary.

Heavy modules (pandas via the collectors and analyzers, plotly via the HTML report) are
imported inside the command so that ``gpuscope --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from collectors.errors import UsageError

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
PEAKS_HELP = (
    "A TOML file of GPU peak figures overriding the built-in table (see docs/efficiency.md)."
)


def _check_options(hta_version: str) -> None:
    if hta_version not in HTA_VERSIONS:
        raise UsageError(
            f"--hta-version must be one of {', '.join(HTA_VERSIONS)}, not {hta_version!r}"
        )


def _load(paths: list[str]) -> list[Any]:
    """Load every input with a progress bar on stderr when it is a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from collectors.load import load_traces

    err = Console(stderr=True)
    with Progress(
        TextColumn("loading {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("traces", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        return load_traces(paths, progress=progress)


def run_analyze(
    paths: list[str],
    json_out: Path | None = None,
    all_events: bool = False,
    hta_version: str = "0.6",
    ncu: Path | None = None,
    html: Path | None = None,
    gpu: str | None = None,
    peaks: Path | None = None,
) -> dict[str, Any]:
    """The command's work, callable from Python; returns the summary dict.

    Raises:
        InputError: an input is missing, unreadable, corrupt, or two files claim one rank.
        UsageError: a bad option, or an option whose module is not available.
    """
    _check_options(hta_version)
    from rich.console import Console

    from analyzers.options import AnalysisOptions
    from reports.console import print_summary
    from reports.summary import build_summary, write_summary

    extras: dict[str, Any] = {}
    if ncu is not None:
        from collectors.ncu import read_ncu_csv

        extras["ncu"] = read_ncu_csv(ncu)
    if gpu is not None:
        extras["ncu_gpu"] = gpu
    if peaks is not None:
        from analyzers.gpu_peaks import load_peaks

        extras["gpu_peaks"] = load_peaks(peaks)
    traces = _load(paths)
    options = AnalysisOptions(all_events=all_events, hta_version=hta_version)
    summary = build_summary(traces, options, extras)
    written: list[Path] = []
    if json_out is not None:
        try:
            written.append(write_summary(summary, json_out))
        except OSError as e:
            raise UsageError(f"cannot write the JSON summary: {e.strerror}", path=json_out) from e
    if html is not None:
        from reports.html import write_report

        written.append(write_report(summary, html))
    out = Console(highlight=False)
    print_summary(summary, out)
    for p in written:
        out.print(f"Wrote {p}", markup=False)
    return summary


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
    ) -> None:
        """Analyse traces: kernel summary, GPU time breakdown, communication overlap, steps.

        Prints tables and, with --json, writes the JSON summary.  Numbers are defined in
        docs/metrics.md; the breakdown and overlap reproduce Holistic Trace Analysis (HTA)
        with exact times.
        """
        run_analyze(paths, json_out, all_events, hta_version, ncu, html, gpu, peaks)
