"""The Kineto reader's checks (docs/reliability.md): impossible times, wrong types and deep
nesting either reject the rows they are on, with a note naming how many and why, or (when
nothing usable remains) the file, with one line; never a wrong number, a warning or a crash.

Each case is a small three-step trace with one event broken; the note and the summary are read
back from ``gpuscope analyze --json`` through the validating summary reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.errors import InputError
from collectors.kineto import read_kineto
from tests.support.cli_run import check_contract, rank_notes, run_cli
from tests.support.kineto_events import Event, kernel, small_training_step, write_trace

GEMM_ROW = 3
"""Position of the first step's gemm kernel in :func:`_events`."""


def _events() -> list[Event]:
    return [*small_training_step(1, 0), *small_training_step(2, 100), *small_training_step(3, 200)]


def _broken(**fields: Any) -> list[Event]:
    events = _events()
    events[GEMM_ROW] = {**events[GEMM_ROW], **fields}
    return events


def _analyze(tmp_path: Path, events: list[Event] | str, name: str = "t.json") -> Any:
    p = tmp_path / name
    if isinstance(events, str):
        p.write_text(events)
    else:
        write_trace(p, events)
    out = tmp_path / "s.json"
    res = run_cli(["analyze", p, "--json", out, "--no-cache"])
    return res, check_contract(res, [p], out), p


def _gemm_total(summary: Any) -> int:
    (row,) = [k for k in summary["ranks"][0]["kernel_summary"] if k["name"] == "gemm_kernel"]
    return int(row["total_ns"])


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"dur": -1e9}, "negative dur"),
        ({"ts": 2**60}, "outside"),
        ({"dur": 2**63}, "outside"),
        ({"ts": -5}, "outside"),
        ({"ts": None}, "missing"),
        ({"dur": None}, "missing"),
        ({"ts": "yesterday"}, "missing"),
        ({"dur": True}, "missing"),
        ({"name": 12345}, "name"),
    ],
    ids=[
        "negative-dur",
        "ts-2^60-us",
        "dur-2^63",
        "negative-ts",
        "ts-null",
        "dur-null",
        "ts-text",
        "dur-bool",
        "name-not-text",
    ],
)
def test_a_bad_kernel_row_is_rejected_with_a_note(
    tmp_path: Path, fields: dict[str, Any], reason: str
) -> None:
    res, summary, _ = _analyze(tmp_path, _broken(**fields))
    assert res.rc == 0
    assert _gemm_total(summary) == 3000  # step 2's (the window ends where step 3 starts)
    assert all(k["name"] for k in summary["ranks"][0]["kernel_summary"])
    (note,) = rank_notes(summary)
    assert note.startswith("rejected 1 of 21 activity events") and reason in note, note
    assert f"rank 0: note: {note}" in " ".join(res.out.split())  # the console wraps lines


def test_the_unbroken_trace_has_two_gemm_kernels_in_its_window(tmp_path: Path) -> None:
    res, summary, _ = _analyze(tmp_path, _events())
    assert res.rc == 0 and _gemm_total(summary) == 2 * 3000 and not rank_notes(summary)


def test_the_window_and_percentages_stay_possible_after_a_huge_timestamp(tmp_path: Path) -> None:
    _, summary, _ = _analyze(tmp_path, _broken(ts=2**60))
    rank = summary["ranks"][0]
    assert rank["window"]["start_ns"] == 0
    assert 0 <= rank["temporal"]["compute_pct"] <= 100


def test_a_file_with_no_usable_row_is_one_input_error(tmp_path: Path) -> None:
    events = [kernel("k", -1, 5), kernel("k", 1, -5), kernel("k", None, 1)]
    res, _, p = _analyze(tmp_path, events)
    assert res.rc == 2
    assert "no usable events" in res.err and "3 activity events" in res.err
    with pytest.raises(InputError, match="rejected"):
        read_kineto(p)


@pytest.mark.parametrize("where", ["args", "event"])
def test_json_nested_deeper_than_the_decoder_allows_is_one_input_error(
    tmp_path: Path, where: str
) -> None:
    deep = "[" * 5000 + "]" * 5000
    events = json.dumps({"traceEvents": _events()})
    extra = (
        '{"ph":"X","cat":"cpu_op","name":"x","ts":1,"dur":1,"pid":1,"tid":1,'
        f'"args":{{"Input Dims":{deep}}}}}'
        if where == "args"
        else deep
    )
    res, _, _ = _analyze(tmp_path, events[:-2] + ", " + extra + "]}")
    assert res.rc == 2
    assert "nested" in res.err


def test_collective_metadata_nested_too_deeply_is_dropped_with_a_note(tmp_path: Path) -> None:
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    events = _events()
    events[GEMM_ROW] = {
        **events[GEMM_ROW],
        "args": {**events[GEMM_ROW]["args"], "Collective name": "allreduce", "dtype": deep},
    }
    res, summary, p = _analyze(tmp_path, events)
    assert res.rc == 0
    trace = read_kineto(p)
    assert trace.gpu["comm_args"].isna().all()
    assert any("nested" in n for n in rank_notes(summary))


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2], 2**70, "main", 1.5], ids=repr)
@pytest.mark.parametrize("field", ["pid", "tid"])
def test_an_odd_pid_or_tid_is_unknown(tmp_path: Path, field: str, value: Any) -> None:
    events = _events()
    for i in (1, 2, 3):  # the op, its launch call, its kernel
        events[i] = {**events[i], field: value}
    res, summary, p = _analyze(tmp_path, events)
    assert res.rc == 0 and not rank_notes(summary)
    trace = read_kineto(p)
    assert (trace.host[field] == -1).sum() == 2


