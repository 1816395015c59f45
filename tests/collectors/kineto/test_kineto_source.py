"""The source stage's pieces (collectors.kineto.source.text_pieces) are exactly the text the
whole read gives, for plain and gzip files (several members, zero padding), and give up with
Fallback (the whole read then says what is wrong) wherever the whole read refuses the file."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.kineto.source import Fallback, read_bytes, text_pieces

TEXT = (
    b'{"traceEvents": ['
    + b",".join(b'{"ph": "X", "name": "k%d", "ts": %d, "dur": 1}' % (i, i) for i in range(20_000))
    + b"]}"
)
PIECE = 64 << 10


@pytest.fixture(autouse=True, params=["isal", "stdlib"])
def _reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """ISA-L's gzip reader, and the standard library's (where there is no isal wheel)."""
    if request.param == "stdlib":
        monkeypatch.setattr("collectors.kineto.source._GzipFile", gzip.GzipFile)


def _pieces(path: Path) -> list[bytes]:
    return list(text_pieces(path, PIECE))


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "name, data",
    [
        ("plain.json", TEXT),
        ("one.json.gz", gzip.compress(TEXT)),
        ("two-members.json.gz", gzip.compress(TEXT[:5000]) + gzip.compress(TEXT[5000:])),
        ("padded.json.gz", gzip.compress(TEXT) + b"\0" * 1000),
        ("random.json.gz", gzip.compress(os.urandom(300_000))),
    ],
)
def test_the_pieces_are_the_whole_reads_text(tmp_path: Path, name: str, data: bytes) -> None:
    path = _write(tmp_path, name, data)
    pieces = _pieces(path)
    assert b"".join(pieces) == read_bytes(path)
    assert all(0 < len(p) <= PIECE for p in pieces)


def _bad_crc(data: bytes) -> bytes:
    """*data* (one gzip member) with its CRC's first byte changed."""
    crc_at = len(data) - 8
    return data[:crc_at] + bytes([data[crc_at] ^ 0xFF]) + data[crc_at + 1 :]


@pytest.mark.parametrize(
    "name, data",
    [
        ("truncated.json.gz", gzip.compress(TEXT)[:-20]),
        ("cut-in-the-middle.json.gz", gzip.compress(TEXT)[: len(gzip.compress(TEXT)) // 2]),
        ("bad-crc.json.gz", _bad_crc(gzip.compress(TEXT))),
        ("trailing-garbage.json.gz", gzip.compress(TEXT) + b"garbage"),
        ("corrupt-deflate.json.gz", gzip.compress(TEXT)[:30] + b"\xff" * 64 + b"tail"),
    ],
)
def test_a_file_the_whole_read_refuses_makes_the_pieces_give_up(
    tmp_path: Path, name: str, data: bytes
) -> None:
    path = _write(tmp_path, name, data)
    with pytest.raises(InputError):
        read_bytes(path)
    with pytest.raises(Fallback):
        _pieces(path)


def test_a_missing_file_makes_the_pieces_give_up(tmp_path: Path) -> None:
    with pytest.raises(Fallback):
        _pieces(tmp_path / "missing.json.gz")


def test_zlib_agrees_that_the_bad_crc_case_is_corrupt() -> None:
    """The CRC case above is a real CRC error, not some other damage."""
    data = _bad_crc(gzip.compress(TEXT))
    d = zlib.decompressobj(wbits=31)
    with pytest.raises(zlib.error, match="incorrect data check"):
        d.decompress(data)
