"""The ``gpuscope`` command: a Typer app whose subcommands live one per module.

Only this module turns :class:`collectors.errors.GpuscopeError` into exit codes and one-line
messages; subcommand modules raise, they never ``sys.exit`` (except ``run``, which returns the
wrapped program's exit status, and ``gate``, whose verdict is its exit code).  An ``analyze``
command line that :func:`cli.analyze_args.fast_args` reads exactly as typer would is run
without building typer's command (0.045 s of pydantic validators).
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any, NoReturn, TextIO, cast

import typer
from rich.console import Console

# Typer >= 0.29 vendors click (pyproject requires it), so click is not a dependency of ours.
from typer._click.core import Command
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError
from typer._click.utils import PacifyFlushWrapper
from typer.core import TyperGroup

from cli.analyze_args import fast_args
from collectors.errors import GpuscopeError

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
        from importlib.metadata import version as _v

        typer.echo(f"gpuscope {_v('gpuscope')}")

    if not lazy:
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
        fast = fast_args(args[1:]) if args[:1] == ["analyze"] else None
        if fast is not None:
            result = _run_as_typer_would(fast)
        else:
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


def _run_as_typer_would(kwargs: dict[str, Any]) -> Any:
    """``analyze`` with the arguments :func:`cli.analyze_args.fast_args` read, what typer's
    ``command.main(standalone_mode=False)`` does around a command: an interrupt is exit code
    130, a closed output pipe exit code 1 with the standard streams quietened, an
    :class:`typer.Exit` its code; everything else is raised to :func:`main`."""
    from cli.analyze import analyze_command

    try:
        return analyze_command(**kwargs)
    except KeyboardInterrupt:
        return 130
    except typer.Exit as ex:
        return int(getattr(ex, "exit_code", 0) or 0)
    except OSError as ex:
        if ex.errno != errno.EPIPE:
            raise
        sys.stdout = cast(TextIO, PacifyFlushWrapper(sys.stdout))
        sys.stderr = cast(TextIO, PacifyFlushWrapper(sys.stderr))
        sys.exit(1)


def run() -> NoReturn:
    """The console script: :func:`main`, then :func:`exit_now` with its code."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """End the process with *code* once the command is done, without tearing the interpreter
    down object by object (after an analysis that frees millions of objects: 0.2 s of an 87 MB
    trace's 1.6 s).  The exit handlers run and the standard streams are flushed first, as at a
    normal exit; with another non-daemon thread still running, it is a normal exit."""
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate()[1:]):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what a normal exit reports as 120
            code = code or 120
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
