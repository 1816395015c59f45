"""Malformed summaries never become a verdict, a stored run or a page (issue 19).

Each case failed before the validating reader (``collectors/summary/reader.py``): ``gate`` exited
0 "insufficient" on a wrong-typed ``kernel_summary``/``steps``/``temporal``, ``record`` stored
step times of −215793000 ns and 1.2e21 ns, ``report`` rendered ``ranks: ["a", "b"]``, and
NaN/Infinity/2^70 or wrong-typed sections gave internal errors.  Now every one exits 2 with
one line naming the file and the key, and ``record`` stores nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli.main import main
from tests.support.cli import gpuscope
from tests.support.summaries import sim_summary


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gpuscope: error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Any]:
    return sim_summary(np.random.default_rng(5))


WRONG_TYPED = {
    "kernel_summary": ("kernel_summary", {"name": "gemm"}),
    "steps": ("steps", {"0": 1}),
    "steps-row": ("steps", ["a", "b"]),
    "temporal": ("temporal", [1, 2]),
    "temporal-pct": ("temporal", {"idle_pct": "12%"}),
}


def _corrupt(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    bad = json.loads(json.dumps(doc))
    if key == "temporal" and isinstance(value, dict):
        bad["ranks"][0]["temporal"].update(value)
    else:
        bad["ranks"][0][key] = value
    return bad


@pytest.mark.parametrize("side", ["current", "baseline"])
@pytest.mark.parametrize("case", sorted(WRONG_TYPED))
def test_gate_with_a_wrong_typed_section_exits_2_naming_file_and_key(
    side: str, case: str, good: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, value = WRONG_TYPED[case]
    ok = _write(tmp_path / "ok.json", good)
    bad = _write(tmp_path / "bad.json", _corrupt(good, key, value))
    cur, base = (bad, ok) if side == "current" else (ok, bad)
    code, out, err = _run(capsys, "gate", cur, "--baseline", base)
    assert code == 2, out
    _one_line(err, str(bad), f"$.ranks[0].{key}")
    assert "INSUFFICIENT" not in out.upper()


@pytest.mark.parametrize("duration", [-215_793_000, 1.2e21, 2**70])
def test_record_refuses_impossible_step_times_and_stores_nothing(
    duration: float, good: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = json.loads(json.dumps(good))
    bad["ranks"][0]["steps"][3]["duration_ns"] = duration
    path = _write(tmp_path / "bad.json", bad)
    db = tmp_path / "h.db"
    code, out, err = _run(capsys, "record", path, "--store", db, "--name", "x")
    assert code == 2 and "Recorded" not in out
    _one_line(err, str(path), "$.ranks[0].steps[3].duration_ns")
    assert not db.exists()  # refused before the store was opened


def test_report_refuses_ranks_that_are_not_objects(
    good: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "bad.json", {**good, "ranks": ["a", "b"]})
    out_html = tmp_path / "r.html"
    code, _, err = _run(capsys, "report", path, "-o", out_html)
    assert code == 2
    _one_line(err, str(path), "$.ranks[0]")
    assert not out_html.exists()


NUMBERS = {
    "nan": ('"duration_ns": {}', "NaN"),
    "infinity": ('"duration_ns": {}', "Infinity"),
    "minus-infinity": ('"duration_ns": {}', "-Infinity"),
    "2^70": ('"duration_ns": {}', str(2**70)),
    "1e400": ('"duration_ns": {}', "1e400"),
}


def _with_number(doc: dict[str, Any], literal: str) -> str:
    text = json.dumps(doc)
    first = f'"duration_ns": {doc["ranks"][0]["steps"][0]["duration_ns"]}'
    assert first in text
    return text.replace(first, f'"duration_ns": {literal}', 1)


def _argv(command: str, bad: Path, ok: Path, tmp: Path) -> list[str | Path]:
    return {
        "report": ["report", bad, "-o", tmp / "r.html"],
        "compare": ["compare", ok, bad],
        "gate": ["gate", bad, "--baseline", ok],
        "record": ["record", bad, "--store", tmp / "h.db", "--name", "x"],
    }[command]


@pytest.mark.parametrize("command", ["report", "compare", "gate", "record"])
@pytest.mark.parametrize("number", sorted(NUMBERS))
def test_non_finite_and_huge_numbers_exit_2_in_one_line(
    command: str,
    number: str,
    good: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ok = _write(tmp_path / "ok.json", good)
    bad = tmp_path / "bad.json"
    bad.write_text(_with_number(good, NUMBERS[number][1]))
    code, out, err = _run(capsys, *_argv(command, bad, ok, tmp_path))
    assert code == 2, out
    _one_line(err, str(bad), "$.ranks[0].steps[0].duration_ns")
    assert "internal error" not in err
    assert not (tmp_path / "h.db").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("command", ["report", "compare", "gate", "record"])
@pytest.mark.parametrize("case", sorted(WRONG_TYPED))
def test_wrong_typed_sections_exit_2_in_one_line(
    command: str,
    case: str,
    good: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, value = WRONG_TYPED[case]
    ok = _write(tmp_path / "ok.json", good)
    bad = _write(tmp_path / "bad.json", _corrupt(good, key, value))
    code, out, err = _run(capsys, *_argv(command, bad, ok, tmp_path))
    assert code == 2, out
    _one_line(err, str(bad), f"$.ranks[0].{key}")
    assert "internal error" not in err


def test_record_refuses_an_in_memory_store(
    good: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "s.json", good)
    for url in ("sqlite://", "sqlite:///:memory:"):
        code, out, err = _run(capsys, "record", path, "--store", url, "--name", "x")
        assert code == 2 and "Recorded" not in out
        _one_line(err, "in-memory")


def test_an_unknown_store_url_option_is_one_line(good: dict[str, Any], tmp_path: Path) -> None:
    path = _write(tmp_path / "s.json", good)
    url = f"sqlite:///{tmp_path / 'h.db'}?colour=blue"
    proc = gpuscope("record", path, "--store", url, "--name", "x")  # a process: real stderr
    assert proc.returncode == 2 and "Recorded" not in proc.stdout
    _one_line(proc.stderr, "colour")
    assert "Warning" not in proc.stderr and "sqlalche.me" not in proc.stderr
