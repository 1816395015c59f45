"""The nccl-tests reader's checks (docs/reliability.md): impossible result rows (time ≤ 0 or
infinite, negative or infinite bandwidth, sizes outside int64) are left out with a warning, a
``-J`` document of the wrong shape is one input error, ``--json`` always writes valid JSON, and
an unreadable log's error is printed once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from collectors.nccl_tests import read_nccl_tests
from tests.support.cli_run import CliResult, check_contract, run_cli
from tests.support.env import shared_path

LOG = "superbench_a100-sxm4-40gb_1node_8gpu_allreduce.log"
LINE = (
    "     1048576        262144   float     sum    74.78   14.02   24.54    N/A    76.17"
    "   13.77   24.09    N/A"
)
FIRST = "           0             0   float     sum    35.20    0.00    0.00    N/A    34.05"


def _text_log(tmp_path: Path, old: str = "", new: str = "", line: str = LINE) -> Path:
    text = shared_path("nccl-tests", LOG).read_text()
    assert line in text
    p = tmp_path / "all_reduce.log"
    p.write_text(text.replace(line, line.replace(old, new)) if old else text)
    return p


def _json_log(tmp_path: Path, **change: Any) -> Path:
    result = {
        "size": 1048576,
        "count": 262144,
        "type": "float",
        "redop": "sum",
        "root": -1,
        "out_of_place": {"time": 100.0, "alg_bw": 10.49, "bus_bw": 10.49, "nwrong": 0},
        "in_place": {"time": 100.0, "alg_bw": 10.49, "bus_bw": 10.49, "nwrong": 0},
    }
    doc: dict[str, Any] = {"results": [result, {**result, "size": 2097152, "count": 524288}]}
    doc["results"][1]["out_of_place"] = {"time": 200.0, "alg_bw": 10.49, "bus_bw": 10.49}
    doc["results"][1]["in_place"] = {"time": 200.0, "alg_bw": 10.49, "bus_bw": 10.49}
    doc["nranks"] = 2
    for key, value in change.items():
        if key.startswith("r0_"):
            result[key[3:]] = value
        elif key.startswith("oop_"):
            result["out_of_place"] = {**result["out_of_place"], key[4:]: value}
        else:
            doc[key] = value
    p = tmp_path / "all_reduce_perf.json"
    p.write_text(json.dumps(doc))
    return p


def _run(p: Path) -> tuple[CliResult, Any]:
    out = p.parent / "out.json"
    res = run_cli(["nccl-tests", p, "--json", out])
    check_contract(res, [p])
    doc = msgspec.json.decode(out.read_bytes()) if res.rc == 0 else None  # strict: no NaN
    return res, doc


def _peak_times(doc: Any) -> list[float]:
    return [r["time_us"] for r in doc["peak"] if r["time_us"] is not None]


@pytest.mark.parametrize(
    ("old", "new", "line", "why"),
    [
        ("74.78", " 0.00", LINE, "time is zero"),
        ("74.78", "  inf", LINE, "time is zero"),
        ("74.78", "1e999", LINE, "time is zero"),
        ("35.20", "-35.20", FIRST, "time is zero"),
        ("14.02", "-14.02", LINE, "bandwidth negative"),
        ("24.54", "  inf", LINE, "bandwidth negative"),
        ("     1048576", "99999999999999999999", LINE, "size or count"),
        ("262144", "99999999999999999999", LINE, "size or count"),
        ("     1048576", "    -1048576", LINE, "size or count"),
    ],
    ids=[
        "time-0",
        "time-inf",
        "time-1e999",
        "time-negative",
        "algbw-negative",
        "busbw-inf",
        "size-2^66",
        "count-2^66",
        "size-negative",
    ],
)
def test_an_impossible_text_row_is_left_out_with_a_warning(
    tmp_path: Path, old: str, new: str, line: str, why: str
) -> None:
    p = _text_log(tmp_path, old, new, line)
    res, doc = _run(p)
    assert res.rc == 0
    assert why in res.err and "left out" in " ".join(res.out.split())
    (log,) = read_nccl_tests(p)
    assert (log.rows["time_us"].dropna() > 0).all()
    assert all(t > 0 for t in _peak_times(doc))


def test_the_unbroken_log_keeps_every_row(tmp_path: Path) -> None:
    res, doc = _run(_text_log(tmp_path))
    assert doc is not None and len(doc["logs"][0]["rows"]) == 68
    assert res.rc == 0 and not res.err and "every row matches size/time" in res.out
    assert len(read_nccl_tests(_text_log(tmp_path))[0].rows) == 68


@pytest.mark.parametrize(
    "change",
    [
        {"oop_time": 0},
        {"oop_time": 1e-320},
        {"oop_time": float("inf")},
        {"oop_time": float("nan")},
        {"oop_time": "fast"},
        {"oop_alg_bw": -1.0},
        {"r0_size": 2**70},
        {"r0_size": "big"},
        {"r0_root": 2**70},
        {"r0_out_of_place": [1]},
        {"r0_type": [1]},
        {"nranks": "x"},
        {"nranks": -3},
        {"average_bus_bandwidth": "x"},
        {"test": [1]},
    ],
    ids=repr,
)
def test_odd_json_values_are_left_out_or_unknown(tmp_path: Path, change: dict[str, Any]) -> None:
    res, doc = _run(_json_log(tmp_path, **change))
    assert res.rc == 0
    for row in doc["logs"][0]["rows"]:
        assert row["time_us"] is None or row["time_us"] > 0
        assert row["size_bytes"] >= 0


@pytest.mark.parametrize(
    "results", [{"a": 1}, 5, [[1, 2]], [], "x"], ids=["object", "number", "lists", "empty", "text"]
)
def test_json_results_of_the_wrong_shape_are_one_input_error(tmp_path: Path, results: Any) -> None:
    p = _json_log(tmp_path, results=results)
    res, _ = _run(p)
    assert res.rc == 2


def test_json_with_no_usable_row_is_one_input_error(tmp_path: Path) -> None:
    p = tmp_path / "all_reduce_perf.json"
    p.write_text(json.dumps({"results": [{"size": -1, "count": 1}]}))
    res, _ = _run(p)
    assert res.rc == 2 and "no usable" in res.err


def test_json_nested_too_deeply_is_one_input_error(tmp_path: Path) -> None:
    p = tmp_path / "all_reduce_perf.json"
    p.write_text('{"results": ' + "[" * 5000 + "]" * 5000 + "}")
    res, _ = _run(p)
    assert res.rc == 2 and "nested" in res.err


def test_one_unreadable_log_prints_its_error_once(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("nothing here\n")
    res = run_cli(["nccl-tests", p])
    assert res.rc == 2
    assert len(res.err_lines) == 1 and str(p) in res.err_lines[0]


def test_an_unreadable_log_among_good_ones_is_named_once(tmp_path: Path) -> None:
    bad = tmp_path / "x.log"
    bad.write_text("nothing here\n")
    res = run_cli(["nccl-tests", _text_log(tmp_path), bad])
    assert res.rc == 2
    assert sum(str(bad) in line for line in res.err_lines) == 1
