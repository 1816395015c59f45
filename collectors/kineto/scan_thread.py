"""The stream stage's scanning thread: chunks scanned natively beside the caller's work.

:func:`collectors.kineto.stream.stream_chunks` with ``lookahead`` hands each chunk to an
:class:`AheadScanner` and, while it is scanned, yields the chunk before it and gunzips the text
after it (:func:`gunzip_ahead`).  The native scan releases the GIL for its parse
(:mod:`collectors.kineto.native`), so the two run on two CPUs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from queue import SimpleQueue

from collectors.kineto.native import NativeChunk
from collectors.kineto.native import scan as native_scan


class AheadScanner:
    """One worker thread that scans chunks natively, one at a time (:func:`native_scan`
    releases the GIL for the parse, so it runs beside the caller's Python work)."""

    def __init__(self) -> None:
        self._jobs: SimpleQueue[tuple[bytes, int, bool] | None] = SimpleQueue()
        self._done: SimpleQueue[tuple[NativeChunk | None, BaseException | None]] = SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="gpuscope-scan", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            text, stop, tail = job
            try:
                self._done.put((native_scan(text, 0, stop, tail=tail), None))
            except BaseException as e:  # raised by result(), in the caller's thread
                self._done.put((None, e))

    def submit(self, text: bytes, stop: int, *, tail: bool = False) -> None:
        """Scan ``text[:stop]`` (the chunk's events; *tail*: up to the array's ``]``)."""
        self._jobs.put((text, stop, tail))

    def result(self) -> NativeChunk | None:
        """The chunk of the last :meth:`submit` (None: declined), once scanned."""
        chunk, error = self._done.get()
        if error is not None:
            raise error
        return chunk

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()


def gunzip_ahead(pieces: Iterator[bytes], chunk_bytes: int) -> list[bytes]:
    """The next pieces of text, about one chunk's worth (fewer at the end of the text)."""
    out: list[bytes] = []
    got = 0
    while got < chunk_bytes:
        piece = next(pieces, None)
        if piece is None:
            break
        out.append(piece)
        got += len(piece)
    return out
