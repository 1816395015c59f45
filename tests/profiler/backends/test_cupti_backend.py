"""CUPTI backend against a fake at the CUPTI boundary (tests/fakes/fake_cupti.py).

Expected values are computed by hand from the records the fake hands to CUPTI's
buffer-completed callback; the written trace is read back with the project's Kineto reader.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from collectors.errors import MissingDependencyError
from collectors.load import load_traces
from profiler.backends.cupti import CuptiCapture, load_cupti
from profiler.backends.cupti_events import to_kineto_events
from profiler.kineto_writer import write_trace
from tests.fakes import fake_cupti
from tests.support.raw_kineto import document

UNIX0 = 1_790_000_000_123_456_789
"""Wall clock at start(); the fake's CUPTI clock then reads 5_000_000_000 ns."""
OFFSET = UNIX0 - 5_000_000_000
BASE = 1_790_000_000_000_000_000


def _workload(fake: fake_cupti.FakeCupti) -> None:
    fake.launch_kernel(
        "gemm<128>", 5_000_100_001, 5_000_150_004, corr=11, api_start=5_000_090_000,
        api_end=5_000_095_500,
    )  # fmt: skip
    fake.memcpy(
        1 << 20, 5_000_200_000, 5_000_300_000, corr=12, copy_kind=1, api_start=5_000_190_000,
        api_end=5_000_310_000,
    )  # fmt: skip
    fake.memset(4096, 5_000_400_000, 5_000_400_512, corr=13)


def test_cupti_records_become_kineto_events_with_exact_times(monkeypatch) -> None:
    fake = fake_cupti.install(monkeypatch)
    cap = CuptiCapture(unix_clock=lambda: UNIX0)
    cap.start()
    assert cap.offset_ns == OFFSET
    assert fake.enabled == {10, 1, 2, 5}  # CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME
    _workload(fake)
    records = cap.stop()
    assert fake.enabled == set() and fake.flushes == 1
    events = to_kineto_events(records, offset_ns=cap.offset_ns, base_ns=BASE)
    by_cat = {e["cat"]: e for e in events if e["ph"] == "X"}
    k = by_cat["kernel"]
    # 5_000_100_001 + OFFSET - BASE = 123_556_790 ns = 123556.790 µs
    assert k["ts"] == 123556.79 and k["dur"] == 50.003
    assert k["pid"] == 0 and k["tid"] == 7
    assert k["args"]["grid"] == [108, 2, 1] and k["args"]["block"] == [256, 1, 1]
    assert k["args"]["registers per thread"] == 40
    assert k["args"]["shared memory"] == 1024 + 4096
    m = by_cat["gpu_memcpy"]
    assert m["name"] == "Memcpy HtoD (Pinned -> Device)"
    assert m["args"]["bytes"] == 1 << 20 and m["dur"] == 100
    assert m["args"]["memory bandwidth (GB/s)"] == (1 << 20) / 100_000
    assert by_cat["gpu_memset"]["args"]["bytes"] == 4096
    runtime = [e for e in events if e["cat"] == "cuda_runtime"]
    assert [e["name"] for e in runtime] == ["cudaLaunchKernel_v7000", "cudaMemcpy_v3020"]
    flows = [e for e in events if e["cat"] == "ac2g"]
    assert sorted((f["ph"], f["id"]) for f in flows) == [("f", 11), ("f", 12), ("s", 11), ("s", 12)]


def test_cupti_trace_is_read_by_the_kineto_reader(monkeypatch, tmp_path: Path) -> None:
    fake = fake_cupti.install(monkeypatch)
    cap = CuptiCapture(unix_clock=lambda: UNIX0)
    cap.start()
    _workload(fake)
    events = to_kineto_events(cap.stop(), offset_ns=cap.offset_ns, base_ns=BASE)
    path = write_trace(
        tmp_path / "rank-0.pt.trace.json.gz", events, base_time_ns=BASE, rank=0, world_size=1
    )
    (trace,) = load_traces([path])
    gpu = trace.gpu.sort_values("start_ns").reset_index(drop=True)
    assert list(gpu["kind"]) == ["kernel", "memcpy", "memset"]
    base = trace.meta.base_time_ns
    assert base == BASE
    # exact nanoseconds survive: CUPTI time + offset == trace time + base
    assert list(gpu["start_ns"] + base) == [5_000_100_001 + OFFSET, 5_000_200_000 + OFFSET,
                                             5_000_400_000 + OFFSET]  # fmt: skip
    assert list(gpu["end_ns"] - gpu["start_ns"]) == [50_003, 100_000, 512]
    k = gpu.iloc[0]
    assert (k.grid_x, k.grid_y, k.block_x, k.registers_per_thread) == (108, 2, 256, 40)
    assert k.correlation == 11 and k.stream == 7 and k.device == 0
    assert gpu.iloc[1]["bytes"] == 1 << 20 and gpu.iloc[1]["copy_kind"] == "HtoD"
    host = trace.host
    launch = host[host["name"] == "cudaLaunchKernel_v7000"].iloc[0]
    assert launch["correlation"] == 11 and launch["cat"] == "cuda_runtime"
    assert launch["start_ns"] + base == 5_000_090_000 + OFFSET


def test_session_with_cupti_backend_traces_only_the_window(monkeypatch, tmp_path: Path) -> None:
    import profiler
    from profiler.session import Session

    fake = fake_cupti.install(monkeypatch)
    s = Session(tmp_path / "run", steps="1:2", nvml_hz=0, backend="cupti").start()
    assert s.backend == "cupti"
    fake.launch_kernel("before_window", 1, 2, corr=1, api_start=0, api_end=1)  # step 0
    s.step()
    with profiler.region("fwd"):
        fake.launch_kernel("in_window", 10, 20, corr=2, api_start=5, api_end=6)  # step 1
    s.step()
    fake.launch_kernel("after_window", 30, 40, corr=3, api_start=25, api_end=26)  # step 2
    s.stop()
    doc = document(tmp_path / "run/traces/rank-0.pt.trace.json.gz")
    names = {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert "in_window" in names and "fwd" in names and "ProfilerStep#1" in names
    assert not names & {"before_window", "after_window", "ProfilerStep#0", "ProfilerStep#2"}
    (trace,) = load_traces([tmp_path / "run/traces"])
    assert list(trace.gpu["name"]) == ["in_window"]
    assert list(trace.steps()["step"]) == [1]
    meta = json.loads((tmp_path / "run/ranks/rank-0.json").read_text())
    assert meta["backend"] == "cupti" and meta["steps_captured"] == [1, 1]


def test_cupti_failure_degrades_to_host_events(monkeypatch, tmp_path: Path, capsys) -> None:
    from profiler.session import Session

    fake = fake_cupti.install(monkeypatch)
    fake.fail_enable = 15  # CUPTI_ERROR_NOT_INITIALIZED
    s = Session(tmp_path / "run", steps="0:1", nvml_hz=0, backend="cupti").start()
    s.step()
    s.stop()
    meta = json.loads((tmp_path / "run/ranks/rank-0.json").read_text())
    assert any(e.startswith("CUPTI") for e in meta["errors"])
    assert "capture degraded" in capsys.readouterr().err
    (trace,) = load_traces([tmp_path / "run/traces"])
    assert list(trace.steps()["step"]) == [0] and trace.gpu.empty


def test_missing_cupti_python_is_a_missing_dependency(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)
    with pytest.raises(MissingDependencyError, match="cupti-python"):
        load_cupti()
