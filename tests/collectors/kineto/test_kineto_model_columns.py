"""The model columns ``launch_kernel`` (host), ``wait_on_stream`` / ``wait_on_event_correlation``
(gpu) and ``event_index`` (both) against the raw JSON, decoded here with msgspec (plain dicts,
times as exact decimals), read serially and with two processes."""

from __future__ import annotations

import gzip
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from collectors.kineto import read_kineto
from collectors.kineto.stream import CHUNK_BYTES
from collectors.model import LAUNCH_CATS, Trace
from tests.support.env import shared_path
from tests.support.kineto_events import cuda_sync, launched, process_name, write_trace

MODES = pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])


def _raw(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return msgspec.json.Decoder(float_hook=Decimal).decode(data)["traceEvents"]


def _ns(us: Any) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


def _check_against_raw(trace: Trace, raw: list[dict[str, Any]]) -> dict[str, int]:
    """Every row's ``event_index`` names its raw event (same name, times, kind of table), the
    rows cover every activity event once, and the three columns equal the raw args."""
    g, h = trace.gpu, trace.host
    counts = {"gpu": len(g), "host": len(h), "launch_kernel": 0, "wait_on": 0}
    for table, df in (("gpu", g), ("host", h)):
        idx = df["event_index"].to_numpy()
        assert (idx >= 0).all() and len(set(idx.tolist())) == len(idx), table
        for i, name, start, end in zip(
            idx.tolist(), df["name"].astype(object), df["start_ns"], df["end_ns"], strict=True
        ):
            e = raw[i]
            assert e["ph"] == "X" and e["name"] == name, (table, i)
            assert (_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) == (start, end), (table, i)
    acts = {
        i
        for i, e in enumerate(raw)
        if e.get("ph") == "X"
        and "dur" in e
        and isinstance(e.get("cat"), str)
        and e["cat"] not in ("Trace", "python_function", "gpu_user_annotation")
    }
    assert set(g["event_index"]) | set(h["event_index"]) == acts
    kernels = h["launch_kernel"].astype(object).where(h["launch_kernel"].notna(), None)
    for i, cat, got in zip(h["event_index"], h["cat"].astype(object), kernels, strict=True):
        want = (raw[i].get("args") or {}).get("kernel") if cat in LAUNCH_CATS else None
        assert got == want, i
        counts["launch_kernel"] += want is not None
    for i, kind, ws, we in zip(
        g["event_index"],
        g["kind"],
        g["wait_on_stream"],
        g["wait_on_event_correlation"],
        strict=True,
    ):
        a = raw[i].get("args") or {}
        sync = kind == "sync"
        assert ws == (a.get("wait_on_stream", -1) if sync else -1), i
        assert we == (a.get("wait_on_cuda_event_record_corr_id", -1) if sync else -1), i
        counts["wait_on"] += we >= 0
    return counts


@MODES
def test_event_sync_rows_keep_what_they_wait_on(parallel: bool) -> None:
    p = shared_path("kineto", "hta", "critical_path", "cuda_event_sync", "event_sync_trace.json.gz")
    counts = _check_against_raw(read_kineto(p, parallel=parallel), _raw(p))
    assert counts["wait_on"] == 2


@MODES
def test_graph_capture_launch_calls_keep_their_kernel_names_across_chunks(parallel: bool) -> None:
    p = shared_path(
        "kineto", "tracelens", "inference", "sglang_decode", "capture_traces", "bs_32_rank0.json.gz"
    )
    assert len(gzip.decompress(p.read_bytes())) > 4 * CHUNK_BYTES  # several chunks
    trace = read_kineto(p, parallel=parallel)
    counts = _check_against_raw(trace, _raw(p))
    assert counts["launch_kernel"] > 500
    assert trace.host["launch_kernel"].dtype == "category"


def test_serial_and_parallel_reads_give_the_same_columns() -> None:
    p = shared_path(
        "kineto", "tracelens", "inference", "sglang_decode", "capture_traces", "bs_32_rank0.json.gz"
    )
    a, b = read_kineto(p, parallel=False), read_kineto(p, parallel=True)
    for col in ("event_index", "wait_on_stream", "wait_on_event_correlation"):
        assert np.array_equal(a.gpu[col], b.gpu[col]), col
    assert np.array_equal(a.host["event_index"], b.host["event_index"])
    assert (
        a.host["launch_kernel"].astype(object).tolist()
        == b.host["launch_kernel"].astype(object).tolist()
    )


def test_hand_written_events_positions_count_every_phase(tmp_path: Path) -> None:
    """Metadata and counter events count in ``event_index``; a sync without the args is -1."""
    events = [
        process_name(100, "python"),
        *launched("aten::mm", "gemm", 10, correlation=5),
        {"ph": "C", "name": "mem", "pid": 100, "ts": 12, "args": {"mem": 1}},
        cuda_sync("Event Sync", 20, 2, correlation=6, wait_on_stream=7, wait_on_event=5),
        cuda_sync("Context Sync", 30, 2, correlation=7),
    ]
    p = write_trace(tmp_path / "t.json", events)
    t = read_kineto(p)
    assert t.host["event_index"].tolist() == [1, 2]
    assert t.host["launch_kernel"].isna().tolist() == [True, False]
    assert t.host["launch_kernel"].iloc[1] == "gemm"
    assert t.gpu["event_index"].tolist() == [3, 5, 6]
    assert t.gpu["wait_on_stream"].tolist() == [-1, 7, -1]
    assert t.gpu["wait_on_event_correlation"].tolist() == [-1, 5, -1]
    _check_against_raw(t, _raw(p))


def test_whole_text_reader_gives_the_same_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``traceEvents`` key inside an event sends the file to the whole-text reader."""
    from collectors.kineto import rows

    whole = []
    monkeypatch.setattr(rows, "whole_chunks", lambda p: whole.append(p) or _whole(p))
    odd = {"ph": "i", "name": "x", "pid": 1, "ts": 1, "s": "g", "args": {"traceEvents": 1}}
    events = [odd, *launched("aten::mm", "gemm", 10, correlation=5)]
    t = read_kineto(write_trace(tmp_path / "w.json", events), parallel=False)
    assert whole
    assert t.host["event_index"].tolist() == [1, 2]
    assert t.gpu["event_index"].tolist() == [3]


def _whole(path: Path) -> Any:
    from collectors.kineto.stream import whole_chunks

    return whole_chunks(path)
