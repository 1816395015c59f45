"""Beginning ``gpuscope analyze``'s read before the command's heavy imports.

:func:`start_read_early` begins reading the input trace (:func:`collectors.kineto.early.start`)
as soon as the inputs are known; :func:`analyze_inputs` finds them in the command line before
typer has parsed it, so that :mod:`cli.launch` can begin the read before typer, rich, pandas and
the analyses are imported (about 0.4 s), and those imports run while the trace is read.  This
module imports neither typer nor pandas.
"""

from __future__ import annotations

from collections.abc import Sequence

from cli.analyze_args import REPEATED, VALUES

VALUE_OPTIONS = frozenset({*VALUES, *REPEATED})
"""The options of ``analyze`` that take a value (tested against the command's own options)."""
NO_EARLY_OPTIONS = frozenset({"--scheduler", "--workers", "--help"})
"""With these the command reads no trace here (a cluster or a pool reads them, or help)."""


def analyze_inputs(args: Sequence[str]) -> list[str] | None:
    """The PATH arguments of ``gpuscope analyze ARGS`` (*args*: what follows ``analyze``), or
    None when the command will not read them in this process (``--scheduler``, ``--workers``,
    ``--help``).  A misreading only costs a read that is not used: typer parses the command."""
    paths: list[str] = []
    takes_value = False
    options_done = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif options_done or not arg.startswith("-") or arg == "-":
            paths.append(arg)
        elif arg == "--":
            options_done = True
        else:
            name = arg.split("=", 1)[0]
            if name in NO_EARLY_OPTIONS:
                return None
            takes_value = name in VALUE_OPTIONS and "=" not in arg
    return paths


def start_read_early(paths: Sequence[str]) -> None:
    """With one Kineto file to read, or two that the engine will read here one after the other
    (both large enough that :func:`~reports.summary.planning.here_on_two_cpus` holds and no
    pool is spawned), begin reading the first one (:func:`collectors.kineto.early.start`: in a
    forked child, a thread for small files); the engine takes that read when it parses the
    file, and a read left untaken (the parse cache had the file) is stopped.  Nothing here
    raises: the engine reports bad input as always."""
    import contextlib

    from collectors.discover import expand_inputs
    from collectors.kineto import early
    from collectors.kineto.parallel import MIN_TEXT_BYTES, text_bytes

    with contextlib.suppress(Exception):
        kineto, sqlite, reps = expand_inputs(list(paths))
        if sqlite or reps or not kineto:
            return
        if len(kineto) == 1 or (
            len(kineto) == 2 and all(text_bytes(k) >= MIN_TEXT_BYTES for k in kineto)
        ):
            early.start(kineto[0])
