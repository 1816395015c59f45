"""read_summary: every way a summary file can be wrong is one InputError line naming the file
and, for a bad value, its key path (collectors/summary/reader.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from collectors.errors import InputError
from collectors.summary.reader import read_summary, read_summary_file
from tests.support.summaries import make_summary


def _file(tmp_path: Path, text: str | bytes, name: str = "s.json") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def _error(path: Path) -> str:
    with pytest.raises(InputError) as err:
        read_summary(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    assert err.value.exit_code == 2
    return line


def test_a_valid_summary_reads_back_as_plain_dicts_with_its_digest(tmp_path: Path) -> None:
    doc = make_summary([[100, 200], [150, 90]], overlap_pct=[50.0, None])
    p = _file(tmp_path, json.dumps(doc))
    got = read_summary_file(p)
    assert got.summary == doc and type(got.summary) is dict
    assert got.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_missing_directory_fifo_and_unreadable_files(tmp_path: Path, monkeypatch) -> None:
    assert "no such file" in _error(tmp_path / "absent.json")
    assert "is a directory" in _error(tmp_path)
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert "not a regular file" in _error(fifo)  # refused at once: opening it would block
    p = _file(tmp_path, json.dumps(make_summary([[1]])))

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert "cannot read: Permission denied" in _error(p)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"schema_version": 1, "ranks": [', "not valid JSON: Input data was truncated"),
        ("", "not valid JSON"),
        (
            b'{"schema_version": 1, "ranks": [], "sources": ["\xff"]}',
            "not valid JSON: Invalid UTF-8",
        ),
        ('{"a": 1}\n{"b": 2}', "trailing characters (byte 10) (line 2, column 2)"),
        ("[1, 2]", "not a gpuscope JSON summary (Expected `object`, got `array`)"),
        ('{"kind": "gpuscope.gate"}', "not a gpuscope JSON summary (no schema_version/ranks)"),
        (
            '{"schema_version": 2, "ranks": []}',
            "summary schema_version 2 is not supported (this gpuscope reads schema_version 1)",
        ),
        ('{"schema_version": "1", "ranks": []}', "schema_version '1' is not supported"),
        ('{"schema_version": 1, "ranks": []}', "missing required field `tool`"),
    ],
)
def test_not_json_not_a_summary_and_other_versions(
    tmp_path: Path, text: str | bytes, problem: str
) -> None:
    assert problem in _error(_file(tmp_path, text))


def _mutated(tmp_path: Path, edit: Any) -> Path:
    doc = make_summary([[100, 200, 300]])
    edit(doc)
    return _file(tmp_path, json.dumps(doc))


@pytest.mark.parametrize(
    ("literal", "shown"),
    [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")],
)
def test_non_finite_numbers_name_their_key_path(tmp_path: Path, literal: str, shown: str) -> None:
    doc = make_summary([[100, 200, 300]])
    text = json.dumps(doc).replace('"duration_ns": 200', f'"duration_ns": {literal}')
    text = text.replace('"duration_ns": 300', '"duration_ns": NaN')  # a second one: the first wins
    line = _error(_file(tmp_path, text))
    assert f"not valid JSON: {shown} at $.ranks[0].steps[1].duration_ns" in line


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["ranks"][0]["steps"][2].update(duration_ns=-215_793_000),
            "invalid summary at $.ranks[0].steps[2].duration_ns: Expected `int` >= 0, "
            "got -215793000",
        ),
        (
            lambda d: d["ranks"][0]["steps"][2].update(duration_ns=1.2e21),
            "invalid summary at $.ranks[0].steps[2].duration_ns: Expected `int`, got `float` "
            "(1.2e+21)",
        ),
        (
            lambda d: d["ranks"][0]["steps"][0].update(end_ns=2**70),
            "invalid summary at $.ranks[0].steps[0].end_ns: Expected `int` <= "
            "9223372036854775807, got 1180591620717411303424",
        ),
        (
            lambda d: d.update(ranks=["a", "b"]),
            "invalid summary at $.ranks[0]: Expected `object`, got `str` ('a')",
        ),
        (
            lambda d: d["ranks"][0].update(kernel_summary={"name": "k"}),
            "invalid summary at $.ranks[0].kernel_summary: Expected `array`, got `object` "
            "(a JSON object)",
        ),
        (
            lambda d: d["ranks"][0].pop("temporal"),
            "invalid summary at $.ranks[0]: Object missing required field `temporal`",
        ),
        (
            lambda d: d["ranks"][0]["temporal"].update(idle_pct=250.0),
            "invalid summary at $.ranks[0].temporal.idle_pct: Expected `float` <= 100.0, got 250.0",
        ),
    ],
)
def test_wrong_types_and_impossible_values_name_key_and_value(
    tmp_path: Path, edit: Any, expected: str
) -> None:
    assert expected in _error(_mutated(tmp_path, edit))


def test_a_number_beyond_the_double_range_names_its_key(tmp_path: Path) -> None:
    doc = make_summary([[100, 200]], idle_pct=[1.0])
    text = json.dumps(doc).replace('"idle_pct": 1.0', '"idle_pct": 1e400')
    line = _error(_file(tmp_path, text))
    assert "invalid summary at $.ranks[0].temporal.idle_pct: Number out of range" in line


def test_unknown_keys_are_ignored_not_refused(tmp_path: Path) -> None:
    doc = make_summary([[100]])
    doc["ranks"][0]["a_future_section"] = {"x": 1}
    doc["later"] = [1]
    got = read_summary(_file(tmp_path, json.dumps(doc)))
    assert "a_future_section" not in got["ranks"][0] and "later" not in got
