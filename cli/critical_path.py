"""``gpuscope critical-path PATH…``: each step's critical path across ranks, blame by cause, and
the what-ifs ranked by the step time they would recover (docs/critical-path.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli import memory_settings
from cli.outputs import ForceOpt
from collectors.errors import UsageError
from reports.output import check_output, write_atomic

PATHS_HELP = "Trace files or directories (one rank per file), as for `gpuscope analyze`."
JSON_HELP = "Write the critical_path section as JSON to FILE."
BUSBW_HELP = "Also predict the steps with every matched collective at this bus bandwidth (GB/s)."


def run_critical_path(
    paths: list[str],
    json_out: Path | None = None,
    busbw: float | None = None,
    force: bool = False,
) -> dict[str, object] | None:
    """Load *paths*, analyse, print; returns the section (None without ProfilerSteps).

    Raises:
        InputError: an input is missing, unreadable or corrupt.
        UsageError: a bad option, or the JSON file exists without *force* or cannot be written.
    """
    if busbw is not None and not busbw > 0:
        raise UsageError(f"--busbw must be a positive number of GB/s, not {busbw}")
    if json_out is not None:
        check_output(json_out, force=force)
    import msgspec
    from rich.console import Console

    from collectors.load import load_traces
    from reports.critical_path_console import print_critical_path
    from reports.critical_path_section import critical_path_of

    traces = load_traces(paths)
    section = critical_path_of(traces, busbw_gbps=busbw)
    out = Console(highlight=False)
    print_critical_path(section, out)
    if json_out is not None:
        data = msgspec.json.format(msgspec.json.encode(section), indent=1)
        write_atomic(json_out, data, force=force, what="critical-path JSON")
        out.print(f"Wrote {json_out}", markup=False)
    return section


def register(app: typer.Typer) -> None:
    """Add ``critical-path`` to *app*."""

    @app.command("critical-path")
    def critical_path_cmd(
        paths: Annotated[
            list[str], typer.Argument(metavar="PATH", help=PATHS_HELP, show_default=False)
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", metavar="FILE", help=JSON_HELP)
        ] = None,
        busbw: Annotated[
            float | None, typer.Option("--busbw", metavar="GBPS", help=BUSBW_HELP)
        ] = None,
        force: ForceOpt = False,
    ) -> None:
        """What to fix first: the critical path of each step across ranks, blame in ms, and
        what-if predictions (CUDA graphs, overlap, a rank on time, faster kernels)."""
        memory_settings.apply()
        run_critical_path(paths, json_out, busbw, force)
