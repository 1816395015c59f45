"""Fuzzing the Kineto reader through ``gpuscope analyze --json`` (docs/reliability.md).

Three sources of cases: traces built from the event builders with any field drawn odd
(:func:`support.fuzzing.weird`), one field of a real trace set to an odd value, and byte-level
mutations (truncation, flips, insertions...) of real traces, plain and gzip-compressed.  Each
case must exit 0 with a JSON summary that the validating reader accepts, or exit 2 with one
line naming the file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import kineto_events as ke
from tests.support.env import SAMPLES, SHARED_DATA
from tests.support.fuzzing import (
    byte_mutations,
    fuzz_settings,
    mutate_bytes,
    run_case,
    sometimes_weird,
)

READER = "kineto"
REAL = [
    SAMPLES / "torch_cpu" / "rank-0.json.gz",
    SAMPLES / "real" / "trace_compare_base" / "base.json.gz",
    SHARED_DATA / "kineto/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    SHARED_DATA / "kineto/tracelens/torch_compile_triton/trace.json.gz",
]
REAL = [p for p in REAL if p.exists()]

_times = sometimes_weird(st.one_of(st.integers(0, 10**6), st.floats(0, 1e6)))
_names = sometimes_weird(st.sampled_from(["gemm", "aten::mm", "ncclKernel_AllReduce", "k"]))


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A short trace: kernels, launch calls, ops, steps, syncs and counters, any field odd."""
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["kernel", "runtime", "cpu_op", "step", "sync", "counter"]))
        ts, dur, corr = draw(_times), draw(_times), draw(sometimes_weird(st.integers(0, 5)))
        if kind == "kernel":
            out.append(
                ke.kernel(
                    draw(_names),
                    ts,
                    dur,
                    correlation=corr,
                    stream=draw(sometimes_weird(st.integers(0, 20))),
                )
            )
        elif kind == "runtime":
            out.append(
                ke.runtime("cudaLaunchKernel", ts, dur, correlation=corr, kernel_name=draw(_names))
            )
        elif kind == "cpu_op":
            out.append(ke.cpu_op(draw(_names), ts, dur, pid=draw(sometimes_weird(st.just(100)))))
        elif kind == "step":
            out.append(ke.step(draw(sometimes_weird(st.integers(0, 10))), ts, dur))
        elif kind == "sync":
            out.append(
                ke.cuda_sync(
                    "Event Sync",
                    ts,
                    dur,
                    correlation=corr,
                    wait_on_stream=draw(sometimes_weird(st.integers(0, 20))),
                    wait_on_event=draw(sometimes_weird(st.integers(0, 5))),
                )
            )
        else:
            out.append(ke.counter("mem", ts, draw(sometimes_weird(st.floats(0, 1e9)))))
        if draw(st.integers(0, 9)) == 0:  # drop or break one field of this event
            ev = out[-1]
            key = draw(st.sampled_from(sorted(ev)))
            if draw(st.booleans()):
                del ev[key]
            else:
                ev[key] = draw(sometimes_weird(st.just(ev[key])))
    return out


def _analyze(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "summary.json"
    run_case(READER, ["analyze", trace, "--json", out, "--no-cache"], [trace], out)


@fuzz_settings(60)
@given(evs=events(), gz=st.booleans())
def test_generated_traces_keep_the_contract(
    tmp_path_factory: pytest.TempPathFactory, evs: list[dict[str, Any]], gz: bool
) -> None:
    d = tmp_path_factory.mktemp("kg")
    trace = ke.write_trace(d / ("t.json.gz" if gz else "t.json"), evs)
    _analyze(d, trace)


def _real_doc(i: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(REAL[i].read_bytes()))
    return doc


@pytest.mark.skipif(not REAL, reason="no real Kineto trace present")
@fuzz_settings(50)
@given(data=st.data())
def test_a_real_trace_with_odd_fields_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(REAL) - 1), label="file")
    doc = _real_doc(i)
    evs = doc["traceEvents"]
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        ev = evs[data.draw(st.integers(0, len(evs) - 1), label="event")]
        target = ev
        if isinstance(ev.get("args"), dict) and ev["args"] and data.draw(st.booleans()):
            target = ev["args"]
        key = data.draw(st.sampled_from(sorted(target)), label="key")
        target[key] = data.draw(sometimes_weird(st.just(target[key])), label="value")
    d = tmp_path_factory.mktemp("kr")
    trace = ke.write_trace(d / REAL[i].name, doc)
    _analyze(d, trace)


@pytest.mark.skipif(not REAL, reason="no real Kineto trace present")
@fuzz_settings(50)
@given(
    i=st.integers(0, 3),
    mutations=byte_mutations(),
    where=st.sampled_from(["json", "gzip-stream", "gzip-file"]),
)
def test_a_real_trace_with_broken_bytes_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, i: int, mutations: Any, where: str
) -> None:
    src = REAL[i % len(REAL)]
    raw = src.read_bytes()
    if where == "gzip-file":  # the compressed bytes broken
        data, name = mutate_bytes(raw, mutations), src.name
    else:  # the JSON text broken, then written plain or compressed
        data = mutate_bytes(gzip.decompress(raw), mutations)
        name = src.name if where == "gzip-stream" else src.name.removesuffix(".gz")
        data = gzip.compress(data, mtime=0) if where == "gzip-stream" else data
    d = tmp_path_factory.mktemp("kb")
    trace = d / name
    trace.write_bytes(data)
    _analyze(d, trace)
