"""Bad nsys input → one-line InputError naming the file (and exit 2, no traceback, in the CLI)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.nsys import read_nsys
from collectors.nsys.schema import NsysDb
from tests.support.cli import gpuscope
from tests.support.env import REPO, shared_path

FUSER = "nsys2024.6.2.25__Fuser__report2.sqlite"


def _copy(tmp_path: Path, name: str = FUSER) -> Path:
    dst = tmp_path / "copy.sqlite"
    shutil.copyfile(shared_path("nsys", name), dst)
    dst.chmod(0o644)
    return dst


def _sql(path: Path, *statements: str) -> None:
    """Run *statements* on the SQLite file at *path* and commit."""
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        read_nsys(path)
    err = info.value
    assert err.path == str(path)
    assert "\n" not in str(err)
    return err


def test_file_that_is_not_sqlite_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "trace.sqlite"
    p.write_text('{"traceEvents": []}')
    assert "not an SQLite file" in _error(p).message


def test_sqlite_file_that_is_not_an_nsys_export_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "other.sqlite"
    _sql(p, "CREATE TABLE t (x INTEGER)")
    assert "not an Nsight Systems export" in _error(p).message


def test_truncated_export_is_rejected(tmp_path: Path) -> None:
    src = shared_path("nsys", FUSER)
    p = tmp_path / "truncated.sqlite"
    p.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    assert "truncated" in _error(p).message


def test_export_shorter_than_the_header_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "tiny.sqlite"
    p.write_bytes(b"SQLite format 3\x00" + b"\x10\x00")
    assert "truncated" in _error(p).message


def test_export_with_corrupt_pages_is_rejected(tmp_path: Path) -> None:
    p = _copy(tmp_path)
    data = bytearray(p.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = bytes(len(data) - page)  # every page but the schema page zeroed
    p.write_bytes(bytes(data))
    assert "corrupt" in _error(p).message


def test_export_locked_by_a_writer_is_rejected(tmp_path: Path) -> None:
    p = _copy(tmp_path)
    writer = sqlite3.connect(p, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError) as info:
            NsysDb(p, busy_timeout_s=0.1)
        assert "locked" in info.value.message
        assert "\n" not in str(info.value)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_unreadable_export_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _copy(tmp_path)
    p.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the open fail as it would for a user
        real_open = Path.open

        def deny(self: Path, *a: object, **k: object) -> object:
            if self == p:
                raise PermissionError(13, "Permission denied", str(p))
            return real_open(self, *a, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(Path, "open", deny)
    assert "Permission denied" in _error(p).message


def test_missing_required_column_is_named(tmp_path: Path) -> None:
    p = _copy(tmp_path)
    _sql(p, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName")
    msg = _error(p).message
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in msg and "demangledName" in msg


def test_missing_string_table_is_named(tmp_path: Path) -> None:
    p = _copy(tmp_path)
    _sql(p, "DROP TABLE StringIds")
    assert "StringIds" in _error(p).message


def test_unknown_extra_columns_are_ignored(tmp_path: Path) -> None:
    p = _copy(tmp_path)
    tables = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")
    _sql(p, *(f"ALTER TABLE {t} ADD COLUMN futureColumn2030 INTEGER DEFAULT 7" for t in tables))
    (a,) = read_nsys(p)
    (b,) = read_nsys(shared_path("nsys", FUSER))
    for name in ("gpu", "host", "annotations"):
        assert getattr(a, name).astype(str).equals(getattr(b, name).astype(str)), name


@pytest.mark.parametrize("case", ["not-sqlite", "not-nsys", "truncated"])
def test_cli_analyze_bad_export_exits_2_with_one_line(tmp_path: Path, case: str) -> None:
    p = tmp_path / f"{case}.sqlite"
    if case == "not-sqlite":
        p.write_text("hello")
    elif case == "not-nsys":
        _sql(p, "CREATE TABLE t (x INTEGER)")
    else:
        src = shared_path("nsys", FUSER)
        p.write_bytes(src.read_bytes()[:300_000])
    r = gpuscope("analyze", p, cwd=REPO)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(p) in lines[0], r.stderr
