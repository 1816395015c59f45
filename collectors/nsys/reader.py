"""Nsight Systems reader: SQLite exports (and ``.nsys-rep`` via ``nsys export``) → Traces.

The reader is a pipeline; each stage is called by the one above it::

    read_nsys_files(sqlite, reps)          reader.py
      export.export_rep(rep)               export.py: .nsys-rep → .sqlite (``nsys export``)
      tables.read_export(path)             tables.py: the export's tables and run facts
        gpu / host / counters / devices      one module per kind of table
          strings                            StringIds look-ups, categoricals
            schema.NsysDb                    read-only SQLite access, schema checks
      traces.split_export(tables)          traces.py: per-(process, device) parts
      traces.assign_ranks(parts)           ranks across every export → Traces

Every field is documented in ``docs/nsys.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from collectors.model import Trace
from collectors.nsys.export import export_rep
from collectors.nsys.tables import read_export
from collectors.nsys.traces import NO_GPU_NOTE, NO_KERNELS_NOTE, Part, assign_ranks, split_export

__all__ = ["NO_GPU_NOTE", "NO_KERNELS_NOTE", "read_nsys", "read_nsys_files"]

ProgressFn = Callable[[int, int, str], None]


def read_nsys(path: str | Path, *, progress: ProgressFn | None = None) -> list[Trace]:
    """Read one export (``.sqlite`` or ``.nsys-rep``) into Traces sorted by rank."""
    p = Path(path)
    if p.name.endswith(".nsys-rep"):
        return read_nsys_files([], [p], progress=progress)
    return read_nsys_files([p], [], progress=progress)


def read_nsys_files(
    sqlite_paths: Sequence[Path],
    rep_paths: Sequence[Path],
    *,
    progress: ProgressFn | None = None,
) -> list[Trace]:
    """Read several exports as one run; ranks are assigned across all of them.

    Raises:
        InputError: a file is unreadable, not SQLite, truncated, locked, corrupt, not an nsys
            export, or lacks a required table/column (the message names it).
        MissingDependencyError: a ``.nsys-rep`` was given and ``nsys`` is not on PATH.
    """
    paths = [Path(p) for p in sqlite_paths] + [export_rep(Path(r)) for r in rep_paths]
    paths = sorted(dict.fromkeys(paths), key=lambda p: [*_natural_key(p.name), str(p)])
    parts: list[Part] = []
    for i, p in enumerate(paths):
        if progress:
            progress(i, len(paths), p.name)
        parts += split_export(read_export(p), i)
    if progress:
        progress(len(paths), len(paths), "done")
    return assign_ranks(parts)


def _natural_key(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
