"""The ``gpuscope`` command: a Typer app whose subcommands live one per module.

Only this module turns :class:`collectors.errors.GpuscopeError` into exit codes and one-line
messages; subcommand modules raise, they never ``sys.exit`` (except ``run``, which returns the
wrapped program's exit status, and ``gate``, whose verdict is its exit code).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

import typer
from rich.console import Console

# Typer >= 0.29 vendors click (pyproject requires it), so click is not a dependency of ours.
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError

from collectors.errors import GpuscopeError

COMMAND_MODULES = (
    "cli.analyze",
    "cli.report",
    "cli.compare",
    "cli.run",
    "cli.nccl_tests",
    "cli.commbench",
    "cli.efficiency",
    "cli.gate",
    "cli.cache",
    "cli.critical_path",
)
"""Each module defines ``register(app)`` that adds its commands."""


def build_app() -> typer.Typer:
    """The Typer application with every subcommand registered."""
    app = typer.Typer(
        name="gpuscope",
        help=(
            "gpuscope: capture a GPU training run, explain where the time went, and gate "
            "regressions.  Reads PyTorch-profiler (Kineto) traces, Nsight Systems SQLite "
            "exports, Nsight Compute CSVs and nccl-tests logs."
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root() -> None:
        """gpuscope: GPU performance analysis and regression gating."""

    @app.command("version")
    def version() -> None:
        """Print gpuscope's version."""
        from importlib.metadata import version as _v

        typer.echo(f"gpuscope {_v('gpuscope')}")

    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(app)
    return app


def _error_line(err: GpuscopeError) -> str:
    return f"gpuscope: error: {err}"


def _click_error_line(ex: ClickException) -> str:
    """One line for a Click error: the problem, and for a usage error where help is."""
    line = f"gpuscope: error: {' '.join(ex.format_message().split())}"
    ctx = getattr(ex, "ctx", None)
    if isinstance(ex, ClickUsageError) and ctx is not None:
        line = f"{line.rstrip('.')}; see '{ctx.command_path} --help'"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    err_console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        command = typer.main.get_command(build_app())
        result = command.main(args=args, prog_name="gpuscope", standalone_mode=False)
    except GpuscopeError as err:
        err_console.print(_error_line(err), markup=False)
        return err.exit_code
    except typer.Exit as ex:
        return int(getattr(ex, "exit_code", 0) or 0)
    except NoArgsIsHelpError as ex:  # a bare command: its help is the answer
        ex.show()
        return int(ex.exit_code)
    except ClickException as ex:
        err_console.print(_click_error_line(ex), markup=False)
        return int(ex.exit_code)
    except typer.Abort:
        err_console.print("gpuscope: aborted", markup=False)
        return 130
    except KeyboardInterrupt:
        err_console.print("gpuscope: interrupted", markup=False)
        return 130
    except Exception as ex:  # a bug: one line for the user, the traceback on request
        if os.environ.get("GPUSCOPE_DEBUG"):
            raise
        err_console.print(
            f"gpuscope: internal error: {type(ex).__name__}: {ex} "
            "(set GPUSCOPE_DEBUG=1 for the traceback, and please report it)",
            markup=False,
        )
        return 70
    if isinstance(result, int):
        return result
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
