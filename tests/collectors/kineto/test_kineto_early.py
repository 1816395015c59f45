"""A read begun before the imports (collectors.kineto.early) gives exactly the serial read's
Trace or error when the reader takes it, and stops when no one does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from collectors.errors import InputError
from collectors.kineto import early, native, read_kineto
from collectors.kineto import parallel as kineto_parallel
from collectors.kineto.native import NativeChunk
from collectors.kineto.rows import RowParts, Rows, read_rows
from collectors.kineto.stream import Chunk
from collectors.kineto.tables import build_trace
from collectors.model import Trace
from tests.support.env import SAMPLES, shared_path

pytestmark = pytest.mark.skipif(not native.available(), reason="the native scanner is not built")


@pytest.fixture(autouse=True)
def _spare_cpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two usable CPUs and the scanner on, whatever the machine; no read left behind."""
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    monkeypatch.delenv(kineto_parallel.ENV, raising=False)
    monkeypatch.setenv(native.ENV, "1")
    yield
    early.cancel()


def _same(a: Trace, b: Trace) -> None:
    import pandas as pd

    for table in ("gpu", "host", "annotations", "counters"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), check_exact=True)
    assert a.meta == b.meta


WHERE = ["thread", "process"]


def _read_in(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of any size read early in a thread, or in a forked child."""
    monkeypatch.setattr(early, "MIN_TEXT_BYTES_PROCESS", 0 if where == "process" else 1 << 62)


@pytest.mark.parametrize("where", WHERE)
def test_a_read_begun_early_is_taken_by_the_reader(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_in(where, monkeypatch)
    path = shared_path("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz")
    serial = read_kineto(path, parallel=False)
    assert early.start(path)
    assert not early.start(path)  # one read per file
    key = early._key(path, False)
    assert (key in early._children) == (where == "process") and (key in early._reads) != (
        where == "process"
    )
    taken = early._reads.get(key)
    _same(read_kineto(path), serial)
    assert not early._reads and not early._children
    assert taken is None or not taken.thread.is_alive()


@pytest.mark.parametrize("where", WHERE)
def test_a_bad_file_read_early_raises_the_serial_reads_error(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_in(where, monkeypatch)
    bad = tmp_path / "t.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1}, {]}')
    with pytest.raises(InputError) as serial:
        read_kineto(bad, parallel=False)
    assert early.start(bad)
    with pytest.raises(InputError) as taken:
        read_kineto(bad)
    assert str(taken.value) == str(serial.value)


SCANNED = [
    ("hta", "mtia_trace_single_rank", "mtia_rank_0.json.gz"),
    ("hta", "trace_filter", "sampled_rank-0.json.gz"),
    ("hta", "ns_resolution_trace", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
    ("tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
]


@pytest.mark.parametrize("parts", SCANNED, ids=[p[1] for p in SCANNED])
def test_the_rows_a_child_reads_are_the_serial_reads_rows(
    parts: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Traces with kernels, memory samples, decimal times and collectives; chunks of 256 KiB,
    so that a file is many chunks."""
    _read_in("process", monkeypatch)
    monkeypatch.setattr("collectors.kineto.stream.CHUNK_BYTES", 256 << 10)
    path = shared_path("kineto", *parts)
    serial = read_kineto(path, parallel=False)
    assert early.start(path)
    _same(read_kineto(path), serial)


def test_a_child_that_dies_or_runs_out_of_room_leaves_the_read_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    import collectors.kineto.read_process as read_process

    _read_in("process", monkeypatch)
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    serial = read_kineto(path, parallel=False)
    real = read_process.read_rows

    def dies(*a: object, **k: object) -> object:
        os._exit(9)

    monkeypatch.setattr(read_process, "read_rows", dies)
    assert early.start(path)
    _same(read_kineto(path), serial)
    monkeypatch.setattr(read_process, "read_rows", real)
    monkeypatch.setattr(read_process, "reserve_bytes", lambda n: 4096)  # the rows do not fit
    assert early.start(path)
    _same(read_kineto(path), serial)


def _same_rows(a: RowParts, b: RowParts) -> None:
    for mine, theirs in zip(a.gpu + a.host, b.gpu + b.host, strict=True):
        assert mine.keys() == theirs.keys()
        for k, v in mine.items():
            np.testing.assert_array_equal(v, theirs[k])


def test_the_rows_a_child_read_stay_in_its_mapping_until_the_last_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No copy of the rows' arrays: they are read-only views of the shared mapping (a column
    a Trace keeps is never written through to a forked helper's pages), which is unmapped with
    the last of them."""
    import gc
    import weakref

    from collectors.kineto.read_process import ReadProcess, reserve_bytes

    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    ahead = ReadProcess(path, False, reserve_bytes(1 << 20))
    mapping = weakref.ref(ahead._buf)
    rows = ahead.rows()
    assert ahead.pid is None  # joined
    _same_rows(rows, read_rows(path, False))
    start = rows.gpu[0]["start_ns"]
    assert start.base is not None and not start.flags.writeable  # a read-only view
    del ahead, rows
    gc.collect()
    assert mapping() is not None  # an array of the rows holds it
    del start
    gc.collect()
    assert mapping() is None


def test_a_child_no_one_takes_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    _read_in("process", monkeypatch)
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    assert early.start(path)
    child = early._children[early._key(path, False)]._helper
    assert child is not None
    pid = child.pid
    early.cancel(path)
    assert not early._children and early.take(path, False) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_beside_other_work_only_a_child_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine begins the next file's read beside the analysis of the one before: never
    in a thread, which would share the GIL with that analysis."""
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    _read_in("thread", monkeypatch)
    assert not early.start(path, beside_work=True) and not early._reads
    _read_in("process", monkeypatch)
    assert early.start(path, beside_work=True) and early._children


def test_a_read_no_one_takes_stops_at_its_next_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    _read_in("thread", monkeypatch)
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    entered, release = threading.Event(), threading.Event()
    add = Rows.add

    def slow_add(self: Rows, chunk: Chunk | NativeChunk, index: int) -> None:
        entered.set()
        release.wait(5)
        add(self, chunk, index)

    monkeypatch.setattr(Rows, "add", slow_add)
    monkeypatch.setattr("collectors.kineto.stream.CHUNK_BYTES", 4096)
    assert early.start(path)
    assert entered.wait(5)
    read = early._reads[early._key(path, False)]
    read.stop.set()
    release.set()
    early.cancel(path)
    assert not read.thread.is_alive() and not early._reads
    assert early.take(path, False) is None  # the reader then reads the file itself


def test_no_early_read_without_the_scanner_a_spare_cpu_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    assert not early.start(tmp_path / "missing.json")
    assert not early.start(tmp_path)
    monkeypatch.setenv(native.ENV, "0")
    assert not early.start(path)
    monkeypatch.setenv(native.ENV, "1")
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 1)
    assert not early.start(path)
    assert not early._reads


