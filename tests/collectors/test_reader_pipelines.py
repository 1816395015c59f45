"""The Kineto and Nsight Systems readers are pipelines: every call between their modules goes one
way, from a stage to a stage below it, whichever path a file takes (Kineto: typed chunks, exact
decimal times, collective metadata, the whole-text read of a malformed file, the two-process read;
nsys: exports of several nsys releases)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import collectors.kineto
import collectors.kineto.native
import collectors.nsys
from collectors.errors import InputError
from collectors.kineto import read_kineto
from collectors.nsys import read_nsys
from tests.support.env import shared_path

KINETO = Path(collectors.kineto.__file__).parent
KINETO_CALLS_DOWN = {
    "reader": {"early", "parallel", "rows", "tables"},
    "early": {"parallel", "rows", "stream"},
    "parallel": {"rows"},
    "rows": {"stream", "columns", "native"},
    "stream": {"source", "decode", "native"},
}
"""Which stage modules each Kineto stage may call (a module's calls to itself are not listed)."""
KINETO_STAGE_OF = {"native_rows": "rows", "scan_thread": "stream", "read_process": "early"}
"""Modules that are part of another stage: the rows of natively scanned chunks
(``native_rows``) are built by the rows stage, the stream stage's scanning thread
(``scan_thread``) runs the native scans, and the early stage's reading process
(``read_process``) reads a file ahead of the caller, each in a module of its own."""

NSYS = Path(collectors.nsys.__file__).parent
NSYS_CALLS_DOWN = {
    "reader": {"export", "tables", "traces"},
    "tables": {"gpu", "host", "counters", "devices", "schema"},
    "gpu": {"strings", "schema"},
    "host": {"strings", "schema"},
    "counters": {"schema"},
    "devices": {"schema"},
    "strings": {"schema"},
}
"""The same for the Nsight Systems reader."""


def _calls_between_stages(read: Any, package: Path = KINETO) -> set[tuple[str, str, str]]:
    """(caller stage, callee stage, function) of every call from one stage module into another
    while *read* runs (Python-level calls: the profile hook sees each call and generator
    resumption)."""
    seen: set[tuple[str, str, str]] = set()

    def _stage(frame: FrameType | None) -> str | None:
        if frame is None:
            return None
        path = Path(frame.f_code.co_filename)
        return KINETO_STAGE_OF.get(path.stem, path.stem) if path.parent == package else None

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        callee, caller = _stage(frame), _stage(frame.f_back)
        if callee and caller and callee != caller and frame.f_code.co_name != "<module>":
            seen.add((caller, callee, frame.f_code.co_name))

    sys.setprofile(hook)
    try:
        read()
    finally:
        sys.setprofile(None)
    return seen


def _upward(
    calls: set[tuple[str, str, str]], allowed: dict[str, set[str]] = KINETO_CALLS_DOWN
) -> list[tuple[str, str, str]]:
    return sorted(c for c in calls if c[1] not in allowed.get(c[0], set()))


@pytest.mark.parametrize(
    ("trace", "path_taken"),
    [
        ("trace_filter/sampled_rank-0.json.gz", "typed chunks"),
        ("trace_filter/sampled_rank-0.json.gz", "native chunks"),
        ("nccl_parser_config/nccl_data.json.gz", "collective metadata"),
        ("ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "exact times"),
    ],
)
def test_a_serial_read_calls_only_down_the_stages(
    trace: str, path_taken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_path("kineto", "hta", *trace.split("/"))
    native = path_taken == "native chunks"
    monkeypatch.setenv("GPUSCOPE_NATIVE_SCAN", "1" if native else "0")
    if native and not collectors.kineto.native.available():
        pytest.skip("the native scanner is not built")
    calls = _calls_between_stages(lambda: read_kineto(path, parallel=False))
    assert _upward(calls) == [], path_taken
    stages = {c[1] for c in calls}
    assert {"rows", "stream", "source", "decode", "tables"} <= stages  # the whole pipeline ran
    # the events as Structs (picked per row) on the msgspec path, never on the native one
    assert (("rows", "columns", "pick") in calls) != native
    if path_taken == "exact times":
        assert ("rows", "stream", "exact_values") in calls
    if path_taken == "collective metadata":
        assert ("rows", "stream", "comms_of") in calls


def test_the_whole_text_read_of_a_file_that_is_not_a_trace_calls_only_down() -> None:
    path = shared_path("kineto", "hta", "execution_trace", "benchmark_simple_add_et.json.gz")

    def read() -> None:
        with pytest.raises(InputError):
            read_kineto(path, parallel=False)

    calls = _calls_between_stages(read)
    assert _upward(calls) == []
    assert ("rows", "stream", "whole_chunks") in calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parallel read forks")
def test_a_two_process_read_calls_only_down_the_stages_in_the_parent() -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    calls = _calls_between_stages(lambda: read_kineto(path, parallel=True))
    assert _upward(calls) == []
    assert ("reader", "parallel", "read_rows") in calls
    assert ("parallel", "rows", "read_chunks") in calls
    assert ("parallel", "rows", "merge") in calls


@pytest.mark.parametrize(
    "export",
    [
        "nsys2022.2.1.31__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
        "nsys2023.4.4.54__tutorial_vqe__report1.sqlite",
        "nsys2025.5.2.266__cuda-perf-sandbox__report1.sqlite",
    ],
)
def test_an_nsys_read_calls_only_down_the_stages(export: str) -> None:
    path = shared_path("nsys", export)
    calls = _calls_between_stages(lambda: read_nsys(path), NSYS)
    assert _upward(calls, NSYS_CALLS_DOWN) == []
    assert {"tables", "traces", "gpu", "host", "schema"} <= {c[1] for c in calls}
