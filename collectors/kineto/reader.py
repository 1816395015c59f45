"""Kineto / PyTorch-profiler trace reader: ``*.json`` / ``*.json.gz`` → one :class:`Trace` per rank.

The reader is a pipeline: each stage is called by the one above it and calls only the stages
below it (``tests/collectors/test_kineto_pipeline.py`` checks every call)::

    read_kineto(path)                               reader.py
      parallel.read_rows(path)                      parallel.py: this process and a forked helper
        rows.read_chunks(path, claimed=...)           each decode the chunks they claim
      or rows.read_rows(path)                       rows.py: each chunk's events → numpy columns
           stream.stream_chunks(path)               stream.py: cut at event boundaries, decode
                source.text_pieces(path)            source.py: the text, gunzipped
                native.scan(text)                   native.py + _scan.c: columns in one C pass
                decode.EVENTS.decode(text)          decode.py: typed msgspec Structs (the chunks
                                                    the native scanner declines)
      tables.build_trace(rows, rank)                tables.py: the tables and the metadata

(:mod:`collectors.kineto.columns` holds the rows stage's value conversions, and
:mod:`collectors.kineto.native_rows` its rows of natively scanned chunks.)  The mapping from
events to tables is documented in ``docs/kineto-reader.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from collectors.errors import InputError
from collectors.files import regular_file
from collectors.kineto import early
from collectors.kineto import parallel as parallel_read
from collectors.kineto.rows import RowParts, read_rows
from collectors.kineto.stream import Fallback
from collectors.kineto.tables import RANK_NAME_RES, build_trace, rank_from_filename
from collectors.model import Trace

__all__ = ["RANK_NAME_RES", "rank_from_filename", "read_kineto", "read_kineto_files"]

ProgressFn = Callable[[int, int, str], None]


def read_kineto_files(paths: Sequence[Path], *, progress: ProgressFn | None = None) -> list[Trace]:
    """Read per-rank Kineto files; one Trace per file, sorted by rank.

    The rank of each file comes from ``distributedInfo.rank``, else from its name
    (:data:`RANK_NAME_RES`), else 0.  ``progress(done, total, label)`` is called after each file.

    Raises:
        InputError: a file is unreadable or not a trace, or two files claim the same rank.
    """
    unique: list[Path] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    traces: list[Trace] = []
    owner: dict[int, Trace] = {}
    for i, p in enumerate(unique):
        trace = read_kineto(p)
        other = owner.get(trace.rank)
        if other is not None:
            raise InputError(
                f"claims rank {trace.rank} ({trace.meta.rank_source}), as does "
                f"{other.meta.source_path} ({other.meta.rank_source}); pass one file per rank "
                "or name the files rank-N",
                path=p,
            )
        owner[trace.rank] = trace
        traces.append(trace)
        if progress is not None:
            progress(i + 1, len(unique), p.name)
    return sorted(traces, key=lambda t: t.rank)


def read_kineto(
    path: str | Path,
    *,
    rank: int | None = None,
    include_python: bool = False,
    parallel: bool | None = None,
) -> Trace:
    """Read one Kineto trace file (``.json`` or gzip-compressed) into a :class:`Trace`.

    *rank* overrides the rank found in the file; ``python_function`` events are skipped
    unless *include_python*.  *parallel*: read with a helper process
    (:mod:`collectors.kineto.parallel`; None: when that pays off); the Trace is the same.

    Rows whose times or name are unusable are rejected and counted in a note
    (``meta.extra["notes"]``, docs/reliability.md).

    Raises:
        InputError: missing file, not a regular file (:mod:`collectors.files`), corrupt gzip,
            invalid JSON, JSON nested too deeply, not a Kineto trace, no usable events.
    """
    path = regular_file(path, directory="is a directory, expected a Kineto trace file")
    try:
        return build_trace(_rows(path, include_python, parallel), rank)
    except RecursionError:  # msgspec bounds nesting by the interpreter's recursion limit
        raise InputError(
            "JSON nested too deeply to decode (lists/objects within each other, over about "
            f"{sys.getrecursionlimit()} levels)",
            path=path,
        ) from None


def _rows(path: Path, include_python: bool, in_parallel: bool | None) -> RowParts:
    """The file's rows: from the read begun before the imports (:mod:`collectors.kineto.early`)
    when there is one, else read in parallel when asked (or when that pays off), else serially
    (also when the parallel read does not succeed: the serial read reports what is wrong)."""
    begun = early.take(path, include_python)
    if begun is not None:
        return begun
    if in_parallel or (in_parallel is None and parallel_read.wanted(path)):
        try:
            return parallel_read.read_rows(path, include_python)
        except Fallback:
            pass
    return read_rows(path, include_python, lookahead=parallel_read.spare_cpu())
