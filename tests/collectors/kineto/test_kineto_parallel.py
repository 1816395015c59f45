"""Reading one Kineto file with a forked helper (collectors.kineto.parallel) gives exactly the
serial reader's Trace, and falls back to the serial reader whenever the two could differ."""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from collectors.errors import InputError
from collectors.kineto import parallel as kineto_parallel
from collectors.kineto import read_kineto
from collectors.kineto import stream as kineto_stream
from collectors.kineto.rows import Rows
from collectors.kineto.stream import Fallback
from collectors.kineto.tables import build_trace
from collectors.model import Trace
from tests.support import kineto_json as kj
from tests.support.env import SAMPLES, SHARED_DATA, shared_path

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parallel reader forks (Linux only)"
)


def _kineto_files() -> list[Path]:
    shared = sorted((SHARED_DATA / "kineto").rglob("*.json*")) if SHARED_DATA.is_dir() else []
    return shared + sorted(SAMPLES.rglob("*.json.gz"))


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 KiB, so that small files have many (the helper inherits this by fork)."""
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(kineto_stream, "PIECE_BYTES", 16 << 10)


def assert_same_trace(a: Trace, b: Trace) -> None:
    for table in ("gpu", "host", "annotations", "counters"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), check_exact=True)
    assert a.meta == b.meta


def _chunks_of(path: Path) -> int:
    ends: list[int] = []
    for _ in kineto_stream.stream_chunks(path, owned=lambda index: False, ends=ends):
        pass
    return len(ends)


@pytest.mark.parametrize("path", _kineto_files(), ids=lambda p: p.name)
def test_parallel_read_equals_serial_read_on_every_trace(path: Path, small_chunks: None) -> None:
    try:
        serial = read_kineto(path, parallel=False)
    except InputError as e:  # not a Kineto trace (an execution trace...): the same error
        with pytest.raises(InputError) as err:
            read_kineto(path, parallel=True)
        assert str(err.value) == str(e)
        return
    kineto_parallel.read_rows(path, include_python=False)  # succeeds: no silent fallback
    assert_same_trace(read_kineto(path, parallel=True), serial)


def test_the_helper_takes_the_chunks_the_slower_process_has_not_claimed(
    monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    serial = read_kineto(path, parallel=False)
    parent, add = os.getpid(), Rows.add

    def slow_in_parent(self: Rows, chunk: object, index: int) -> None:
        if os.getpid() == parent:
            time.sleep(0.05)
        add(self, chunk, index)  # type: ignore[arg-type]

    monkeypatch.setattr(Rows, "add", slow_in_parent)
    rows = kineto_parallel.read_rows(path, include_python=False)
    helper = kineto_parallel.last_helper
    assert helper is not None and helper.all_chunks >= 4
    assert helper.chunks > helper.all_chunks // 2  # the helper ran ahead and took most
    assert rows.chunks + helper.chunks == helper.all_chunks  # each chunk decoded once
    assert_same_trace(build_trace(rows, None), serial)


def test_python_functions_kept_when_asked(small_chunks: None) -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    serial = read_kineto(path, include_python=True, parallel=False)
    assert_same_trace(read_kineto(path, include_python=True, parallel=True), serial)


def _trace_with_cuts_inside_strings(path: Path) -> Path:
    """Every event's name holds ``}, {``: the last cut in a chunk is usually inside a string."""
    events = [kj.event(f"op}}, {{{i}", "cpu_op", i, 1) for i in range(20_000)]
    return kj.write(path, kj.trace(events))


def test_cuts_that_differ_between_the_processes_fall_back_to_the_serial_read(
    tmp_path: Path, small_chunks: None
) -> None:
    path = _trace_with_cuts_inside_strings(tmp_path / "cuts.json.gz")
    with pytest.raises(Fallback):
        kineto_parallel.read_rows(path, include_python=False)
    assert_same_trace(read_kineto(path, parallel=True), read_kineto(path, parallel=False))


def _exit_3(*_: object) -> int:
    return 3


def _die(*_: object) -> int:
    raise SystemExit(9)


def _crash(*_: object) -> int:
    raise RuntimeError("helper bug")


