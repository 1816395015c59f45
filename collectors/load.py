"""Open whatever the user points at (files, directories) and return one Trace per rank.

Dispatch is by content where cheap (SQLite magic bytes) and by suffix otherwise:

* ``*.json``, ``*.json.gz``, ``*.gz`` and directories of them → Kineto reader
  (:mod:`collectors.kineto`), ranks from ``distributedInfo``/file names;
* ``*.sqlite`` / ``*.db`` / any SQLite file → Nsight Systems reader (:mod:`collectors.nsys`);
* ``*.nsys-rep`` → exported to SQLite with ``nsys`` when it is on PATH (:mod:`collectors.nsys`);
* a ``gpuscope run`` directory (``meta.json`` + ``traces/``, :mod:`collectors.rundir`) → its
  ``traces/`` folder.

In a directory, the CUDA-graph capture traces listed by an ``execution_details.json``
(TraceLens's ``capture_traces/`` layout, :mod:`collectors.graph_capture`) are not traces of
their own (unless they are all the directory holds): they are the captures of the trace beside.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from collectors.discover import SQLITE_MAGIC, expand_inputs, is_sqlite
from collectors.model import Trace

__all__ = ["SQLITE_MAGIC", "expand_inputs", "is_sqlite", "load_traces"]

ProgressFn = Callable[[int, int, str], None]
"""``progress(done, total, label)``: called as inputs are read."""


def load_traces(paths: Sequence[str | Path], *, progress: ProgressFn | None = None) -> list[Trace]:
    """Read every input into Traces, sorted by rank.

    Raises:
        InputError: a missing, unreadable or corrupt input (the message names the file).
    """
    kineto, sqlite, reps = expand_inputs(paths)
    traces: list[Trace] = []
    if kineto:
        from collectors.kineto import read_kineto_files

        traces += read_kineto_files(kineto, progress=progress)
    if sqlite or reps:
        from collectors.nsys import read_nsys_files

        traces += read_nsys_files(sqlite, reps, progress=progress)
    return sorted(traces, key=lambda t: t.rank)
