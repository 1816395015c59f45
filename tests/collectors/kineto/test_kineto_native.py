"""The native chunk scanner (collectors/kineto/_scan.c) gives exactly the Trace of the msgspec
path, on every shared trace and on generated JSON that exercises each rule it applies, and it
declines (the msgspec path then reads the chunk) whatever it does not take on."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.errors import InputError
from collectors.kineto import native, read_kineto, scan_thread
from collectors.kineto import stream as kineto_stream
from collectors.kineto.rows import read_rows
from collectors.kineto.tables import build_trace
from collectors.model import Trace
from tests.support.env import IN_CI, SAMPLES, SHARED_DATA

pytestmark = pytest.mark.skipif(
    not native.available() and not IN_CI,
    reason="the native scanner is not built (pip install -e . compiles it with a C compiler)",
)


def test_the_scanner_is_built_under_ci() -> None:
    assert native.available(), "collectors.kineto._scan was not compiled by the install"


def _traces() -> list[Path]:
    shared = sorted((SHARED_DATA / "kineto").rglob("*.json*")) if SHARED_DATA.is_dir() else []
    return shared + sorted(SAMPLES.rglob("*.json.gz"))


def _same(a: Trace, b: Trace) -> None:
    import pandas as pd

    for table in ("gpu", "host", "annotations", "counters"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), check_exact=True)
    assert a.meta == b.meta


def _read(path: Path, lookahead: bool) -> Any:
    """The Trace of a one-process read (*lookahead*: chunks scanned in a worker thread), or
    the InputError's text."""
    try:
        return build_trace(read_rows(path, False, lookahead=lookahead), None)
    except InputError as e:
        return str(e)


