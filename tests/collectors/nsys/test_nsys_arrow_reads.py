"""The two integer-read paths of NsysDb (ADBC/Arrow and the DB-API cursor) give identical traces."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from collectors.nsys import read_nsys
from collectors.nsys.schema import ARROW_ENV, NsysDb, use_arrow
from tests.support.env import SHARED_DATA, shared_path

HAVE_ADBC = importlib.util.find_spec("adbc_driver_sqlite") is not None
needs_adbc = pytest.mark.skipif(not HAVE_ADBC, reason="adbc-driver-sqlite is not installed")
FILES = sorted((SHARED_DATA / "nsys").glob("*.sqlite"))


def _read(path: Path, arrow: bool, monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.setenv(ARROW_ENV, "1" if arrow else "0")
    assert use_arrow() is arrow
    return read_nsys(path)


def test_arrow_path_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ARROW_ENV, "0")
    assert not use_arrow()


@needs_adbc
@pytest.mark.parametrize("name", [f.name for f in FILES] or ["none"], ids=lambda n: n[:16])
def test_arrow_and_dbapi_reads_give_identical_traces(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_path("nsys", name)
    a = _read(path, True, monkeypatch)
    b = _read(path, False, monkeypatch)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for table in ("gpu", "host", "annotations", "counters"):
            dx, dy = getattr(x, table), getattr(y, table)
            assert list(dx.dtypes) == list(dy.dtypes), table
            assert dx.astype(str).equals(dy.astype(str)), table


@pytest.mark.parametrize("arrow", [pytest.param(True, marks=needs_adbc), False])
def test_a_cell_that_is_not_an_integer_reads_as_unknown(
    arrow: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text, reals and blobs in an integer column are -1, like NULL (the readers then reject
    the rows whose times are unknown: docs/reliability.md), through both paths alike."""
    p = tmp_path / "text.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.execute("CREATE TABLE t (a INTEGER)")
    con.executemany(
        "INSERT INTO t VALUES (?)", [(1,), ("oops",), (2.5,), (b"\x00",), (None,), (3,)]
    )
    con.commit()
    con.close()
    monkeypatch.setenv(ARROW_ENV, "1" if arrow else "0")
    with NsysDb(p) as db:
        assert db.int_columns("t", {"a": "a"})["a"].tolist() == [1, -1, -1, -1, -1, 3]
