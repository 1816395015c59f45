"""``gpuscope report`` (the HTML report) and ``gpuscope export --perfetto`` (a Chrome trace).

Inputs of ``report``: a JSON summary (validated by
:func:`collectors.summary.reader.read_summary`, then rendered as is), a run directory (its
``summary.json`` and, when present, ``gate/result.json`` for the PASS/FAIL banner; without a
summary its traces and NVML counters are summarised first), or trace files/directories (loaded
and summarised first).  Heavy modules are imported inside the commands so that
``gpuscope --help`` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import memory_settings
from cli.captures import GRAPH_CAPTURE_HELP
from cli.inputs import looks_like_summary
from cli.outputs import ForceOpt
from collectors.errors import InputError, UsageError
from collectors.rundir import SUMMARY, TRACES
from collectors.summary.reader import read_summary
from reports.output import check_output

GATE_RESULT = Path("gate", "result.json")

INPUTS_HELP = (
    "A JSON summary (gpuscope analyze --json), a run directory (gpuscope run), or trace files "
    "and directories (Kineto .json/.json.gz, Nsight Systems .sqlite/.nsys-rep)."
)
PLOTLYJS_HELP = (
    "inline (default): plotly.js embedded once, the file opens offline; cdn: a small file that "
    "loads plotly.js from the network."
)
GATE_HELP = "A gate result (gpuscope gate --json) for the PASS/FAIL banner."
PRELAUNCHED_HELP = (
    "Count GPU work launched before the profiler started (no launching call in the trace) in "
    "the per-step figures of traces summarised here (docs/metrics.md §7, §10); a JSON summary "
    "keeps the figures it was written with."
)

EXPORT_HELP = (
    "Trace files and directories, or a run directory (its traces and NVML counters are exported)."
)


def _read_json(path: Path, what: str) -> Any:
    from collectors.files import regular_file

    regular_file(path)  # a FIFO or device would block the read (docs/reliability.md)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", path=path) from e
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"the {what} is not valid JSON: {e}", path=path) from e


def _counters(run: Path) -> dict[str, Any]:
    from collectors.nvml import counter_files, read_run_counters

    return read_run_counters(counter_files(run))


def summarise(
    paths: list[str],
    run_dir: Path | None = None,
    include_prelaunched: bool = False,
    graph_capture: Sequence[Path] = (),
) -> dict[str, Any]:
    """Load traces and build the summary (with the run's NVML counters and metadata, and the
    graph capture traces of :mod:`cli.captures`)."""
    import dataclasses

    from analyzers.options import AnalysisOptions
    from cli.captures import split_graph_captures
    from collectors.load import load_traces
    from reports.summary import build_summary
    from reports.summary.inputs import inputs_from_extras

    extras: dict[str, Any] = {}
    if run_dir is not None:
        extras = {"run_dir": str(run_dir), "nvml": _counters(run_dir)}
    options = AnalysisOptions(include_prelaunched=include_prelaunched)
    paths, captures, _ = split_graph_captures(paths, graph_capture)
    inputs = dataclasses.replace(inputs_from_extras(extras), graph_captures=captures)
    return build_summary(load_traces(paths), options, inputs=inputs)


def resolve_inputs(
    inputs: list[str], include_prelaunched: bool = False, graph_capture: Sequence[Path] = ()
) -> tuple[Mapping[str, Any], dict[str, Any] | None]:
    """(summary, gate result or None) for the ``report`` inputs."""
    pre = include_prelaunched
    if len(inputs) == 1:
        p = Path(inputs[0])
        if p.is_dir() and (p / SUMMARY).is_file():
            gate = (
                _read_json(p / GATE_RESULT, "gate result") if (p / GATE_RESULT).is_file() else None
            )
            return read_summary(p / SUMMARY), gate
        if p.is_dir() and (p / TRACES).is_dir():
            return summarise([str(p / TRACES)], p, pre, graph_capture), None
        if looks_like_summary(p):
            return read_summary(p), None
    return summarise(inputs, None, pre, graph_capture), None


def run_report(
    inputs: list[str],
    out: Path,
    plotlyjs: str = "inline",
    gate: Path | None = None,
    force: bool = False,
    include_prelaunched: bool = False,
    graph_capture: Sequence[Path] = (),
) -> Path:
    """The ``report`` command's work; returns the path written.

    Raises:
        InputError: a missing, unreadable or invalid input.
        UsageError: a bad option, or the output exists without *force*.
    """
    from reports.html import PLOTLYJS_MODES, write_report

    if plotlyjs not in PLOTLYJS_MODES:
        raise UsageError(f"--plotlyjs must be one of {', '.join(PLOTLYJS_MODES)}, not {plotlyjs!r}")
    check_output(out, force=force)
    summary, gate_doc = resolve_inputs(inputs, include_prelaunched, graph_capture)
    if gate is not None:
        gate_doc = _read_json(gate, "gate result")
    return write_report(summary, out, plotlyjs=plotlyjs, gate=gate_doc, force=force)


def run_export(inputs: list[str], out: Path, force: bool = False) -> Path:
    """The ``export --perfetto`` command's work; returns the path written.

    A run directory contributes its traces and its NVML counters.

    Raises:
        InputError: a missing, unreadable or corrupt input.
        UsageError: the output exists without *force*.
    """
    from collectors.load import load_traces
    from reports.perfetto import write_perfetto

    check_output(out, force=force)
    paths: list[str] = []
    nvml: dict[str, Any] = {}
    for raw in inputs:
        p = Path(raw)
        if p.is_dir() and (p / TRACES).is_dir():
            paths.append(str(p / TRACES))
            nvml.update(_counters(p))
        else:
            paths.append(raw)
    return write_perfetto(load_traces(paths), out, nvml or None, force=force)


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``export`` to *app*."""

    @app.command("report")
    def report(
        inputs: Annotated[
            list[str], typer.Argument(metavar="SUMMARY.json|RUN_DIR|TRACE...", help=INPUTS_HELP)
        ],
        out: Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="Report file.")],
        plotlyjs: Annotated[
            str, typer.Option("--plotlyjs", metavar="inline|cdn", help=PLOTLYJS_HELP)
        ] = "inline",
        gate: Annotated[
            Path | None, typer.Option("--gate", metavar="RESULT.json", help=GATE_HELP)
        ] = None,
        force: ForceOpt = False,
        include_prelaunched: Annotated[
            bool, typer.Option("--include-prelaunched", help=PRELAUNCHED_HELP)
        ] = False,
        graph_capture: Annotated[
            list[Path] | None,
            typer.Option("--graph-capture", metavar="FILE", help=GRAPH_CAPTURE_HELP),
        ] = None,
    ) -> None:
        """Write the self-contained HTML report of a run (definitions: docs/report.md)."""
        memory_settings.apply()
        path = run_report(
            inputs, out, plotlyjs, gate, force, include_prelaunched, graph_capture or ()
        )
        typer.echo(f"Wrote {path}")

    @app.command("export")
    def export(
        inputs: Annotated[list[str], typer.Argument(metavar="TRACE...|RUN_DIR", help=EXPORT_HELP)],
        perfetto: Annotated[
            Path,
            typer.Option(
                "--perfetto", metavar="OUT.json", help="Chrome-trace JSON to open in Perfetto."
            ),
        ],
        force: ForceOpt = False,
    ) -> None:
        """Export traces (all ranks, step markers, counters, NVML) as one Chrome trace."""
        memory_settings.apply()
        path = run_export(inputs, perfetto, force)
        typer.echo(f"Wrote {path}  (open it at https://ui.perfetto.dev)")
