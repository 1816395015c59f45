"""Fuzzing the Nsight Compute CSV reader through ``gpuscope roofline FILE --json``
(docs/reliability.md).

Cases: real ``ncu --csv`` exports with cells replaced by odd values (units such as ``parsec``,
``inf``, ``-1``, huge numbers, text, bare CRs and quotes), and with bytes broken.  Each case
exits 0 with strict JSON whose times, byte and FLOP counts, rates and percentages are
non-negative (shares at most 1), or exits 2 with one line naming the file.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.env import SHARED_DATA
from tests.support.fuzzing import byte_mutations, fuzz_settings, mutate_bytes, run_case

READER = "ncu"
CSVS = sorted(
    p for p in (SHARED_DATA / "ncu").glob("*.csv") if not p.name.endswith(("nvml.csv", "peaks.csv"))
)

_cells = st.one_of(
    st.sampled_from(["parsec", "inf", "-inf", "nan", "-1", "0", "1e999", "", "n/a", "\r", '"']),
    st.sampled_from(["99999999999999999999999", "1,0,0", "msecond", "byte/s", "%", "cycle"]),
    st.text(max_size=10),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def _non_negative(value: Any, key: str = "") -> None:
    """Every number of the roofline JSON is ≥ 0 and shares are at most 1."""
    if isinstance(value, dict):
        for k, v in value.items():
            _non_negative(v, str(k))
    elif isinstance(value, list):
        for v in value:
            _non_negative(v, key)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        assert math.isfinite(value) and value >= 0, (key, value)
        if key.endswith("share"):
            assert value <= 1 + 1e-9, (key, value)


def _run(d: Path, src: Path, data: bytes) -> None:
    f = d / src.name
    f.write_bytes(data)
    res, _ = run_case(READER, ["roofline", f, "--json"], [f], None)
    if res.rc == 0:
        _non_negative(msgspec.json.decode(res.out.encode()))


@pytest.mark.skipif(not CSVS, reason="no ncu CSV in the shared data")
@fuzz_settings(60)
@given(data=st.data())
def test_a_real_export_with_odd_cells_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    src = CSVS[data.draw(st.integers(0, len(CSVS) - 1), label="file")]
    rows = list(csv.reader(io.StringIO(src.read_text(encoding="utf-8-sig"), newline="")))
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        r = rows[data.draw(st.integers(0, len(rows) - 1), label="row")]
        if r:
            r[data.draw(st.integers(0, len(r) - 1), label="cell")] = data.draw(_cells)
    buf = io.StringIO()
    csv.writer(
        buf, quoting=data.draw(st.sampled_from([csv.QUOTE_ALL, csv.QUOTE_MINIMAL]))
    ).writerows(rows)
    _run(tmp_path_factory.mktemp("nc"), src, buf.getvalue().encode())


@pytest.mark.skipif(not CSVS, reason="no ncu CSV in the shared data")
@fuzz_settings(30)
@given(i=st.integers(0, 20), mutations=byte_mutations())
def test_a_real_export_with_broken_bytes_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, i: int, mutations: Any
) -> None:
    src = CSVS[i % len(CSVS)]
    _run(tmp_path_factory.mktemp("nb"), src, mutate_bytes(src.read_bytes(), mutations))
