"""Open an Nsight Systems SQLite export read-only and describe what it holds.

:class:`NsysDb` is the only place that talks to SQLite for the nsys reader.  It opens the file
through SQLAlchemy with a read-only URI (``file:...?mode=ro``), checks that the file is a whole
SQLite database and an nsys export, probes ``sqlite_master`` / ``PRAGMA table_info`` (tables are
created lazily, columns were added over the schema versions: ``docs/nsys.md``) and turns every
SQLite failure into a one-line :class:`~collectors.errors.InputError` naming the file.

Reads are columnar: :meth:`NsysDb.int_columns` runs one ``SELECT`` and returns one int64 numpy
array per column (NULL → ``-1``, absent optional column → all ``-1``; a cell that is not an
integer, which SQLite allows in any column, → ``-1`` too: the query is then run a second time
with a per-cell type test).  :meth:`NsysDb.valid_times` rejects the rows whose times cannot be
true and counts them per table and reason (:meth:`NsysDb.notes`, docs/reliability.md).  The
cells come through the ADBC SQLite driver as Arrow batches when ``adbc-driver-sqlite`` is
installed (no Python object per cell: about half the CPU time of the DB-API on 1M kernels,
docs/performance.md), else through the DB-API cursor of the SQLAlchemy connection; both open
the file read-only and give the same arrays (``tests/collectors/nsys/test_nsys_arrow_reads.py``).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from collectors.errors import InputError
from collectors.files import input_stat
from collectors.limits import TIME_LIMIT_NS

SQLITE_MAGIC = b"SQLite format 3\x00"
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
"""Export metadata: ``META_DATA_EXPORT`` from export schema 3.4, ``EXPORT_META_DATA`` before."""

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NOT_A_TIME = "start/end NULL, negative or not an integer"
END_BEFORE_START = "end before start"
OUT_OF_RANGE = "time beyond 2^62 ns"


class _NotIntegers(Exception):
    """A query meant to return integers returned another type (or its reader failed)."""


ARROW_ENV = "GPUSCOPE_NSYS_ARROW"
"""Set to ``0`` to read through the DB-API cursor even when the ADBC SQLite driver is installed."""


def use_arrow() -> bool:
    """Whether large integer reads go through the ADBC SQLite driver (``adbc-driver-sqlite``):
    installed, and not switched off with ``GPUSCOPE_NSYS_ARROW=0``."""
    if os.environ.get(ARROW_ENV, "1") == "0":
        return False
    return importlib.util.find_spec("adbc_driver_sqlite") is not None


def _decode_text(raw: bytes) -> str:
    # some exports hold non-UTF-8 bytes (TARGET_INFO_SYSTEM_ENV): never fail on them
    return raw.decode("utf-8", errors="replace")


def _header_problem(path: Path) -> str | None:
    """Why the file is not a whole SQLite database, or None (reads only the 100-byte header)."""
    try:
        size = input_stat(path, directory="is a directory, not an SQLite export").st_size
        with path.open("rb") as f:
            head = f.read(100)
    except InputError as e:
        return e.message
    except OSError as e:
        return f"cannot read file: {e.strerror or e}"
    if head[:16] != SQLITE_MAGIC:
        return (
            "not an SQLite file (expected an Nsight Systems export written by "
            "`nsys export --type sqlite`)"
        )
    if len(head) < 100:
        return "truncated SQLite file (shorter than its 100-byte header)"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    n_pages = int.from_bytes(head[28:32], "big")
    # the in-header size is valid when the change counter matches "version-valid-for"
    if head[24:28] == head[92:96] and n_pages and size < n_pages * page_size:
        return (
            f"truncated SQLite export: its header says {n_pages * page_size} bytes, the file has "
            f"{size}; copy or export it again"
        )
    return None


def _sqlite_message(err: BaseException) -> str:
    text = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
    low = text.lower()
    if "locked" in low or "busy" in low:
        return f"SQLite database is locked by another process ({text}); retry when it is released"
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return f"corrupt or truncated SQLite export ({text}); export it again"
    if "unable to open" in low:
        return f"cannot open SQLite file ({text})"
    return f"cannot read SQLite export ({text})"


class NsysDb:
    """A read-only nsys export: table/column probing, metadata, columnar reads.

    Use as a context manager; every SQLite error inside the ``with`` block (and in
    :meth:`errors`) becomes an :class:`InputError` naming the file.

    Raises:
        InputError: not readable, not SQLite, truncated, locked, corrupt, or not an nsys export.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 2.0) -> None:
        self.path = Path(path)
        problem = _header_problem(self.path)
        if problem:
            raise InputError(problem, path=self.path)
        uri = self.path.resolve().as_uri() + "?mode=ro"
        self._uri = uri
        self._arrow: Any = None

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s, check_same_thread=False)
            conn.text_factory = _decode_text
            return conn

        self._engine = sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)
        self._conn: sa.Connection | None = None
        self._columns: dict[str, tuple[str, ...]] = {}
        self.rejected: dict[tuple[str, str], int] = {}
        """``{(table, reason): rows}`` rejected by :meth:`valid_times` (and the readers)."""
        self.read: dict[str, int] = {}
        """``{table: rows}`` checked by :meth:`valid_times`."""
        self.missing_strings: dict[str, int] = {}
        """``{what: names}`` whose ``StringIds`` entry is missing (:mod:`.strings`)."""
        self.meta: dict[str, str] = {}
        self.tables: frozenset[str] = frozenset()
        try:
            with self.errors():
                self._conn = self._engine.connect()
                rows = self._dbapi().execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
                self.tables = frozenset(r[0] for r in rows)
            if not any(t in self.tables for t in META_TABLES):
                raise InputError(
                    "SQLite file is not an Nsight Systems export (no META_DATA_EXPORT or "
                    "EXPORT_META_DATA table)",
                    path=self.path,
                )
            with self.errors():
                self.meta = self._read_meta()
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> NsysDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection and the engine."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._arrow is not None:
            self._arrow.close()
            self._arrow = None
        self._engine.dispose()

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn SQLite/SQLAlchemy errors raised in the block into one-line InputErrors."""
        try:
            yield
        except (sqlite3.Error, sa.exc.DBAPIError) as err:
            raise InputError(_sqlite_message(err), path=self.path) from None

    def _dbapi(self) -> Any:
        assert self._conn is not None, "NsysDb is closed"
        return self._conn.connection.dbapi_connection

    # -- probing -----------------------------------------------------------------------------
    def has(self, table: str) -> bool:
        """True when the export has this table (it may still be empty)."""
        return table in self.tables

    def columns(self, table: str) -> tuple[str, ...]:
        """Column names of *table* (empty when the table is absent)."""
        if table not in self.tables:
            return ()
        if table not in self._columns:
            _check_ident(table)
            with self.errors():
                rows = self._dbapi().execute(f"PRAGMA table_info({table})").fetchall()
            self._columns[table] = tuple(r[1] for r in rows)
        return self._columns[table]

    def require(self, table: str, columns: Sequence[str]) -> None:
        """Raise InputError naming the first required column missing from *table*."""
        have = set(self.columns(table))
        missing = [c for c in columns if c not in have]
        if missing:
            raise InputError(
                f"table {table} lacks required column(s) {', '.join(missing)} "
                f"(export schema {self.schema_version or 'unknown'})",
                path=self.path,
            )

    def require_table(self, table: str) -> None:
        """Raise InputError when a required table is absent."""
        if table not in self.tables:
            raise InputError(
                f"required table {table} is missing from this Nsight Systems export",
                path=self.path,
            )

    def _read_meta(self) -> dict[str, str]:
        table = next(t for t in META_TABLES if t in self.tables)
        self.require(table, ("name", "value"))
        meta: dict[str, str] = {"_table": table}
        for name, value in self._dbapi().execute(f"SELECT name, value FROM {table}"):
            if name is not None and name not in meta:
                meta[str(name)] = "" if value is None else str(value)
        return meta

    @property
    def schema_version(self) -> str | None:
        """``EXPORT_SCHEMA_VERSION`` (e.g. ``3.16.1``), the key for schema-dependent features."""
        return self.meta.get("EXPORT_SCHEMA_VERSION")

    @property
    def product_version(self) -> str | None:
        """``EXPORT_PRODUCT_VERSION`` (the nsys release, e.g. ``2024.6.2.25``)."""
        return self.meta.get("EXPORT_PRODUCT_VERSION")

    # -- reads -------------------------------------------------------------------------------
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query (small tables only)."""
        with self.errors():
            return self._dbapi().execute(sql, tuple(params)).fetchall()

    def int_columns(
        self,
        table: str,
        columns: Mapping[str, str],
        *,
        where: str | None = None,
    ) -> dict[str, np.ndarray]:
        """Read integer columns of *table* in one pass: ``{out_name: int64 array}``.

        *columns* maps output names to source column names; a source column the table lacks
        yields an all ``-1`` array, NULL cells read as ``-1``.  Rows come in rowid order.
        """
        have = set(self.columns(table))
        present = {k: v for k, v in columns.items() if v in have}
        for v in present.values():
            _check_ident(v)
        cond = f" WHERE {where}" if where else ""
        if present:
            exprs = ", ".join(f"ifnull({v}, -1)" for v in present.values())
            try:
                data = self._int_matrix(f"SELECT {exprs} FROM {table}{cond} ORDER BY rowid")
            except _NotIntegers:  # a cell of another type somewhere: test every cell's type
                exprs = ", ".join(
                    f"CASE WHEN typeof({v}) = 'integer' THEN {v} ELSE -1 END"
                    for v in present.values()
                )
                sql = f"SELECT {exprs} FROM {table}{cond} ORDER BY rowid"
                try:
                    data = self._int_matrix(sql)
                except _NotIntegers as err:
                    raise InputError(
                        _sqlite_message(err.__cause__ or err), path=self.path
                    ) from None
        else:
            n = self.rows(f"SELECT count(*) FROM {table}{cond}")[0][0]
            data = np.empty((int(n), 0), dtype=np.int64)
        idx = {k: i for i, k in enumerate(present)}
        return {
            k: data[:, idx[k]] if k in idx else np.full(data.shape[0], -1, dtype=np.int64)
            for k in columns
        }

    def _int_matrix(self, sql: str) -> np.ndarray:
        """An (n_rows, n_columns) int64 matrix of a query whose cells are all integers."""
        """Raises :class:`_NotIntegers` when a cell is not an integer (or, through ADBC, when
        the reader fails: the caller retries with a per-cell type test)."""
        if use_arrow():
            return self._arrow_matrix(sql)
        try:
            with self.errors():
                cur = self._dbapi().execute(sql)
                width = len(cur.description)
                # streaming the cells into numpy skips the list of row tuples (~20% less CPU
                # than fetchall + np.array, and no per-row objects kept alive)
                flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as err:
            raise _NotIntegers from err
        return flat.reshape(-1, width)

    def _arrow_matrix(self, sql: str) -> np.ndarray:
        """:meth:`_int_matrix` through the ADBC SQLite driver (Arrow batches, no Python object
        per cell), on a second read-only connection opened on first use."""
        import adbc_driver_manager
        import adbc_driver_sqlite.dbapi as adbc_sqlite
        import pyarrow as pa

        try:
            if self._arrow is None:
                self._arrow = adbc_sqlite.connect(self._uri)
            cur = self._arrow.cursor()
            try:
                cur.execute(sql)
                table = cur.fetch_arrow_table()
            finally:
                cur.close()
        except (adbc_driver_manager.Error, OSError, pa.ArrowException) as err:
            # a corrupt page (pyarrow's OSError "database disk image is malformed"), or a cell
            # whose type differs from the column's first batch: the caller retries cell by cell
            raise _NotIntegers from err
        if table.num_rows == 0:
            return np.empty((0, table.num_columns), dtype=np.int64)
        out = np.empty((table.num_rows, table.num_columns), dtype=np.int64)
        for i, col in enumerate(table.columns):
            if not pa.types.is_integer(col.type) or col.null_count:
                raise _NotIntegers(str(col.type))
            out[:, i] = col.to_numpy()
        return out

    def valid_times(
        self,
        table: str,
        cols: dict[str, np.ndarray],
        start: str = "start_ns",
        end: str | None = "end_ns",
        more: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """*cols* (one table's rows) without the rows whose *start* (and *end*) are not times
        in [0, :data:`TIME_LIMIT_NS`] with ``end >= start``, or that a mask of *more*
        (``{reason: bad rows}``) rejects; each rejected row is counted once, under its first
        reason, in :attr:`rejected`."""
        s = cols[start]
        e = cols[end] if end is not None else s
        n = len(s)
        self.read[table] = self.read.get(table, 0) + n
        if not n:
            return cols
        reasons = [
            (NOT_A_TIME, (s < 0) | (e < 0)),
            (END_BEFORE_START, e < s),
            (OUT_OF_RANGE, np.maximum(s, e) > TIME_LIMIT_NS),
            *(more or {}).items(),
        ]
        bad = np.zeros(n, dtype=bool)
        for reason, mask in reasons:
            new = mask & ~bad
            k = int(new.sum())
            if k:
                self.rejected[table, reason] = self.rejected.get((table, reason), 0) + k
                bad |= new
        if not bad.any():
            return cols
        keep = ~bad
        return {k: v[keep] for k, v in cols.items()}

    def count_rejected(self, table: str, reason: str, rows: int, of: int) -> None:
        """Count *rows* of *table* (of *of* read) rejected for *reason* by a reader."""
        self.read[table] = self.read.get(table, 0) + of
        if rows:
            self.rejected[table, reason] = self.rejected.get((table, reason), 0) + rows

    def notes(self) -> list[str]:
        """One line per table with rejected rows, and one for names missing from
        ``StringIds``."""
        out = []
        for table in dict.fromkeys(t for t, _ in self.rejected):
            items = sorted((-k, r) for (t, r), k in self.rejected.items() if t == table)
            total = -sum(k for k, _ in items)
            why = ", ".join(f"{-k} {r}" for k, r in items)
            out.append(f"rejected {total} of {self.read.get(table, total)} rows of {table} ({why})")
        if self.missing_strings:
            what = ", ".join(f"{k} {w}" for w, k in self.missing_strings.items())
            out.append(f"names missing from StringIds ({what}): named <missing string ID>")
        return out

    def enum_labels(self, enum: str, fallback: Mapping[int, str]) -> dict[int, str]:
        """``{id: label}`` of an ``ENUM_*`` table, over *fallback* (2022.2 exports have none)."""
        out = dict(fallback)
        if enum in self.tables and {"id", "label"} <= set(self.columns(enum)):
            for i, label in self.rows(f"SELECT id, label FROM {enum}"):
                if i is not None and label:
                    out[int(i)] = str(label)
        return out


def _check_ident(name: str) -> None:
    # table and column names come from our own constants or from PRAGMA output; refuse
    # anything that would need quoting rather than splice it into SQL
    if not _IDENT.match(name):
        raise ValueError(f"unexpected SQL identifier {name!r}")
