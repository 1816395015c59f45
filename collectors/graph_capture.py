"""Capture traces beside an execution trace: TraceLens's ``capture_traces/execution_details.json``
layout (docs/inference.md "Graph attribution").

``execution_details.json`` is a JSON list of objects ``{"file": NAME, "batch_size": INT,
"mode": "FULL" | "PIECEWISE"}``, one per capture trace in the same folder: the graphs in *NAME*
were captured for that batch size (tokens), one graph per step (``FULL``) or several
(``PIECEWISE``).  This module only reads the list; the CLI reads the traces and passes them to
:func:`analyzers.serving.graphs.attribute_graphs` as ``Capture(trace, batch_size=…, mode=…)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from collectors.errors import InputError

DETAILS = "execution_details.json"
CAPTURE_DIR = "capture_traces"
MODES = ("FULL", "PIECEWISE")


@dataclass(frozen=True)
class CaptureFile:
    """One capture trace listed in ``execution_details.json``."""

    path: Path
    batch_size: int
    mode: str


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
