"""Reading a Kineto file before the caller has imported the rest of its work.

The CLI knows the file it will read before it imports pandas and the analyses (about 0.3 s).
:func:`start` begins the read then: for a file large enough to be read by two processes
(:func:`collectors.kineto.parallel.wanted`) it forks the parallel read's helper
(:func:`collectors.kineto.parallel.start_early`); otherwise, where the native scanner is enabled
and a second CPU is usable, a file of :data:`MIN_TEXT_BYTES_PROCESS` to
:data:`MAX_TEXT_BYTES_PROCESS` of JSON is read by a forked child
(:class:`~collectors.kineto.read_process.ReadProcess`: a thread would wait for the GIL behind
the imports), whose rows this process loads when the reader takes them; another one is read in
a thread.  :func:`take` joins that read when the
reader wants the file (:func:`collectors.kineto.reader.read_kineto`): the rows are exactly a
serial read's, and an error it met is raised there, as a serial read raises it.
:func:`cancel` stops reads no one took (the parse cache had the file): a thread stops at its
next chunk, a child is killed.

This module imports only what the rows stage imports (numpy, msgspec), no pandas.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.kineto import parallel
from collectors.kineto.native import enabled as native_enabled
from collectors.kineto.read_process import ReadProcess, reserve_bytes
from collectors.kineto.rows import Cancelled, RowParts, read_rows
from collectors.kineto.stream import Fallback

MIN_TEXT_BYTES_PROCESS = 8 << 20
"""Read a file in a forked child from this much JSON text on (below it, in a thread: the fork
and the pickling cost more than the GIL's waits)."""
MAX_TEXT_BYTES_PROCESS = 256 << 20
"""... and below this much: a larger file's read outlasts the imports by far, so the GIL's
waits cost only its start, while the child's pickling and this process's waiting cost all along
(300 MB benchmark trace, interleaved, 5 each, medians: 2.256 s with the child reading the rows,
2.206 s with the thread)."""


@dataclass
class _Read:
    """A read of (path, include_python) running in a thread."""

    thread: threading.Thread
    stop: threading.Event
    outcome: list[Any] = field(default_factory=list)
    """``[RowParts]`` or ``[exception]`` once the thread is done."""


_reads: dict[tuple[str, bool], _Read] = {}
"""Reads started by :func:`start` in a thread, by (resolved path, include_python)."""
_children: dict[tuple[str, bool], ReadProcess] = {}
"""Reads started by :func:`start` in a forked child, by (resolved path, include_python)."""


def _key(path: str | Path, include_python: bool) -> tuple[str, bool]:
    return (str(Path(path).resolve()), include_python)


def start(path: str | Path, include_python: bool = False, *, beside_work: bool = False) -> bool:
    """Begin reading *path* now, in a forked helper or a thread (see the module docstring);
    True when a read was started.  *beside_work*: the caller is about to run other work (the
    analysis of the file before this one), not imports: only a read in another process is
    begun (a thread would share the GIL with that work).  Nothing here raises: the read reports
    bad input when taken.
    """
    p = Path(path)
    try:
        key = _key(p, include_python)
    except OSError:
        return False
    if key in _reads or key in _children or parallel.started_early(p, include_python):
        return False  # begun already (the launcher, then the command)
    if parallel.start_early(p, include_python):
        return True
    try:
        if not p.is_file() or not native_enabled() or not parallel.spare_cpu():
            return False
        text = parallel.text_bytes(p)
    except OSError:
        return False
    if not _reads and not _children:
        atexit.register(cancel)
    if MIN_TEXT_BYTES_PROCESS <= text < MAX_TEXT_BYTES_PROCESS:
        try:
            _children[key] = ReadProcess(p, include_python, reserve_bytes(text))
            return True
        except OSError:
            pass  # no fork here: a thread
    if beside_work:
        return False
    read = _Read(threading.Thread(target=lambda: None), threading.Event())

    def run() -> None:
        try:
            read.outcome.append(read_rows(p, include_python, lookahead=True, stop=read.stop))
        except BaseException as e:  # handed to the taker, who raises it
            read.outcome.append(e)

    read.thread = threading.Thread(target=run, name="gpuscope-early-read", daemon=True)
    _reads[key] = read
    read.thread.start()
    return True


def take(path: str | Path, include_python: bool) -> RowParts | None:
    """The rows of the read :func:`start` began in a thread for *path* (joined), or None when
    there is none.

    Raises:
        InputError: what the read of the file raised (exactly a serial read's error).
    """
    try:
        key = _key(path, include_python)
    except OSError:
        return None
    ahead = _children.pop(key, None)
    if ahead is not None:
        try:
            return ahead.rows()
        except Fallback:  # this process reads the file (and reports its errors)
            return read_rows(Path(path), include_python, lookahead=True)
    read = _reads.pop(key, None)
    if read is None:
        return None
    read.thread.join()
    (outcome,) = read.outcome
    if isinstance(outcome, BaseException):
        raise outcome
    assert isinstance(outcome, RowParts)
    return outcome


def cancel(path: str | Path | None = None) -> None:
    """Stop the reads :func:`start` began that no one took: of *path* only, or all (a thread
    stops at its next chunk; a forked helper is killed)."""
    keys: list[tuple[str, bool]] = []
    if path is None:
        keys = [*_reads, *_children]
    else:
        with contextlib.suppress(OSError):
            keys = [k for k in (*_reads, *_children) if k[0] == str(Path(path).resolve())]
    parallel.cancel_early(path)
    for k in keys:
        ahead = _children.pop(k, None)
        if ahead is not None:
            ahead.close()
    for k in keys:
        read = _reads.pop(k, None)
        if read is not None:
            read.stop.set()
            read.thread.join()
            if read.outcome and isinstance(read.outcome[0], Cancelled):
                read.outcome.clear()
