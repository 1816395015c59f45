"""The ``gpuscope`` command: a Typer app whose subcommands live one per module.

Only :func:`main` turns :class:`collectors.errors.GpuscopeError` into exit codes and one-line
messages (:func:`cli.exit_codes.run_command`, with typer's and click's own errors mapped here);
subcommand modules raise, they never ``sys.exit`` (except ``run``, which returns the wrapped
program's exit status, and ``gate``, whose verdict is its exit code).  An ``analyze``
command line that :func:`cli.analyze_args.fast_args` reads exactly as typer would is run
without typer (:func:`cli.analyze_run.run_without_typer`: building typer's command costs
0.045 s of pydantic validators, importing typer 0.024 s).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any, NoReturn

import typer
from rich.console import Console

# Typer >= 0.29 vendors click (pyproject requires it), so click is not a dependency of ours.
from typer._click.core import Command
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError
from typer.core import TyperGroup

from cli.analyze_run import run_without_typer
from cli.exit_codes import exit_now, run_command

COMMANDS: tuple[tuple[str, str], ...] = (
    ("analyze", "cli.analyze"),
    ("report", "cli.report"),
    ("export", "cli.report"),
    ("compare", "cli.compare"),
    ("run", "cli.run"),
    ("nccl-tests", "cli.nccl_tests"),
    ("commbench", "cli.commbench"),
    ("occupancy", "cli.efficiency"),
    ("roofline", "cli.efficiency"),
    ("calibrate", "cli.efficiency"),
    ("record", "cli.gate"),
    ("gate", "cli.gate"),
    ("history", "cli.gate"),
    ("critical-path", "cli.critical_path"),
    ("cache", "cli.cache"),
)
"""Every subcommand after ``version``, in ``--help`` order, and the module that registers it.
A command's module is imported only when that command runs (or for the root ``--help``), so
``gpuscope analyze`` does not import what ``gate`` or ``report`` need (tested: the lazy app's
commands and help equal those of the eager one, :func:`build_app` with ``lazy=False``)."""

COMMAND_MODULES = tuple(dict.fromkeys(module for _, module in COMMANDS))
"""Each module defines ``register(app)`` that adds its commands."""

_APP_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}


def _module_commands(module: str) -> dict[str, Command]:
    """The click commands *module* registers, built as the root app would build them."""
    sub = typer.Typer(**_APP_SETTINGS)

    @sub.callback()
    def _unused() -> None:  # a callback makes typer build a group, whatever the count
        """Holds the module's commands."""

    importlib.import_module(module).register(sub)
    return dict(typer.main.get_group(sub).commands)


class _LazyCommands(MutableMapping[str, Command]):
    """The root group's ``commands``: every name of :data:`COMMANDS` is listed, a command's
    module is imported on first access to one of its names."""

    def __init__(self, eager: MutableMapping[str, Command]) -> None:
        self._loaded: dict[str, Command] = dict(eager)
        self._module = {name: module for name, module in COMMANDS if name not in eager}
        self._names = [*eager, *self._module]

    def _load(self, module: str) -> None:
        for name, cmd in _module_commands(module).items():
            self._loaded[name] = cmd
            if name not in self._names:  # registered but not declared: still reachable
                self._names.append(name)
        for name in [n for n, m in self._module.items() if m == module]:
            del self._module[name]

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded and name in self._module:
            self._load(self._module[name])
        return self._loaded[name]

    def __setitem__(self, name: str, cmd: Command) -> None:
        self._loaded[name] = cmd
        self._module.pop(name, None)
        if name not in self._names:
            self._names.append(name)

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._module.pop(name, None)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


class _LazyGroup(TyperGroup):
    """Typer's group with :class:`_LazyCommands` as its commands."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(self.commands)


def build_app(lazy: bool = True) -> typer.Typer:
    """The Typer application with every subcommand registered (each module imported when
    its command is first looked up; ``lazy=False`` imports and registers them all now)."""
    app = typer.Typer(
        name="gpuscope",
        help=(
            "gpuscope: capture a GPU training run, explain where the time went, and gate "
            "regressions.  Reads PyTorch-profiler (Kineto) traces, Nsight Systems SQLite "
            "exports, Nsight Compute CSVs and nccl-tests logs."
        ),
        no_args_is_help=True,
        cls=_LazyGroup if lazy else TyperGroup,
        **_APP_SETTINGS,
    )

    @app.callback()
    def _root() -> None:
        """gpuscope: GPU performance analysis and regression gating."""

    @app.command("version")
    def version() -> None:
        """Print gpuscope's version."""
        from collectors.version import VERSION

        typer.echo(f"gpuscope {VERSION}")

    if not lazy:
        for mod in COMMAND_MODULES:
            importlib.import_module(mod).register(app)
    return app


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
    if args[:1] == ["analyze"]:
        code = run_without_typer(args[1:])
        if code is not None:
            return code
    return typer_main(args)


def typer_main(args: list[str]) -> int:
    """The exit code of the command line *args* run by typer (what :func:`main` does with a
    command line it does not run without typer; the console script's, :mod:`cli.launch`,
    after :func:`cli.analyze_run.run_without_typer` left it to typer)."""
    return run_command(lambda err_console: _run_typer(args, err_console))


def _run_typer(args: list[str], err_console: Console) -> Any:
    """The command line run by typer's command; typer's and click's own outcomes as exit
    codes (a usage error: one line and where help is)."""
    try:
        command = typer.main.get_command(build_app())
        return command.main(args=args, prog_name="gpuscope", standalone_mode=False)
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


def run() -> NoReturn:
    """The console script: :func:`main`, then :func:`exit_now` with its code."""
    exit_now(main())


if __name__ == "__main__":  # pragma: no cover
    run()
