"""Fuzzing the nccl-tests reader through ``gpuscope nccl-tests --json`` (docs/reliability.md).

Cases: real logs with result-row tokens replaced by odd ones, lines dropped or repeated, bytes
broken; and ``-J`` JSON documents with any field odd.  Each case exits 0 with strict JSON
(no NaN/Infinity) whose rows have a positive time (or none), non-negative sizes and bandwidths,
or exits 2 with one line naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.env import SHARED_DATA
from tests.support.fuzzing import byte_mutations, fuzz_settings, mutate_bytes, run_case, weird

READER = "nccl-tests"
LOGS = sorted((SHARED_DATA / "nccl-tests").glob("*.[lt][ox][gt]"))

_tokens = st.one_of(
    st.sampled_from(["0", "-1", "0.00", "-35.20", "inf", "nan", "N/A", "1e999", "1e-320"]),
    st.sampled_from(["99999999999999999999", "18446744073709551616", "9223372036854775808"]),
    st.text(alphabet="0123456789.-e", min_size=1, max_size=8),
    st.text(max_size=6),
)


def _check_json(out: Path) -> None:
    doc = msgspec.json.decode(out.read_bytes())  # strict: NaN or Infinity fail here
    for log in doc["logs"]:
        for r in log["rows"]:
            assert r["size_bytes"] >= 0 and r["count"] >= 0, r
            assert r["time_us"] is None or r["time_us"] > 0, r
            for k in ("algbw_gbps", "busbw_gbps", "algbw_expected", "busbw_expected"):
                assert r[k] is None or r[k] >= 0, (k, r)
    for r in doc["peak"]:
        assert r["time_us"] is None or r["time_us"] > 0, r
        assert r["busbw_gbps"] >= 0, r


def _run(d: Path, log: Path) -> None:
    out = d / "out.json"
    res, _ = run_case(READER, ["nccl-tests", log, "--json", out], [log], None)
    if res.rc == 0:
        _check_json(out)


@pytest.mark.skipif(not LOGS, reason="no nccl-tests log in the shared data")
@fuzz_settings(60)
@given(data=st.data())
def test_a_real_log_with_odd_tokens_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    src = LOGS[data.draw(st.integers(0, len(LOGS) - 1), label="log")]
    lines = src.read_text().splitlines()
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        toks = lines[i].split()
        kind = data.draw(st.sampled_from(["token", "token", "drop", "repeat", "cut"]))
        if kind == "token" and toks:
            toks[data.draw(st.integers(0, len(toks) - 1))] = data.draw(_tokens, label="token")
            lines[i] = "  ".join(toks)
        elif kind == "drop":
            del lines[i]
        elif kind == "repeat":
            lines.insert(i, lines[i])
        elif kind == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        if not lines:
            break
    d = tmp_path_factory.mktemp("nt")
    log = d / src.name
    log.write_text("\n".join(lines) + "\n")
    _run(d, log)


@pytest.mark.skipif(not LOGS, reason="no nccl-tests log in the shared data")
@fuzz_settings(30)
@given(i=st.integers(0, 20), mutations=byte_mutations())
def test_a_real_log_with_broken_bytes_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, i: int, mutations: Any
) -> None:
    src = LOGS[i % len(LOGS)]
    d = tmp_path_factory.mktemp("nb")
    log = d / src.name
    log.write_bytes(mutate_bytes(src.read_bytes(), mutations))
    _run(d, log)


def _odd(usual: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(usual, usual, weird())


_placement = st.fixed_dictionaries(
    {},
    optional={
        "time": _odd(st.floats(0.1, 1e4)),
        "alg_bw": _odd(st.floats(0, 500)),
        "bus_bw": _odd(st.floats(0, 500)),
        "nwrong": _odd(st.integers(0, 3)),
    },
)
_result = st.fixed_dictionaries(
    {"size": _odd(st.integers(0, 2**34)), "count": _odd(st.integers(0, 2**32))},
    optional={
        "type": _odd(st.sampled_from(["float", "half", "bfloat16"])),
        "redop": _odd(st.sampled_from(["sum", "none"])),
        "root": _odd(st.integers(-1, 8)),
        "out_of_place": _odd(_placement),
        "in_place": _odd(_placement),
    },
)


@fuzz_settings(60)
@given(
    doc=st.fixed_dictionaries(
        {"results": st.one_of(st.lists(_odd(_result), max_size=6), weird())},
        optional={
            "nranks": _odd(st.integers(1, 16)),
            "test": _odd(st.sampled_from(["all_reduce_perf", "all_gather_perf"])),
            "average_bus_bandwidth": _odd(st.floats(0, 500)),
        },
    )
)
def test_generated_json_output_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any]
) -> None:
    d = tmp_path_factory.mktemp("nj")
    log = d / "all_reduce_perf.json"
    log.write_text(json.dumps(doc))
    _run(d, log)