def _assert_equal(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The msgspec path's Trace (or error) equals the native path's, with and without the
    scanning thread."""
    monkeypatch.setenv(native.ENV, "0")
    reference = _read(path, lookahead=False)
    monkeypatch.setenv(native.ENV, "1")
    for lookahead in (False, True):
        scanned = _read(path, lookahead)
        if isinstance(reference, str) or isinstance(scanned, str):
            assert scanned == reference
        else:
            _same(scanned, reference)


class _Count:
    """Counts the chunks the scanner accepts and declines."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.accepted = self.declined = 0
        scan = native.scan

        def counted(*args: Any, **kw: Any) -> native.NativeChunk | None:
            out = scan(*args, **kw)
            if out is None:
                self.declined += 1
            else:
                self.accepted += 1
            return out

        for module in (kineto_stream, scan_thread):  # a serial read scans in its thread
            monkeypatch.setattr(module, "native_scan", counted)


@pytest.mark.parametrize("chunk_kib", [64, 2048])
@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_the_native_read_equals_the_msgspec_read_on_every_trace(
    path: Path, chunk_kib: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", chunk_kib << 10)
    _assert_equal(path, monkeypatch)


def test_real_traces_are_scanned_natively_not_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the one taken: every chunk of the common trace shapes is accepted."""
    names = [
        "kineto/hta/nccl_parser_config/nccl_data.json.gz",  # NCCL metadata, flows, M events
        "kineto/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",  # decimals
        "kineto/tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",  # ROCm
    ]
    paths = [SHARED_DATA / n for n in names if (SHARED_DATA / n).exists()]
    paths.append(SAMPLES / "synthetic_2rank" / "rank-0.json.gz")
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setenv(native.ENV, "1")
    for path in paths:
        count = _Count(monkeypatch)
        read_kineto(path, parallel=False)
        assert count.accepted >= 1 and count.declined == 0, (path.name, vars(count))


# ---- what the scanner declines --------------------------------------------------------------


def _events_text(*events: str) -> bytes:
    return ",\n".join(events).encode()


_DEEP = "[" * 70 + "]" * 70
_X = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2}'


@pytest.mark.parametrize(
    "event",
    [
        '{"ph": "C", "name": "mem", "pid": 1, "ts": 1, "args": {"v": 1}}',  # counters
        '{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Total Reserved": 1e400}}',
        '{"ph": "Z", "name": "x"}',  # unknown phase
        '{"name": "no phase"}',
        '{"ph": "X", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1}',  # two tags
        '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": [1]}',  # args not an object
        '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": {"grid": [true, 1, 1]}}',
        '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": {"stre\\u0061m": 1}}',
        '{"ph": "X", "cat": "kernel", "name": "\\ud800", "ts": 1, "dur": 1}',  # lone surrogate
        '{"ph": "X", "cat": "kernel", "ts": 1e999, "dur": 1}',  # beyond the double range
        '{"ph": "M", "name": "thread_name", "pid": 1.0, "tid": 1, "args": {"name": "t"}}',
        '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": {"x": ' + _DEEP + "}}",
        '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1,}',  # invalid JSON
        '{"ph": "X", "cat": "kernel", "name": "\x01", "ts": 1, "dur": 1}',  # control character
    ],
)
def test_the_scanner_declines_what_it_does_not_take_on(
    event: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(native.ENV, "1")
    text = _events_text(_X, event)
    assert native.scan(text, 0, len(text)) is None
    assert native.scan(_events_text(_X), 0, len(_X)) is not None


def test_the_decimal_reading_is_declined_only_when_a_value_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Epoch microseconds with decimals need the exact decimal reading (columns.us_to_ns): the
    scanner does it for plain decimals and declines exponent forms."""
    monkeypatch.setenv(native.ENV, "1")
    ev = '{"ph": "X", "cat": "kernel", "name": "k", "ts": %s, "dur": 1.25}'
    plain = _events_text(ev % "1712345678901234.5675", ev % "1712345678901234.0005")
    chunk = native.scan(plain, 0, len(plain))
    assert chunk is not None
    assert chunk.cols["ts"].tolist() == [1712345678901234568, 1712345678901234000]  # half-even
    exp = _events_text(ev % "1712345678901234.5", ev % "1.7123456789e15")
    assert native.scan(exp, 0, len(exp)) is None


# ---- generated JSON -----------------------------------------------------------------------------

_MARKERS = ["Collective name", "Comms Id", "In msg nelems", "Process Group Name", "Seq", "Rank"]


def _number_text() -> st.SearchStrategy[str]:
    digits = st.text("0123456789", min_size=1, max_size=20).map(lambda d: d.lstrip("0") or "0")
    fraction = st.text("0123456789", min_size=1, max_size=8).map(lambda f: "." + f)
    frac = st.one_of(st.just(""), fraction)
    exp = st.one_of(st.just(""), st.sampled_from(["e3", "E-2", "e+1", "e0"]))
    return st.builds(
        lambda sign, d, f, e: sign + d + f + e, st.sampled_from(["", "", "-"]), digits, frac, exp
    )


def _string_text() -> st.SearchStrategy[str]:
    plain = st.sampled_from(
        [
            "k",
            "aten::mm",
            "Memcpy HtoD (Pinned -> Device)",
            "HtoD",
            "ProfilerStep#3",
            "Trace",
            "nccl:all_reduce",
            "record_param_comms",
            "process_name",
            "thread_name",
            "[memory]",
            "héllo",
            "Collective name",
            'x"Comms Id',
            "kernel",
            "cpu_op",
            "cuda_runtime",
        ]
    )
    return st.builds(
        lambda s, ascii_only: json.dumps(s, ensure_ascii=ascii_only), plain, st.booleans()
    )


_scalar = st.one_of(
    _number_text(),
    _string_text(),
    st.sampled_from(["true", "false", "null", "9223372036854775808", "-1", "0"]),
)


def _value(depth: int = 0) -> st.SearchStrategy[str]:
    if depth >= 2:
        return _scalar
    lists = st.lists(_value(depth + 1), max_size=4).map(lambda v: "[" + ", ".join(v) + "]")
    triples = st.lists(st.integers(-2, 4).map(str), min_size=3, max_size=3).map(
        lambda v: "[" + ",".join(v) + "]"
    )
    objects = st.dictionaries(st.sampled_from(["a", *_MARKERS]), _value(depth + 1), max_size=3)
    objs = objects.map(lambda d: _text_of(list(d.items())))
    return st.one_of(_scalar, _scalar, triples, lists, objs)


_ARG_KEYS = [
    "stream",
    "correlation",
    "External id",
    "external id",
    "device",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "bytes",
    "est. achieved occupancy %",
    "blocks per SM",
    "warps per SM",
    "kind",
    "kernel",
    "wait_on_stream",
    "wait_on_cuda_event_record_corr_id",
    "Input Dims",
    "Input type",
    "Concrete Inputs",
    "Input Strides",
    "Collective name",
    "In msg nelems",
    "Process Group Name",
    "Process Group ID",
    "Comms Id",
    "Group size",
    "dtype",
    "Seq",
    "Rank",
    "Process Group Description",
    "other",
]


def _text_of(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"


@st.composite
def _object(draw: st.DrawFn, pairs: list[tuple[str, str]]) -> str:
    """An object's text: the pairs in a drawn order, sometimes one repeated."""
    pairs = draw(st.permutations(pairs))
    if pairs and draw(st.integers(0, 5)) == 0:
        pairs = [*pairs, draw(st.sampled_from(pairs))]
    return _text_of(pairs)


@st.composite
def _event(draw: st.DrawFn) -> str:
    ph = draw(st.sampled_from(["X", "X", "X", "X", "M", "i", "f", "s", "C"]))
    pairs = [("ph", json.dumps(ph))]
    if ph == "X":
        pairs.append(
            (
                "cat",
                draw(
                    st.one_of(
                        _string_text(),
                        st.sampled_from(
                            [
                                '"kernel"',
                                '"cpu_op"',
                                '"cuda_runtime"',
                                '"gpu_memcpy"',
                                '"cuda_sync"',
                                '"gpu_user_annotation"',
                                '"python_function"',
                                '"user_annotation"',
                                '"Trace"',
                                "5",
                                "null",
                            ]
                        ),
                    )
                ),
            )
        )
        pairs.append(("name", draw(st.one_of(_string_text(), _scalar))))
        for key in ("ts", "dur"):
            if draw(st.integers(0, 9)):
                pairs.append((key, draw(st.one_of(_number_text(), _scalar))))
        for key in ("pid", "tid"):
            if draw(st.integers(0, 5)):
                pairs.append((key, draw(st.one_of(st.integers(-1, 9).map(str), _scalar))))
        if draw(st.integers(0, 5)):
            keys = draw(st.lists(st.sampled_from(_ARG_KEYS), max_size=8, unique=True))
            args = [(k, draw(_value())) for k in keys]
            pairs.append(("args", draw(_object(args))))
    elif ph == "M":
        pairs.append(
            (
                "name",
                draw(
                    st.sampled_from(
                        [
                            '"process_name"',
                            '"thread_name"',
                            '"process_labels"',
                            '"process_sort_index"',
                        ]
                    )
                ),
            )
        )
        pairs.append(("pid", draw(st.sampled_from(["0", "1", '"Spans"', "null"]))))
        pairs.append(("tid", draw(st.sampled_from(["0", "7", '"t"']))))
        pairs.append(
            (
                "args",
                draw(st.sampled_from(['{"name": "a"}', '{"labels": "b"}', '{"name": 3}', "{}"])),
            )
        )
    elif ph == "C":  # counters: declined, so the chunk goes through msgspec
        pairs.append(("name", draw(_string_text())))
        pairs.append(("ts", draw(_number_text())))
        pairs.append(("args", draw(_object([("v", draw(_number_text()))]))))
    else:
        pairs.append(("name", draw(_string_text())))
        pairs.append(("ts", draw(_number_text())))
        pairs.append(("id", "1"))
        if ph == "i" and draw(st.booleans()):  # a memory sample
            pairs[1] = ("name", '"[memory]"')
            keys = ["Total Allocated", "Total Reserved", "Device Id", "Bytes"]
            values = st.one_of(_number_text(), _scalar)
            mem = [(k, draw(values)) for k in keys if draw(st.booleans())]
            pairs.append(("args", draw(_object(mem))))
    return draw(_object(pairs))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(events=st.lists(_event(), min_size=1, max_size=25), gz=st.booleans())
def test_generated_traces_read_alike(
    events: list[str], gz: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any mix of values, types, key orders, repeated keys and escapes: the same Trace, or the
    same error, whether the chunks are scanned natively or decoded by msgspec."""
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 256)
    monkeypatch.setattr(kineto_stream, "PIECE_BYTES", 64)
    text = ('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(events) + "\n]}").encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    _assert_equal(path, monkeypatch)
