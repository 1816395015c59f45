"""How a command's outcome becomes the process's exit code, without typer.

Only ``cli`` turns :class:`collectors.errors.GpuscopeError` into exit codes and one-line
messages (:func:`run_command`, for every command: typer's own errors are mapped by
:func:`cli.main.typer_main` around typer's call); :func:`exit_now` ends the process with the code.
Neither typer nor anything heavy is imported here: ``analyze`` runs without typer
(:mod:`cli.analyze_run`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from rich.console import Console

from collectors.errors import GpuscopeError


class ExitCode(Exception):
    """Raised by a command that has said all it had to (its output written, its errors
    printed) and ends with *code*: :func:`run_command` returns the code, printing nothing."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def error_line(err: GpuscopeError) -> str:
    """The one line printed for *err*."""
    return f"gpuscope: error: {err}"


def run_command(call: Callable[[Console], Any]) -> int:
    """``call(err_console)``'s exit code: its int result (0 for any other result), an
    :class:`ExitCode`'s code, a :class:`GpuscopeError`'s ``exit_code`` after one line naming
    what is wrong, 130 after an interrupt, 70 after one line for any other exception (a bug;
    the traceback with ``GPUSCOPE_DEBUG`` set)."""
    err_console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        result = call(err_console)
    except ExitCode as ex:
        return ex.code
    except GpuscopeError as err:
        err_console.print(error_line(err), markup=False)
        return err.exit_code
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
