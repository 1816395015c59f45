"""Fuzzing the Nsight Systems reader through ``gpuscope analyze --json`` (docs/reliability.md).

Cases: a small export with the real table layout (:mod:`support.nsys_exports`) whose cells are
set to odd values (text in a time column, NULL where nsys never writes one, huge or negative
integers, infinities, dangling string ids), and real or small exports with broken bytes
(SQLite pages torn, flipped or cut).  Each case exits 0 with a JSON summary the validating
reader accepts, or exits 2 with one line naming the file.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import nsys_exports as nx
from tests.support.env import SHARED_DATA
from tests.support.fuzzing import byte_mutations, fuzz_settings, mutate_bytes, run_case, weird

READER = "nsys"
TABLES = (nx.KERNEL, nx.RUNTIME, nx.NVTX, nx.MEMORY, "StringIds", "TARGET_INFO_GPU")
REAL = sorted((SHARED_DATA / "nsys").glob("*.sqlite"))


@functools.cache
def _base(tmp: Path) -> bytes:
    return nx.small_export(tmp / "base.sqlite").read_bytes()


def _sqlite_value(v: Any) -> Any:
    """*v* as SQLite can store it (beyond 64-bit integers as text, lists/objects as JSON)."""
    if isinstance(v, bool) or v is None or isinstance(v, (float, str)):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**63 else str(v)
    return json.dumps(v)


def _analyze(d: Path, export: Path) -> None:
    out = d / "summary.json"
    run_case(READER, ["analyze", export, "--json", out, "--no-cache"], [export], out)


@fuzz_settings(40)
@given(data=st.data())
def test_an_export_with_odd_cells_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    d = tmp_path_factory.mktemp("ns")
    p = d / "t.sqlite"
    p.write_bytes(_base(tmp_path_factory.getbasetemp()))
    con = sqlite3.connect(p)
    try:
        for _ in range(data.draw(st.integers(1, 4), label="edits")):
            table = data.draw(st.sampled_from(TABLES), label="table")
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if not cols or not n:
                continue
            col = data.draw(st.sampled_from(cols), label="column")
            row = data.draw(st.integers(1, n), label="row")
            value = _sqlite_value(data.draw(weird(), label="value"))
            if isinstance(value, float) and math.isnan(value):
                value = None
            con.commit()
            con.close()
            nx.relax(p, table)  # NULL and any type allowed
            con = sqlite3.connect(p)
            con.execute(
                f'UPDATE {table} SET "{col}" = ? WHERE rowid IN '
                f"(SELECT rowid FROM {table} LIMIT 1 OFFSET ?)",
                (value, row - 1),
            )
        con.commit()
    finally:
        con.close()
    _analyze(d, p)


@fuzz_settings(40)
@given(real=st.booleans(), mutations=byte_mutations())
def test_an_export_with_broken_bytes_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, real: bool, mutations: Any
) -> None:
    d = tmp_path_factory.mktemp("nb")
    src = REAL[0].read_bytes() if real and REAL else _base(tmp_path_factory.getbasetemp())
    p = d / "t.sqlite"
    p.write_bytes(mutate_bytes(src, mutations))
    _analyze(d, p)
