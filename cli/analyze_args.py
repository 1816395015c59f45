"""``gpuscope analyze``'s command line read without typer, when typer would read it the same way.

Before it parses anything, typer (0.29) builds a pydantic validator for each of the command's
14 parameters: 0.045 s of every ``analyze`` (most of it importing pydantic), 7 % of the whole
command on the 87 MB MTIA trace.  :func:`fast_args` reads the command line itself when every
word of it is one whose reading is plain: a PATH, a flag of :data:`FLAGS`, an option of
:data:`VALUES` or :data:`REPEATED` with a value that neither is empty nor begins with ``-``
(``--json FILE`` or ``--json=FILE``), ``--workers`` with a value of digits only, ``--``.  It
gives the arguments exactly as typer passes them to the command (a later option replaces an
earlier one; a repeated option's values in order; absent ones at their defaults) — tested on
generated command lines against typer's own reading.  Anything else (``--help``, an unknown
or misspelt option, a missing or odd value, no PATH) gives None, and typer reads the command
line as always, with its own messages.

This module imports nothing beyond the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FLAGS: dict[str, str] = {
    "--all-events": "all_events",
    "--no-cache": "no_cache",
    "--force": "force",
    "--include-prelaunched": "include_prelaunched",
}
"""Flag → the command's parameter, True when given."""

VALUES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--json": ("json_out", Path),
    "--hta-version": ("hta_version", str),
    "--ncu": ("ncu", Path),
    "--html": ("html", Path),
    "--gpu": ("gpu", str),
    "--peaks": ("peaks", Path),
    "--scheduler": ("scheduler", str),
    "--workers": ("workers", int),
}
"""Option taking one value → (the command's parameter, the value's type)."""

REPEATED: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--graph-capture": ("graph_capture", Path),
}
"""Option that may be given more than once → (parameter, each value's type): a list."""

DEFAULTS: dict[str, Any] = {
    "json_out": None,
    "all_events": False,
    "hta_version": "0.6",
    "ncu": None,
    "html": None,
    "gpu": None,
    "peaks": None,
    "scheduler": None,
    "workers": None,
    "no_cache": False,
    "force": False,
    "include_prelaunched": False,
    "graph_capture": None,
}
"""The command's defaults (tested against its signature)."""

_DIGITS = re.compile(r"[0-9]+")


def fast_args(args: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would pass to ``analyze`` for *args* (what follows
    ``analyze``), ``paths`` included, or None when this reading is not certain to be typer's
    (module docstring)."""
    out: dict[str, Any] = dict(DEFAULTS)
    paths: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--":
            paths.extend(it)
            break
        if not arg.startswith("-") or arg == "-":
            if not arg:
                return None
            paths.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name in FLAGS and not eq:
            out[FLAGS[name]] = True
            continue
        if name not in VALUES and name not in REPEATED:
            return None
        if not eq:
            value = next(it, "")
        if not value or value.startswith("-"):
            return None
        if name in REPEATED:
            key, kind = REPEATED[name]
            out[key] = [*(out[key] or []), kind(value)]
            continue
        key, kind = VALUES[name]
        if kind is int and not _DIGITS.fullmatch(value):
            return None
        out[key] = kind(value)
    if not paths or any(not p for p in paths):
        return None
    return {"paths": paths, **out}
