"""A file's whole read by a forked child, while this process imports or analyses another file.

A read begun in a thread before the caller's imports (:mod:`collectors.kineto.early`) shares
the GIL with them: every call of that read that releases the GIL (each gunzip piece, each
scan, each numpy operation on a chunk's columns) waits for the importing thread to let go of
it again, and on the 300 MB benchmark trace the thread got through 13 of its 110 chunks in the
0.33 s of imports (51 while this process slept instead).  :class:`ReadProcess` forks a child
that reads the file exactly as this process would
(:func:`~collectors.kineto.rows.read_rows`, chunks scanned in its own worker thread while the
chunk before becomes rows) and pickles the rows into an anonymous shared mapping made before
the fork; :meth:`ReadProcess.rows` loads them when the reader wants the file, their arrays
left in the mapping as read-only views (no copy: it is unmapped once the last of them is gone;
read-only, so that a column a Trace keeps from them is never written through to the pages a
forked helper shares).

Before, the child sent each scanned chunk and this process built the rows: 0.05 s of this
process's time per 47 MB rank, and for the first file this process had nothing else to do
then, while the child had finished its scans during the imports.

The rows are exactly those of the same read in this process (the child is a fork of it).
Anything the child cannot do (malformed file: the error is raised by this process's own read,
as a serial read raises it; rows larger than the mapping; a child that dies) makes
:meth:`ReadProcess.rows` raise :class:`~collectors.kineto.stream.Fallback`: the caller then
reads the file itself.  Standard library only, beside the rows stage's own imports (the child
is forked before pandas is imported).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import struct
from pathlib import Path

from collectors.forking import Helper, fork_helper
from collectors.kineto.rows import RowParts, read_rows
from collectors.kineto.stream import Fallback

_RECORD = struct.Struct("<q")
"""Bytes of the pickled rows in the mapping; -1: no rows (the caller reads the file)."""
_LEN = struct.Struct("<q")
MIN_RESERVE = 64 << 20


def reserve_bytes(text_bytes: int) -> int:
    """Address space to map for a file of *text_bytes* of JSON: the pickled rows take about
    0.35 byte per byte of text (16 MB for a 47 MB rank, 16 MB for the 87 MB MTIA trace);
    pages are only used as the child writes them."""
    return max(MIN_RESERVE, text_bytes)


class ReadProcess:
    """A forked child reading *path*'s rows ahead of this process (module docstring).

    Raises:
        OSError: no shared mapping, pipe or fork here.
    """

    def __init__(self, path: Path, include_python: bool, reserve: int) -> None:
        self._buf = mmap.mmap(-1, reserve)  # shared and anonymous: the child writes here
        try:
            self._helper: Helper | None = fork_helper(
                lambda fd: _child(path, include_python, self._buf, fd)
            )
        except OSError:
            self._buf.close()
            raise

    @property
    def pid(self) -> int | None:
        """The child's process id, None once joined or stopped."""
        return None if self._helper is None else self._helper.pid

    def rows(self) -> RowParts:
        """The file's rows, as :func:`~collectors.kineto.rows.read_rows` gives them here.

        Raises:
            Fallback: the child could not read the file, or failed.
        """
        helper = self._helper
        if helper is None:
            raise Fallback
        try:
            (n,) = _RECORD.unpack(_read_exactly(helper.read_fd, _RECORD.size))
            helper.reap_later()  # the record comes after the rows: its exit is not awaited
            self._helper = None
            if n < 0:
                raise Fallback
            return _load(self._buf, n)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the child (nothing once its rows are read) and unmap the rows (once no array
        of them is left: until then the mapping stays, and is unmapped with the last)."""
        if self._helper is not None:
            self._helper.stop()
            self._helper = None
        with contextlib.suppress(BufferError):
            self._buf.close()


def _put(buf: mmap.mmap, rows: RowParts) -> int:
    """Write *rows* at the start of *buf* — their pickle, then the data of their arrays
    (pickle's out-of-band buffers: copied once), each after its length; the bytes written, or
    -1 when they do not fit."""
    data: list[pickle.PickleBuffer] = []
    head = pickle.dumps(rows, protocol=5, buffer_callback=data.append)
    parts: list[bytes | memoryview] = [head, *(b.raw() for b in data)]
    if sum(_LEN.size + len(x) for x in parts) > len(buf):
        return -1
    at = 0
    for x in parts:
        _LEN.pack_into(buf, at, len(x))
        at += _LEN.size
        buf[at : at + len(x)] = x
        at += len(x)
    return at


def _load(buf: mmap.mmap, n: int) -> RowParts:
    """The rows :func:`_put` wrote in the first *n* bytes of *buf*, their arrays read-only
    views of it."""
    parts: list[memoryview] = []
    view = memoryview(buf).toreadonly()  # a column the Trace keeps is never written through
    off = 0
    while off < n:
        (size,) = _LEN.unpack_from(buf, off)
        off += _LEN.size
        parts.append(view[off : off + size])
        off += size
    rows = pickle.loads(parts[0], buffers=parts[1:])
    assert isinstance(rows, RowParts)
    return rows


def _read_exactly(fd: int, n: int) -> bytes:
    """*n* bytes from the pipe *fd*.

    Raises:
        Fallback: the pipe ended first (the child exited).
    """
    out = b""
    while len(out) < n:
        got = os.read(fd, n - len(out))
        if not got:
            raise Fallback
        out += got
    return out


def _child(path: Path, include_python: bool, buf: mmap.mmap, fd: int) -> int:
    """The forked child: the rows of *path* pickled into *buf*, their size written to *fd*."""
    try:
        n = _put(buf, read_rows(path, include_python, lookahead=True))
    except Exception:  # InputError, anything: the caller reads the file itself
        n = -1
    os.write(fd, _RECORD.pack(n))
    os.close(fd)
    return 0
