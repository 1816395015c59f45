"""The ``gpuscope`` console script: begins ``analyze``'s read, then runs the command.

The command-line app (:mod:`cli.main`) imports typer and rich, and ``analyze`` then imports
pandas and the analyses: about 0.4 s before the first byte of a trace could be read.  For
``gpuscope analyze PATH...`` this entry point applies the command's memory settings (before
numpy is imported, :mod:`cli.memory_settings`) and begins reading the trace
(:mod:`cli.early_read`) first, so that the imports and the read overlap; the command line is
then parsed (:mod:`cli.analyze_args`, or typer for anything it leaves to typer), and the
command takes the read when it reads the file.  Until the
command's imports are done the garbage collector is held off (:mod:`cli.gc_hold`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn


def main(argv: Sequence[str] | None = None) -> int:
    """:func:`cli.main.main` after beginning ``analyze``'s read; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["analyze"]:
        from cli.main import main as cli_main

        return cli_main(args)
    from cli import gc_hold

    gc_hold.hold()  # released by the command once its imports are done
    try:
        from cli.early_read import analyze_inputs, start_read_early

        paths = analyze_inputs(args[1:])
        if paths:
            from cli import memory_settings

            memory_settings.apply()
            start_read_early(paths)
        from cli.analyze_run import run_without_typer

        code = run_without_typer(args[1:])
        if code is not None:
            return code
        from cli.main import typer_main  # left to typer: not read again

        return typer_main(args)
    finally:
        gc_hold.release()  # where the command stopped before its work


def run() -> NoReturn:
    """The console script: :func:`main`, then :func:`cli.exit_codes.exit_now` with its code."""
    code = main()
    from cli.exit_codes import exit_now

    exit_now(code)