@pytest.mark.parametrize("helper", [_exit_3, _die, _crash], ids=["exits-3", "dies", "crashes"])
def test_a_helper_that_fails_falls_back_to_the_serial_read(
    monkeypatch: pytest.MonkeyPatch, small_chunks: None, helper: object
) -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    monkeypatch.setattr(kineto_parallel, "_helper", helper)
    with pytest.raises(Fallback):
        kineto_parallel.read_rows(path, include_python=False)
    assert_same_trace(read_kineto(path, parallel=True), read_kineto(path, parallel=False))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x1f\x8b" + b"\0" * 40, "gzip"),
        (b'{"traceEvents": [{"ph": "X", "ts": "soon"', "JSON"),
        (kj.dumps(kj.trace([])), "no events"),
    ],
    ids=["corrupt-gzip", "malformed-json", "no-events"],
)
def test_bad_files_give_the_serial_readers_error(
    tmp_path: Path, data: bytes, message: str, small_chunks: None
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(InputError) as serial:
        read_kineto(path, parallel=False)
    with pytest.raises(InputError) as parallel:
        read_kineto(path, parallel=True)
    assert str(parallel.value) == str(serial.value)
    assert message in str(serial.value)


def test_wanted_only_for_large_files_with_a_spare_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big, small = tmp_path / "big.json", tmp_path / "small.json"
    big.write_bytes(b" " * 2048)
    small.write_bytes(b" " * 100)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 1024)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES_NATIVE", 1024)
    monkeypatch.delenv(kineto_parallel.ENV, raising=False)
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    assert kineto_parallel.wanted(big)
    assert not kineto_parallel.wanted(small)
    assert not kineto_parallel.wanted(tmp_path / "missing.json")
    with kineto_parallel.serial_reads():
        assert not kineto_parallel.wanted(big)
    assert kineto_parallel.wanted(big)
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 1)
    assert not kineto_parallel.wanted(big)
    monkeypatch.setenv(kineto_parallel.ENV, "2")
    assert kineto_parallel.wanted(big)
    monkeypatch.setenv(kineto_parallel.ENV, "1")
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    assert not kineto_parallel.wanted(big)


def test_with_the_native_scanner_only_huge_files_are_read_by_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process whose scanning thread runs beside its row building reads faster than two
    processes below MIN_TEXT_BYTES_NATIVE; the msgspec path keeps MIN_TEXT_BYTES."""
    mid = tmp_path / "mid.json"
    mid.write_bytes(b" " * 4096)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 1024)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES_NATIVE", 8192)
    monkeypatch.delenv(kineto_parallel.ENV, raising=False)
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(kineto_parallel, "native_enabled", lambda: True)
    assert not kineto_parallel.wanted(mid)
    monkeypatch.setattr(kineto_parallel, "native_enabled", lambda: False)
    assert kineto_parallel.wanted(mid)


def test_text_size_of_a_gzip_file_comes_from_its_trailer(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    text = json.dumps({"traceEvents": [{"ph": "X"}] * 5000}).encode()
    path.write_bytes(gzip.compress(text))
    assert kineto_parallel.text_bytes(path) == len(text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_helper_started_early_is_joined_by_the_read(
    monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    serial = read_kineto(path, parallel=False)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES_NATIVE", 0)
    monkeypatch.setenv(kineto_parallel.ENV, "2")
    assert kineto_parallel.start_early(path)
    assert not kineto_parallel.start_early(path)  # one helper per file
    (early,) = kineto_parallel._early.values()
    pid = early.process.pid
    time.sleep(0.3)  # the helper claims chunks while this process does something else
    rows = kineto_parallel.read_rows(path, include_python=False)
    assert not kineto_parallel._early and not _alive(pid)  # joined and reaped
    helper = kineto_parallel.last_helper
    assert helper is not None and helper.chunks > helper.all_chunks // 2
    assert rows.chunks + helper.chunks == helper.all_chunks
    assert_same_trace(build_trace(rows, None), serial)


def test_a_helper_started_early_and_never_joined_is_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES_NATIVE", 0)
    monkeypatch.setenv(kineto_parallel.ENV, "2")
    assert kineto_parallel.start_early(path, include_python=True)
    (early,) = kineto_parallel._early.values()
    pid = early.process.pid
    # a read of the file with other options does not join it
    assert_same_trace(read_kineto(path, parallel=True), read_kineto(path, parallel=False))
    assert kineto_parallel._early
    kineto_parallel.cancel_early()
    assert not kineto_parallel._early and not _alive(pid)
    assert not kineto_parallel.start_early(tmp_path / "missing.json.gz")
    assert not kineto_parallel.start_early(tmp_path)  # not a file: nothing forked
    monkeypatch.setenv(kineto_parallel.ENV, "1")
    assert not kineto_parallel.start_early(path)
