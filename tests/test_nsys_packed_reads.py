"""NsysDb.int_columns with bit-packed groups returns exactly what the plain read returns,
whatever the values (NULL, negative, too wide for their field, 64-bit extremes)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.nsys_schema import NsysDb

COLS = ("a", "b", "c", "d")
PACKING = ((("a", 5), ("b", 3)), (("c", 40),))

value = st.one_of(
    st.none(),
    st.integers(-3, 40),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 31, 32, 2**39 - 1, 2**40, 0xFFFFFFFF]),
)


def _export(path: Path, rows: list[tuple]) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER, d INTEGER, k INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.tuples(value, value, value, value, st.integers(0, 2)), max_size=30))
def test_packed_read_equals_plain_read(tmp_path_factory, rows: list[tuple]) -> None:
    path = _export(tmp_path_factory.mktemp("p") / "t.sqlite", rows)
    columns = {c: c for c in COLS} | {"missing": "nosuchcolumn"}
    with NsysDb(path) as db:
        for where in (None, "k IN (0, 1)"):
            plain = db.int_columns("t", columns, where=where)
            packed = db.int_columns("t", columns, where=where, packed=PACKING)
            assert list(packed) == list(columns)
            for c in columns:
                np.testing.assert_array_equal(packed[c], plain[c])
    keep = [r for r in rows if r[4] in (0, 1)]
    want_a = [-1 if r[0] is None else r[0] for r in keep]
    assert plain["a"].tolist() == want_a
    assert (plain["missing"] == -1).all()
