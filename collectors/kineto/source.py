"""The source stage of the Kineto reader: a trace file's JSON text, gunzipped when it starts with
the gzip magic bytes (whatever its suffix; every member of a multi-member file, each member's
CRC and length checked), either whole (:func:`read_bytes`, which says what is wrong) or in
pieces (:func:`text_pieces`, for the chunked reader of :mod:`collectors.kineto.stream`, which
gives up with :class:`Fallback` instead); the pieces through ISA-L's inflate where its wheel
exists (about 4x zlib's speed, the same checks), the whole text through zlib.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from collectors.errors import InputError

_inflate: ModuleType
try:  # ISA-L's inflate: about 4x zlib's speed, the same gzip checks (CRC, length, members)
    from isal import isal_zlib as _inflate
except ImportError:  # pragma: no cover - platforms without an isal wheel
    _inflate = zlib

GZIP_MAGIC = b"\x1f\x8b"
_GZIP_BLOCK = 1 << 16


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
    """The file's JSON text in pieces, gunzipped (every member) when it starts with gzip magic.

    Raises:
        Fallback: unreadable file, corrupt or truncated gzip data.
    """
    try:
        with path.open("rb") as f:
            first = f.read(piece_bytes)
            if first[:2] != GZIP_MAGIC:
                while first:
                    yield first
                    first = f.read(piece_bytes)
                return
            data = first + f.read()
    except OSError:
        raise Fallback from None
    while data[:2] == GZIP_MAGIC:  # one member after the other
        d = _inflate.decompressobj(wbits=31)
        pos = 0
        while not d.eof:
            block = d.unconsumed_tail
            if not block:  # feed the input in blocks: each call copies its unconsumed tail
                block = data[pos : pos + _GZIP_BLOCK]
                pos += len(block)
            try:
                out = d.decompress(block, piece_bytes)
            except (zlib.error, _inflate.error):
                raise Fallback from None
            if out:
                yield out
            elif not d.eof and not d.unconsumed_tail and pos >= len(data):
                raise Fallback  # truncated
        data = d.unused_data + data[pos:]
    if data.strip(b"\0"):
        raise Fallback
