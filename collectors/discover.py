"""Which trace files the user's paths name (:func:`expand_inputs`), without reading them:
standard library only, so that the CLI can look before the heavy imports
(:mod:`collectors.load` dispatches the files to the readers; its docstring has the rules)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from collectors.errors import InputError
from collectors.files import input_stat
from collectors.graph_capture import without_captures
from collectors.rundir import TRACES, is_run_dir

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """True when the file starts with SQLite's 16-byte header."""
    try:
        with path.open("rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def expand_inputs(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path], list[Path]]:
    """Split inputs into (kineto files, nsys sqlite files, nsys-rep files); directories expand.

    Raises:
        UsageError: an empty path.
        InputError: a path does not exist, is not a regular file or directory (a FIFO, pipe,
            socket or device: :mod:`collectors.files`), or a directory holds no trace.
    """
    kineto: list[Path] = []
    sqlite: list[Path] = []
    reps: list[Path] = []
    for raw in paths:
        input_stat(raw, directories=True)  # a file or directory; nothing else, nothing opened
        p = Path(raw)
        if is_run_dir(p):
            p = p / TRACES  # a `gpuscope run` directory: its per-rank traces
        if p.is_dir():
            found = sorted(
                q
                for q in p.rglob("*")
                if q.is_file() and (q.name.endswith((".json", ".json.gz", ".sqlite", ".nsys-rep")))
            )
            if not found:
                raise InputError(
                    "directory holds no trace (*.json, *.json.gz, *.sqlite, *.nsys-rep)", path=p
                )
            reps_here = [q for q in found if q.name.endswith(".nsys-rep")]
            sqlite_here = [q for q in found if q.name.endswith(".sqlite")]
            # an exported report next to its .nsys-rep is read once, from the SQLite file
            done = {q.name[: -len(".sqlite")] for q in sqlite_here}
            reps += [q for q in reps_here if q.name[: -len(".nsys-rep")] not in done]
            sqlite += sqlite_here
            jsons = [q for q in found if q.name.endswith((".json", ".json.gz"))]
            kineto += without_captures(jsons)  # captures are found beside their trace
        elif p.name.endswith(".nsys-rep"):
            reps.append(p)
        elif p.suffix in (".sqlite", ".db") or is_sqlite(p):
            sqlite.append(p)
        else:
            kineto.append(p)
    return kineto, sqlite, reps