@pytest.mark.parametrize("where", WHERE)
def test_a_cache_hit_stops_the_early_read(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collectors.cache import TraceCache, read_kineto_cached

    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    cache = TraceCache(tmp_path / "cache")
    read_kineto_cached(path, cache)  # built
    _read_in(where, monkeypatch)
    assert early.start(path)
    traces, outcome = read_kineto_cached(path, cache)
    assert outcome.status == "hit" and not early._reads and not early._children
    _same(traces[0], build_trace(read_rows(path, False), None))


def test_a_file_read_by_two_processes_is_begun_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher begins the read, then the command asks again: the forked helper stays the
    one read (found in a 2 GB run: a thread read was begun beside it, and the helper, never
    joined, held its 1.6 GB of rows until the end)."""
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    serial = read_kineto(path, parallel=False)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES_NATIVE", 0)
    assert early.start(path)
    assert not early.start(path)
    assert kineto_parallel.started_early(path) and not early._reads
    _same(read_kineto(path), serial)
    assert not kineto_parallel.started_early(path)  # joined by the read


def test_a_file_beyond_the_childs_range_is_read_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From MAX_TEXT_BYTES_PROCESS on, the read outlasts the imports: a thread reads it."""
    path = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"
    _read_in("process", monkeypatch)
    monkeypatch.setattr(early, "MAX_TEXT_BYTES_PROCESS", 1)
    assert early.start(path) and early._reads and not early._children
