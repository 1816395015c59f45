"""The stream stage's scanning process: a file's chunks gunzipped and scanned by a forked child.

A read begun in a thread before the caller's imports (:mod:`collectors.kineto.early`) shares
the GIL with them: every call of that read that releases the GIL (each gunzip piece, each
scan, each numpy operation on a chunk's columns) waits for the importing thread to let go of
it again, and on the 300 MB benchmark trace the thread got through 13 of its 110 chunks in the
0.33 s of imports (51 while this process slept instead).  :class:`ScanProcess` forks a child
that runs :func:`~collectors.kineto.stream.stream_chunks` (with its scanning thread) in a
process of its own, while the caller imports; each chunk is pickled into an anonymous shared
mapping made before the fork, and its place announced through a pipe.  :meth:`ScanProcess.
chunks` yields them, in order, to the rows stage when the caller wants the file; the mapping's
pages of the chunks taken are handed back as it goes.

The chunks are exactly those of the same call in this process (the child is a fork of it).
Anything the child cannot do, and any chunk that does not fit the mapping, ends the chunks
with :class:`~collectors.kineto.stream.Fallback`: the caller then reads the file itself.
Standard library only, beside the stream stage's own imports (the child is forked before
pandas is imported).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import struct
from collections.abc import Iterator
from pathlib import Path

from collectors.forking import Helper, fork_helper
from collectors.kineto.native import NativeChunk
from collectors.kineto.stream import Chunk, Fallback, stream_chunks

_RECORD = struct.Struct("<qq")
"""(offset, length) of a pickled chunk in the mapping; offset -1: fallback, -2: the end."""
_FALLBACK, _END = -1, -2
MIN_RESERVE = 64 << 20


def reserve_bytes(text_bytes: int) -> int:
    """Address space to map for a file of *text_bytes* of JSON: the pickled chunks take about
    0.8 byte per byte of text (229 MiB for the 300 MB trace); pages are only used as the child
    writes them."""
    return max(MIN_RESERVE, 2 * text_bytes)


class ScanProcess:
    """A forked child reading *path*'s chunks ahead of this process (module docstring).

    Raises:
        OSError: no shared mapping, pipe or fork here.
    """

    def __init__(self, path: Path, reserve: int) -> None:
        self._buf = mmap.mmap(-1, reserve)  # shared and anonymous: the child writes here
        try:
            self._helper: Helper | None = fork_helper(lambda fd: _child(path, self._buf, fd))
        except OSError:
            self._buf.close()
            raise
        self._freed = 0  # the mapping's bytes before this offset are handed back

    def chunks(self) -> Iterator[Chunk | NativeChunk]:
        """The file's chunks in order, as :func:`~collectors.kineto.stream.stream_chunks`
        yields them (the last one carries :attr:`~collectors.kineto.stream.Chunk.top`).

        Raises:
            Fallback: the child could not read the file in chunks, or failed.
        """
        helper = self._helper
        if helper is None:
            raise Fallback
        try:
            while True:
                off, n = _RECORD.unpack(_read_exactly(helper.read_fd, _RECORD.size))
                if off == _END:
                    break
                if off < 0:
                    raise Fallback
                chunk = _load(self._buf, off, n)
                self._hand_back(off + n)
                yield chunk
                del chunk
            _, code, _ = helper.join()
            if code != 0:
                raise Fallback
        finally:
            self.close()

    def _hand_back(self, upto: int) -> None:
        """Return the mapping's whole pages before *upto* to the system."""
        page, remove = mmap.PAGESIZE, getattr(mmap, "MADV_REMOVE", None)  # Linux
        end = upto // page * page
        if end > self._freed and remove is not None:
            with contextlib.suppress(OSError, ValueError):
                self._buf.madvise(remove, self._freed, end - self._freed)
            self._freed = end

    def close(self) -> None:
        """Stop the child (nothing once joined) and unmap the chunks."""
        if self._helper is not None:
            self._helper.stop()
            self._helper = None
        with contextlib.suppress(BufferError):
            self._buf.close()


_LEN = struct.Struct("<q")


def _put(buf: mmap.mmap, at: int, chunk: Chunk | NativeChunk) -> int:
    """Write *chunk* into *buf* at *at* — its pickle, then the data of its arrays (pickle's
    out-of-band buffers: copied once), each after its length; the bytes written, or -1 when
    they do not fit."""
    data: list[pickle.PickleBuffer] = []
    head = pickle.dumps(chunk, protocol=5, buffer_callback=data.append)
    parts: list[bytes | memoryview] = [head, *(b.raw() for b in data)]
    if at + sum(_LEN.size + len(x) for x in parts) > len(buf):
        return -1
    start = at
    for x in parts:
        _LEN.pack_into(buf, at, len(x))
        at += _LEN.size
        buf[at : at + len(x)] = x
        at += len(x)
    return at - start


def _load(buf: mmap.mmap, off: int, n: int) -> Chunk | NativeChunk:
    """The chunk :func:`_put` wrote at *off* (*n* bytes), its arrays copied out of *buf*."""
    parts: list[bytearray] = []
    end = off + n
    with memoryview(buf) as view:
        while off < end:
            (size,) = _LEN.unpack_from(buf, off)
            off += _LEN.size
            parts.append(bytearray(view[off : off + size]))
            off += size
    chunk: Chunk | NativeChunk = pickle.loads(parts[0], buffers=parts[1:])
    return chunk


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


def _child(path: Path, buf: mmap.mmap, fd: int) -> int:
    """The forked child: each chunk of *path* pickled into *buf*, its place written to *fd*."""
    at = 0
    end = _END
    try:
        for chunk in stream_chunks(path, lookahead=True):
            n = -1 if chunk is None else _put(buf, at, chunk)  # None: only in shared reads
            del chunk
            if n < 0:
                end = _FALLBACK
                break
            os.write(fd, _RECORD.pack(at, n))
            at += n
    except Exception:  # Fallback, InputError, anything: the caller reads the file itself
        end = _FALLBACK
    os.write(fd, _RECORD.pack(end, 0))
    os.close(fd)
    return 0