def test_odd_args_values_are_unknown(tmp_path: Path) -> None:
    """Lists, objects, huge and negative numbers where ids and counts are expected: -1 / NaN."""
    events = _events()
    events[GEMM_ROW]["args"].update(
        {
            "correlation": {"a": 1},
            "External id": [3],
            "grid": [1, [2], 3],
            "block": [-4, 1, 1],
            "registers per thread": 2**70,
            "shared memory": -8,
            "est. achieved occupancy %": 250,
            "blocks per SM": -1.5,
            "warps per SM": True,
        }
    )
    events[6]["args"].update({"bytes": -100, "grid": "x", "device": -3})  # step 1's add kernel
    res, _, p = _analyze(tmp_path, events)
    assert res.rc == 0
    g = read_kineto(p).gpu
    gemm, add = g.iloc[0], g.iloc[1]
    assert (gemm["name"], add["name"]) == ("gemm_kernel", "add_kernel")
    for col in ("correlation", "external_id", "grid_x", "grid_y", "grid_z", "block_x"):
        assert gemm[col] == -1, col
    assert (gemm["registers_per_thread"], gemm["shared_mem_bytes"]) == (-1, -1)
    assert np.isnan(
        [gemm["est_achieved_occupancy"], gemm["blocks_per_sm"], gemm["warps_per_sm"]]
    ).all()
    assert (add["bytes"], add["grid_x"], add["device"]) == (-1, -1, -1)


def test_a_step_number_beyond_int64_is_not_a_step(tmp_path: Path) -> None:
    events = _events()
    events[0] = {**events[0], "name": "ProfilerStep#" + "9" * 30}
    res, summary, _ = _analyze(tmp_path, events)
    assert res.rc == 0
    assert summary["ranks"][0]["window"]["steps"] == [2]
    assert any("ProfilerStep" in n for n in rank_notes(summary))


@pytest.mark.parametrize(
    "top",
    [
        {"distributedInfo": {"rank": {"a": 1}}},
        {"distributedInfo": {"rank": -3, "world_size": 0}},
        {"distributedInfo": {"rank": 2**70}},
        {"distributedInfo": [1]},
        {"deviceProperties": [{"id": 0, "numSms": -3, "name": {"a": 1}}]},
        {"deviceProperties": [{"id": 2**70, "numSms": 2**70}]},
        {"deviceProperties": {"id": 0}},
        {"baseTimeNanoseconds": 2**70},
        {"baseTimeNanoseconds": -5},
    ],
    ids=repr,
)
def test_odd_top_level_keys_are_unknown(tmp_path: Path, top: dict[str, Any]) -> None:
    p = write_trace(tmp_path / "t.json", {"traceEvents": _events(), **top})
    out = tmp_path / "s.json"
    res = run_cli(["analyze", p, "--json", out, "--no-cache"])
    summary = check_contract(res, [p], out)
    assert res.rc == 0
    trace = read_kineto(p)
    assert trace.rank == 0
    assert trace.meta.base_time_ns is None or 0 <= trace.meta.base_time_ns < 2**63
    for d in trace.meta.devices:
        assert 0 <= d.id < 2**31 and (d.sm_count is None or d.sm_count > 0)
        assert d.name is None or isinstance(d.name, str)
    assert summary["ranks"][0]["rank"] == 0


def test_counter_samples_with_bad_times_or_values_are_rejected(tmp_path: Path) -> None:
    counters = [
        {"ph": "C", "name": "mem", "pid": 1, "ts": t, "args": {"mem": v}}
        for t, v in ((10, 1), (None, 2), (-4, 3), (2**70, 4), (20, 10**400), (30, True))
    ]
    p = write_trace(tmp_path / "t.json", [*_events(), *counters])
    trace = read_kineto(p)
    c = trace.counters
    assert c["ts_ns"].tolist() == [10_000]
    assert c["value"].tolist() == [1.0]
    assert any("counter" in n for n in trace.meta.extra["notes"])


def test_a_trace_of_counters_only_is_read_without_an_internal_error(tmp_path: Path) -> None:
    # found by tests/fuzz: no activity row at all made the empty host table look up a flag
    # table never built (KeyError: 'launch')
    counters = [{"ph": "C", "name": "mem", "pid": 100, "ts": 0, "args": {"mem": 0.0}}]
    res, summary, _ = _analyze(tmp_path, counters)
    assert res.rc == 0 and len(summary["ranks"]) == 1
    assert read_kineto(tmp_path / "t.json").host.empty


def test_a_memory_sample_on_a_device_id_beyond_int64_is_on_an_unknown_device(
    tmp_path: Path,
) -> None:
    # found by tests/collectors/kineto/test_kineto_native.py: the id reached an int64 column
    # and the reader crashed (OverflowError) instead of reading the sample
    memory = [
        {"ph": "i", "name": "[memory]", "ts": t, "args": {"Total Allocated": 5, "Device Id": d}}
        for t, d in ((10, 2**63), (11, 3), (12, -(2**63) - 1))
    ]
    p = write_trace(tmp_path / "t.json", [*_events(), *memory])
    c = read_kineto(p).counters
    assert c["device"].tolist() == [-1, 3, -1]
    assert c["value"].tolist() == [5.0, 5.0, 5.0]
