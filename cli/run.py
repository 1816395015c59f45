"""``gpuscope run [-o DIR] [--steps A:B] [--nvml-hz N] [--nsys] [--no-report] -- CMD ...``."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.outputs import ForceOpt


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to *app*."""

    @app.command(
        "run",
        context_settings={"allow_interspersed_args": False},
    )
    def run(
        command: Annotated[
            list[str],
            typer.Argument(
                metavar="CMD",
                help="The program to profile and its arguments (python, torchrun, ...).",
                show_default=False,
            ),
        ],
        out: Annotated[
            str | None,
            typer.Option(
                "-o",
                "--out",
                help="Run directory; {date}, {name} (script name) and {host} are filled in. "
                "Default: runs/{date}-{name}.",
                show_default=False,
            ),
        ] = None,
        steps: Annotated[
            str | None,
            typer.Option(
                "--steps",
                help="Step window A:B: steps A..B-1 (0-based) are traced on every rank. "
                "Default: the program's own profiler.profile(steps=...), else 5:10.",
                show_default=False,
            ),
        ] = None,
        nvml_hz: Annotated[
            float | None,
            typer.Option(
                "--nvml-hz",
                help="NVML sampling rate per node in Hz (0 = no sampling). Default: 10.",
                show_default=False,
            ),
        ] = None,
        nsys: Annotated[
            bool,
            typer.Option(
                "--nsys",
                help="Also record with Nsight Systems (nsys profile) over the step window.",
            ),
        ] = False,
        no_report: Annotated[
            bool, typer.Option("--no-report", help="Do not write the HTML report.")
        ] = False,
        force: ForceOpt = False,
    ) -> int:
        """Run CMD with capture on and analyse what it captured.

        Writes RUN/meta.json, RUN/traces/rank-<r>.pt.trace.json.gz, RUN/counters/<host>.csv.gz
        (NVML), RUN/summary.json and RUN/report.html; a run directory holding files is refused
        without --force, which replaces only gpuscope's files there.  Programs need no change
        (capture starts at `import torch`, steps at each optimizer step) unless they call
        profiler.step() themselves.  The exit status is the program's (128+N if signal N ended
        it; 127 if it could not be started, 126 if it is not executable).
        """
        from profiler.launch import RunOptions, run_command

        opts = RunOptions(
            command=tuple(command),
            out=out,
            steps=steps,
            nvml_hz=nvml_hz,
            nsys=nsys,
            report=not no_report,
            force=force,
        )
        return run_command(opts, echo=lambda line: typer.echo(line, err=True))
