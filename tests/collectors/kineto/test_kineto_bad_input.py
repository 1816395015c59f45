"""Bad Kineto input: one-line InputError naming the file and the problem; exit 2 from the CLI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.kineto import read_kineto, read_kineto_files
from tests.support import kineto_json as kj
from tests.support.env import shared_path

GOOD_EVENT = kj.event("aten::mm", "cpu_op", 1, 2)


def _json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _expect(path: Path, pattern: str) -> InputError:
    with pytest.raises(InputError, match=pattern) as err:
        read_kineto(path)
    msg = str(err.value)
    assert str(path) in msg
    assert "\n" not in msg
    return err.value


def test_missing_file(tmp_path: Path) -> None:
    _expect(tmp_path / "rank-0.json.gz", "no such file")


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(kj.dumps(kj.trace([GOOD_EVENT] * 200)))
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    _expect(p, "truncated gzip")


def test_truncated_real_trace(tmp_path: Path) -> None:
    src = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    p = tmp_path / "sampled_rank-0.json.gz"
    p.write_bytes(src.read_bytes()[:50_000])
    _expect(p, "truncated gzip")


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(kj.dumps(kj.trace([GOOD_EVENT] * 50))))
    data[12:40] = b"\xff" * 28
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(data))
    _expect(p, "gzip")


def test_gzip_magic_with_garbage(tmp_path: Path) -> None:
    p = tmp_path / "trace.json.gz"
    p.write_bytes(b"\x1f\x8b" + b"not really gzip at all")
    _expect(p, "gzip")


def test_invalid_json(tmp_path: Path) -> None:
    p = tmp_path / "trace.json"
    p.write_text('{"traceEvents": [{"ph": "X", "ts": 1,', encoding="utf-8")
    _expect(p, "invalid JSON")


def test_invalid_json_inside_gzip(tmp_path: Path) -> None:
    p = tmp_path / "trace.json.gz"
    p.write_bytes(gzip.compress(b"<html>502 Bad Gateway</html>"))
    _expect(p, "invalid JSON")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "trace.json"
    p.write_bytes(b"")
    _expect(p, "invalid JSON")


@pytest.mark.parametrize(
    "doc",
    [
        [[1, 2, 3]],
        {"schema": "1.0.1", "nodes": []},
        {"traceEvents": {"ph": "X"}},
        {"traceEvents": [1, 2]},
        "just a string",
    ],
    ids=["array", "execution-trace-like", "events-not-a-list", "events-not-objects", "string"],
)
def test_json_that_is_not_a_kineto_trace(tmp_path: Path, doc: object) -> None:
    _expect(_json(tmp_path / "x.json", doc), "not a Kineto trace")


@pytest.mark.parametrize(
    "events",
    [
        [],
        [kj.metadata("process_name", pid=1, name="python")],
        [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": 1, "dur": 5}],
        [kj.flow("s", 1, 1)],
    ],
    ids=["no-events", "metadata-only", "trace-span-only", "flow-only"],
)
def test_trace_without_events(tmp_path: Path, events: list[dict[str, object]]) -> None:
    _expect(kj.write(tmp_path / "rank-0.json.gz", kj.trace(events)), "no events")


def test_non_numeric_timestamp(tmp_path: Path) -> None:
    ev = {**GOOD_EVENT, "ts": "yesterday"}
    _expect(kj.write(tmp_path / "t.json", kj.trace([ev])), "no usable events.*not a number")


def test_args_that_are_not_an_object(tmp_path: Path) -> None:
    ev = {**GOOD_EVENT, "args": [1, 2]}
    _expect(kj.write(tmp_path / "t.json", kj.trace([ev])), "args")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    _expect(tmp_path, "directory")


def test_two_files_claiming_one_rank_name_both(tmp_path: Path) -> None:
    a = kj.write(tmp_path / "a.json", kj.trace([GOOD_EVENT], rank=3))
    b = kj.write(tmp_path / "rank-3.json", kj.trace([GOOD_EVENT]))
    with pytest.raises(InputError, match="rank 3") as err:
        read_kineto_files([a, b])
    msg = str(err.value)
    assert str(a) in msg and str(b) in msg and "\n" not in msg


def test_same_file_given_twice_is_read_once(tmp_path: Path) -> None:
    a = kj.write(tmp_path / "rank-1.json", kj.trace([GOOD_EVENT]))
    assert [t.rank for t in read_kineto_files([a, tmp_path / "." / "rank-1.json"])] == [1]


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from cli.main import main

    rc = main(argv)
    return rc, capsys.readouterr().err


def _missing(d: Path) -> Path:
    return d / "missing.json.gz"


def _invalid_json(d: Path) -> Path:
    (d / "t.json").write_text("{oops", encoding="utf-8")
    return d / "t.json"


def _empty_trace(d: Path) -> Path:
    return kj.write(d / "t.json", kj.trace([]))


def _duplicate_rank_dir(d: Path) -> Path:
    (d / "run").mkdir()
    kj.write(d / "run" / "rank-0.json", kj.trace([GOOD_EVENT]))
    kj.write(d / "run" / "b.json", kj.trace([GOOD_EVENT], rank=0))
    return d / "run"


@pytest.mark.parametrize(
    "make",
    [_missing, _invalid_json, _empty_trace, _duplicate_rank_dir],
    ids=["missing", "invalid-json", "empty-trace", "duplicate-rank-directory"],
)
def test_cli_exits_2_with_one_line_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make
) -> None:
    target = make(tmp_path)
    rc, err = _cli(["analyze", str(target)], capsys)
    assert rc == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert str(target) in lines[0] or str(tmp_path) in lines[0]
