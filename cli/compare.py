"""``gpuscope compare BASE CURRENT``: what changed between two runs (docs/compare.md).

BASE and CURRENT are each a trace file, a directory of per-rank traces, a run directory
(``gpuscope run``: its ``traces/``, else its ``summary.json``) or a JSON summary
(``gpuscope analyze --json``).  Heavy modules are imported inside the command so that
``gpuscope --help`` stays fast.  The comparison always exits 0; bad input exits 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import memory_settings
from cli.captures import GRAPH_CAPTURE_HELP
from cli.inputs import looks_like_summary
from cli.outputs import ForceOpt
from collectors.errors import InputError, UsageError
from collectors.rundir import SUMMARY, TRACES
from reports.output import check_outputs

VIEWS = ("kernel", "op", "category", "collective", "annotation", "step")
PLOTLYJS = ("inline", "cdn")

SIDE_HELP = (
    "A trace (Kineto .json/.json.gz, Nsight Systems .sqlite/.nsys-rep), a directory of per-rank "
    "traces, a run directory (gpuscope run) or a JSON summary (gpuscope analyze --json).  A "
    "summary supports the kernel and step views only."
)
JSON_HELP = "Write the comparison as JSON (times in integer ns; docs/compare.md) to FILE."
HTML_HELP = "Write a self-contained HTML page (waterfall of contributions, top kernels) to FILE."
BY_HELP = (
    "Which view to print and draw: kernel (normalised name), op (name and input shapes; a "
    "graph replay: its capture op), category (op category: GEMM, attention, MoE, ...), "
    "collective (type and message size), annotation (NVTX/user range name) or step (by index)."
)
ALL_EVENTS_HELP = (
    "Compare every step and GPU event instead of the default window (complete steps: work "
    "launched before the last ProfilerStep starts).  Does not change a JSON summary."
)
PRELAUNCHED_HELP = (
    "Count GPU work launched before the profiler started (no launching call in the trace) in "
    "the steps it compares (steps mode); by default it is in no step (docs/metrics.md §7). "
    "Does not change a JSON summary."
)
TOP_HELP = "Entries printed in the console table (the JSON and HTML have more)."
PLOTLYJS_HELP = "inline (default; plotly.js embedded once, opens offline) or cdn."
COMPARE_CAPTURE_HELP = (
    GRAPH_CAPTURE_HELP + "  Given to both sides: each side's replays take the captured graphs "
    "that align with them."
)


def load_side(
    raw: str,
    all_events: bool,
    include_prelaunched: bool = False,
    graph_capture: Sequence[Path] = (),
) -> Any:
    """The :class:`analyzers.compare_sides.Side` of one argument (graph replays attributed
    through its capture traces: *graph_capture* and those beside it, :mod:`cli.captures`).

    Raises:
        InputError: missing, unreadable or corrupt input (the message names the file).
    """
    from analyzers.compare_sides import side_from_summary, side_from_traces
    from analyzers.options import AnalysisOptions
    from cli.captures import split_graph_captures
    from collectors.load import load_traces
    from collectors.summary.reader import read_summary

    p = Path(raw)
    if not p.exists():
        raise InputError("no such file or directory", path=p)
    summary: Path | None = None
    traces: Path = p
    if p.is_dir():
        if (p / TRACES).is_dir():
            traces = p / TRACES
        elif (p / SUMMARY).is_file():
            summary = p / SUMMARY
    elif looks_like_summary(p):
        summary = p
    if summary is not None:
        return side_from_summary(read_summary(summary), str(p))
    options = AnalysisOptions(all_events=all_events, include_prelaunched=include_prelaunched)
    keep, captures, _ = split_graph_captures([str(traces)], graph_capture)
    return side_from_traces(load_traces(keep), str(p), options, captures)


def run_compare(
    base: str,
    current: str,
    json_out: Path | None = None,
    html: Path | None = None,
    by: str = "kernel",
    all_events: bool = False,
    top: int = 20,
    plotlyjs: str = "inline",
    force: bool = False,
    include_prelaunched: bool = False,
    graph_capture: Sequence[Path] = (),
) -> dict[str, Any]:
    """The command's work, callable from Python; returns the JSON document.

    Raises:
        InputError: an input is missing, unreadable or corrupt.
        UsageError: a bad option, or an output that exists without *force* or cannot be
            written.
    """
    if by not in VIEWS:
        raise UsageError(f"--by must be one of {', '.join(VIEWS)}, not {by!r}")
    if plotlyjs not in PLOTLYJS:
        raise UsageError(f"--plotlyjs must be one of {', '.join(PLOTLYJS)}, not {plotlyjs!r}")
    if top < 1:
        raise UsageError(f"--top must be at least 1, not {top}")
    check_outputs([json_out, html], force=force)
    from rich.console import Console

    from analyzers.compare import compare
    from reports.compare_report import comparison_to_dict, print_comparison, write_html, write_json

    sides = (
        load_side(base, all_events, include_prelaunched, graph_capture),
        load_side(current, all_events, include_prelaunched, graph_capture),
    )
    result = compare(*sides)
    if all_events:
        frozen = [n for n, s in zip(("BASE", "CURRENT"), sides, strict=True) if s.aggregated]
        if frozen:
            line = (
                f"--all-events does not change {' and '.join(frozen)}: a JSON summary keeps "
                "the window it was written with"
            )
            result = dataclasses.replace(result, notes=(*result.notes, line))
    doc = comparison_to_dict(result, by)
    written = []
    if json_out is not None:
        written.append(write_json(doc, json_out, force=force))
    if html is not None:
        written.append(write_html(doc, html, by, plotlyjs, force=force))
    out = Console(highlight=False)
    print_comparison(doc, out, by, top)
    for p in written:
        out.print(f"Wrote {p}", markup=False)
    return doc


def register(app: typer.Typer) -> None:
    """Add ``compare`` to *app*."""

    @app.command("compare")
    def compare_cmd(
        base: Annotated[str, typer.Argument(metavar="BASE", help=SIDE_HELP, show_default=False)],
        current: Annotated[
            str, typer.Argument(metavar="CURRENT", help=SIDE_HELP, show_default=False)
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", metavar="FILE", help=JSON_HELP)
        ] = None,
        html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=HTML_HELP)] = None,
        by: Annotated[
            str,
            typer.Option(
                "--by", metavar="kernel|op|category|collective|annotation|step", help=BY_HELP
            ),
        ] = "kernel",
        all_events: Annotated[bool, typer.Option("--all-events", help=ALL_EVENTS_HELP)] = False,
        top: Annotated[int, typer.Option("--top", metavar="N", help=TOP_HELP)] = 20,
        plotlyjs: Annotated[
            str, typer.Option("--plotlyjs", metavar="inline|cdn", help=PLOTLYJS_HELP)
        ] = "inline",
        force: ForceOpt = False,
        include_prelaunched: Annotated[
            bool, typer.Option("--include-prelaunched", help=PRELAUNCHED_HELP)
        ] = False,
        graph_capture: Annotated[
            list[Path] | None,
            typer.Option("--graph-capture", metavar="FILE", help=COMPARE_CAPTURE_HELP),
        ] = None,
    ) -> None:
        """Compare two runs: what got slower, by kernel, op, collective, annotation or step.

        Matches kernels by normalised name, ops by name and input shapes, collectives by type
        and message size, annotations by name and steps by index; each entry's change in time
        is its contribution to the change in step time, and the contributions plus an explicit
        'other' remainder add up to that change exactly.  Definitions: docs/compare.md.
        """
        memory_settings.apply()
        run_compare(
            base,
            current,
            json_out,
            html,
            by,
            all_events,
            top,
            plotlyjs,
            force,
            include_prelaunched,
            graph_capture or (),
        )
