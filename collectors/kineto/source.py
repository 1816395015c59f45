"""The source stage of the Kineto reader: a trace file's JSON text, gunzipped when it starts with
the gzip magic bytes (whatever its suffix; every member of a multi-member file, each member's
CRC and length checked), either whole (:func:`read_bytes`, which says what is wrong) or in
pieces (:func:`text_pieces`, for the chunked reader of :mod:`collectors.kineto.stream`, which
gives up with :class:`Fallback` instead); the pieces through ISA-L's gzip reader where its
wheel exists (faster than zlib, the same checks, the GIL released while it inflates), the whole
text through zlib.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collectors.errors import InputError

_GzipFile: Any
try:  # ISA-L's gzip reader: about 1.5x zlib's speed, the same checks, and the GIL released
    from isal.igzip import IGzipFile as _GzipFile
except ImportError:  # pragma: no cover - platforms without an isal wheel
    from gzip import GzipFile as _GzipFile

GZIP_MAGIC = b"\x1f\x8b"


class Fallback(Exception):
    """The text does not suit the chunked reader: read it whole
    (:func:`collectors.kineto.stream.whole_chunks`)."""


def read_bytes(path: Path) -> bytes:
    """The file's JSON text, gunzipped when it starts with the gzip magic bytes.

    Raises:
        InputError: missing/unreadable file, truncated or corrupt gzip data.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a Kineto trace file", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", path=path) from None
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(data, path)
    return data


def _gunzip(data: bytes, path: Path) -> bytes:
    """Decompress (possibly multi-member) gzip data; zlib checks each member's CRC and size.

    Raises:
        InputError: truncated or corrupt data.
    """
    parts = []
    rest = data
    while rest[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(wbits=31)
        try:
            parts.append(d.decompress(rest))
        except zlib.error as e:
            raise InputError(f"corrupt gzip data: {e}", path=path) from None
        if not d.eof:
            raise InputError("truncated gzip data (file cut short?)", path=path)
        rest = d.unused_data
    if rest.strip(b"\0"):
        raise InputError("corrupt gzip data: trailing bytes after the last member", path=path)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def text_pieces(path: Path, piece_bytes: int) -> Iterator[bytes]:
    """The file's JSON text in pieces of *piece_bytes*, gunzipped (every member, each
    member's CRC and length checked) when it starts with gzip magic.

    The gzip reader (ISA-L's, else the standard library's) releases the GIL while it inflates,
    so a read in one thread runs beside the Python work of another: ISA-L's streaming
    ``decompressobj`` held it (300 MB of text: 0.21 s holding the GIL, against 0.14 s without).

    Raises:
        Fallback: unreadable file, corrupt or truncated gzip data (or trailing bytes other
            than zeros after the last member).
    """
    try:
        with path.open("rb") as f:
            first = f.read(piece_bytes)
            if first[:2] != GZIP_MAGIC:
                while first:
                    yield first
                    first = f.read(piece_bytes)
                return
            f.seek(0)
            reader = _GzipFile(fileobj=f, mode="rb")
            while piece := reader.read(piece_bytes):
                yield piece
    except Exception:  # OSError, EOFError (truncated), BadGzipFile, zlib or ISA-L errors
        raise Fallback from None
