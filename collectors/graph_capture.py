"""Capture traces beside an execution trace: TraceLens's ``capture_traces/execution_details.json``
layout (docs/inference.md "Graph attribution").

``execution_details.json`` is a JSON list of objects ``{"file": NAME, "batch_size": INT,
"mode": "FULL" | "PIECEWISE"}``, one per capture trace in the same folder: the graphs in *NAME*
were captured for that batch size (tokens), one graph per step (``FULL``) or several
(``PIECEWISE``).  This module only reads the list (and, for a capture trace named on the command
line without one, looks for a stream capture in its bytes); the CLI reads the traces and passes
them to the analysis as ``Capture(trace, batch_size=…, mode=…)``
(:attr:`analyzers.inputs.AnalysisInputs.graph_captures`).

A file listed by the ``execution_details.json`` of its own folder is a capture trace: a
directory given as input does not read it as a trace of its own (:func:`listed_captures`,
used by :func:`collectors.load.expand_inputs`); it is found beside its execution trace
instead (:func:`find_capture_files`).
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from collectors.errors import InputError

DETAILS = "execution_details.json"
CAPTURE_DIR = "capture_traces"
MODES = ("FULL", "PIECEWISE")


@dataclass(frozen=True)
class CaptureFile:
    """One capture trace: listed in ``execution_details.json`` (with the batch size and mode
    of its graphs), or named by the user (both None when no list describes it)."""

    path: Path
    batch_size: int | None
    mode: str | None


class _Entry(msgspec.Struct, forbid_unknown_fields=False):
    file: str
    batch_size: int
    mode: str


def read_execution_details(path: str | Path) -> list[CaptureFile]:
    """The capture files an ``execution_details.json`` lists, paths resolved beside it.

    Raises:
        InputError: unreadable file, not a JSON list of ``{file, batch_size, mode}`` objects, an
            unknown mode, or a listed capture file that does not exist.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(
            f"cannot read the capture list: {err.strerror or err}", path=path
        ) from None
    try:
        entries = msgspec.json.decode(raw, type=list[_Entry])
    except msgspec.DecodeError as err:
        raise InputError(
            f"not a list of {{file, batch_size, mode}} objects: {err}", path=path
        ) from None
    out = []
    for i, entry in enumerate(entries):
        if entry.mode not in MODES:
            raise InputError(
                f"entry {i}: mode {entry.mode!r} is not one of {', '.join(MODES)}", path=path
            )
        f = path.parent / entry.file
        if not f.is_file():
            raise InputError(f"entry {i}: capture trace {entry.file!r} does not exist", path=path)
        out.append(CaptureFile(f, entry.batch_size, entry.mode))
    return out


def find_capture_files(execution_trace: str | Path) -> list[CaptureFile]:
    """The capture files of ``capture_traces/execution_details.json`` beside *execution_trace*,
    or ``[]`` when there is no such file."""
    details = Path(execution_trace).parent / CAPTURE_DIR / DETAILS
    return read_execution_details(details) if details.is_file() else []


def listed_captures(files: Iterable[Path]) -> set[Path]:
    """The files of TraceLens's capture layout among *files*: each ``execution_details.json``
    that reads as a capture list, and the capture traces it lists (a list that cannot be read
    lists none)."""
    out: set[Path] = set()
    lists: dict[Path, set[Path]] = {}
    for f in files:
        folder = f.parent
        if folder not in lists:
            lists[folder] = set()
            details = folder / DETAILS
            if details.is_file():
                with contextlib.suppress(InputError):
                    lists[folder] = {details, *(c.path for c in read_execution_details(details))}
        if f in lists[folder]:
            out.add(f)
    return out


def without_captures(files: list[Path]) -> list[Path]:
    """*files* less TraceLens's capture layout (:func:`listed_captures`) — unless that is all
    they are: then the capture traces alone (each is recognised as one by the analysis)."""
    layout = listed_captures(files)
    rest = [f for f in files if f not in layout]
    return rest or [f for f in files if f.name != DETAILS]


def describe_capture(path: str | Path) -> CaptureFile:
    """A capture trace named by the user: its batch size and mode from the
    ``execution_details.json`` of its folder when that lists it, else unknown.

    Raises:
        InputError: the file does not exist.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such capture trace", path=p)
    details = p.parent / DETAILS
    if details.is_file():
        for c in read_execution_details(details):
            if c.path == p or c.path.resolve() == p.resolve():
                return CaptureFile(p, c.batch_size, c.mode)
    return CaptureFile(p, None, None)


CAPTURE_MARK = b"StreamBeginCapture"
"""The bytes a capture trace holds (a ``cudaStreamBeginCapture``/``hipStreamBeginCapture``
event; docs/inference.md "Graph attribution")."""
_CHUNK = 1 << 20


def records_stream_capture(path: str | Path) -> bool:
    """True when the Kineto file (JSON, gzipped or not) contains :data:`CAPTURE_MARK`: read in
    1 MiB chunks until found.  A cheap screen before reading a file named beside others; the
    analysis decides from the trace itself (a ``*StreamBeginCapture`` runtime call).  False
    for a file that cannot be read (the reader then says why)."""
    p = Path(path)
    tail = b""
    try:
        with p.open("rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw) if gz else raw
            while chunk := f.read(_CHUNK):
                window = tail + chunk
                if CAPTURE_MARK in window:
                    return True
                tail = window[-(len(CAPTURE_MARK) - 1) :]
    except (OSError, EOFError, zlib.error):
        return False
    return False
