"""The NVML sampler driven by a fake pynvml (tests/fakes/fake_pynvml.py).

The fake's readings are exact functions of a fake clock, so every expected row below is
computed by hand from the fake's settings (power, energy start, clocks ...), not by the code
under test.
"""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import numpy as np
import pynvml
import pytest

from analyzers.energy import energy_per_step
from collectors.errors import InputError
from collectors.nvml import CSV_HEADER, read_counters
from profiler.backends.nvml import NvmlSampler
from tests.fakes.fake_pynvml import FakeGpu, FakeNvml

UNIX0 = 1_800_000_000_000_000_000


class Clock:
    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> int:
        return self.t


def _sampler(tmp_path: Path, gpus: list[FakeGpu], **kw) -> tuple[NvmlSampler, FakeNvml, Clock]:
    clock = Clock()
    fake = FakeNvml(gpus, clock=clock)
    s = NvmlSampler(tmp_path / "node.csv.gz", nvml=fake, clock=clock, time_base=(0, UNIX0), **kw)
    return s, fake, clock


def _rows(df, name: str, device: int) -> list[tuple[int, float]]:
    sel = df[(df["name"] == name) & (df["device"] == device)]
    return list(zip(sel["ts_ns"].tolist(), sel["value"].tolist(), strict=True))


def test_one_poll_writes_every_field_of_a_fake_h200(tmp_path: Path) -> None:
    s, fake, clock = _sampler(tmp_path, [FakeGpu()])
    assert s.open()
    clock.t = 250_000_000
    s.poll()
    s.stop()
    df = read_counters(tmp_path / "node.csv.gz")
    t = UNIX0 + 250_000_000
    got = {name: v for name, ts, v in zip(df["name"], df["ts_ns"], df["value"], strict=True)
           if ts == t}  # fmt: skip
    assert got == {
        "power_instant_mw": 300_000,
        "energy_mj": 1_000_000 + 300_000 * 250_000_000 // 10**9,  # 1_075_000
        "memory_temp_c": 55,
        "nvlink_tx_kib": 2 * 500,  # summed over the 2 links
        "nvlink_rx_kib": 2 * 700,
        "gpu_util_pct": 87,
        "mem_util_pct": 41,
        "mem_used_bytes": 40_000_000_000,
        "sm_clock_mhz": 1980,
        "mem_clock_mhz": 3201,
        "clock_event_reasons": 0x4,
        "gpu_temp_c": 61,
        "pcie_tx_kbps": 1200,
        "pcie_rx_kbps": 3400,
    }
    assert df["ts_ns"].dtype == np.int64 and set(df["device"]) == {0}
    st = s.status()
    assert st["available"] and st["polls"] == 2  # the explicit poll + the final one at stop
    assert st["devices"][0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert st["cpu_ns_per_poll"] is not None and st["cpu_ns_per_poll"] > 0
    assert fake.init_count == fake.shutdown_count == 1


def test_fields_are_read_in_one_batched_call_per_device_per_poll(tmp_path: Path) -> None:
    s, fake, clock = _sampler(tmp_path, [FakeGpu(), FakeGpu(uuid="GPU-1")])
    s.open()
    before = fake.calls.get("nvmlDeviceGetFieldValues", 0)
    for i in range(1, 6):
        clock.t = i * 100_000_000
        s.poll()
    assert fake.calls["nvmlDeviceGetFieldValues"] - before == 5 * 2
    s.stop()


def test_energy_per_step_is_the_counter_delta_between_step_boundaries(tmp_path: Path) -> None:
    s, _, clock = _sampler(tmp_path, [FakeGpu(power_mw=250_000), FakeGpu(power_mw=400_000)])
    s.open()
    bounds = [0, 300_000_000, 700_000_000, 1_200_000_000]  # steps of 0.3, 0.4, 0.5 s
    for k, b in enumerate(bounds):
        clock.t = b
        s.mark_step(k, b)
        clock.t = b + 50_000_000
        s.poll()
    s.stop()
    e = energy_per_step(read_counters(tmp_path / "node.csv.gz"))
    assert list(e["step"]) == [0, 1, 2, 0, 1, 2]
    assert list(e["device"]) == [0, 0, 0, 1, 1, 1]
    # energy = power × duration: 250 W × 0.3 s = 75 J = 75_000 mJ, ...
    assert list(e["energy_mj"]) == [75_000, 100_000, 125_000, 120_000, 160_000, 200_000]
    assert list(e["avg_power_w"]) == [250.0] * 3 + [400.0] * 3
    assert list(e["start_ns"]) == [UNIX0 + b for b in bounds[:-1]] * 2
    assert list(e["end_ns"]) == [UNIX0 + b for b in bounds[1:]] * 2


def test_unsupported_readings_fall_back_and_are_not_asked_again(tmp_path: Path) -> None:
    gpu = FakeGpu(
        unsupported_fields={pynvml.NVML_FI_DEV_POWER_INSTANT},
        unsupported_calls={"nvmlDeviceGetPcieThroughput"},
        nvlink_links=0,
    )
    s, fake, clock = _sampler(tmp_path, [gpu])
    s.open()
    for i in range(1, 4):
        clock.t = i * 1_100_000_000  # > 1 s apart: PCIe is due every poll
        s.poll()
    s.stop()
    df = read_counters(tmp_path / "node.csv.gz")
    assert "power_instant_mw" not in set(df["name"])
    assert _rows(df, "power_usage_mw", 0)[0] == (UNIX0 + 1_100_000_000, 300_000)
    # TX and RX tried once each on the first poll, never again
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2
    st = s.status()
    assert set(st["devices"][0]["unsupported"]) == {
        "power_instant_mw",
        "pcie_tx_kbps",
        "pcie_rx_kbps",
    }
    assert st["errors"] == {}


def test_gpm_metrics_on_a_hopper_device(tmp_path: Path) -> None:
    s, fake, clock = _sampler(tmp_path, [FakeGpu(gpm=True)])
    s.open()
    for t in (100_000_000, 400_000_000, 700_000_000):  # GPM samples ≥ 0.5 s apart
        clock.t = t
        s.poll()
    s.stop()
    df = read_counters(tmp_path / "node.csv.gz")
    occ = _rows(df, "gpm_sm_occupancy_pct", 0)
    assert occ == [(UNIX0 + 700_000_000, 33.5)]  # the interval 0.1 s → 0.7 s
    assert _rows(df, "gpm_tensor_active_pct", 0) == [(UNIX0 + 700_000_000, 62.25)]
    assert "gpm_nvlink_tx_mibps" not in set(df["name"])  # fake reports NOT_SUPPORTED for it
    assert fake.gpm_balance == 0  # both samples freed


def test_sampler_thread_survives_the_library_raising_mid_run(tmp_path: Path) -> None:
    fake = FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-1")], clock=time.perf_counter_ns)
    s = NvmlSampler(tmp_path / "node.csv.gz", hz=200, nvml=fake, flush_interval_s=0.05)
    assert s.start()
    deadline = time.monotonic() + 10
    while s.status()["polls"] < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake.fail_all_with = pynvml.NVML_ERROR_GPU_IS_LOST
    polls = s.status()["polls"]
    while s.status()["polls"] < polls + 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake.fail_all_with = None
    fake.raise_python_error = True  # a non-NVML exception too
    polls = s.status()["polls"]
    while s.status()["polls"] < polls + 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake.raise_python_error = False
    s.mark_step(1)
    st = s.stop()
    assert s._thread is None  # joined
    assert st["errors"].get("GPU is lost", 0) > 0
    assert st["errors"].get("binding exploded", 0) > 0
    df = read_counters(tmp_path / "node.csv.gz")
    assert {"power_instant_mw", "energy_mj", "step_begin"} <= set(df["name"])
    assert fake.init_count == fake.shutdown_count == 1


def test_missing_library_is_recorded_as_unavailable(tmp_path: Path) -> None:
    fake = FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    s = NvmlSampler(tmp_path / "node.csv.gz", nvml=fake)
    assert s.start() is False
    s.mark_step(1)
    st = s.stop()
    assert st["available"] is False
    assert st["reason"] == "NVML Shared Library Not Found"
    assert not (tmp_path / "node.csv.gz").exists()


def test_no_gpu_is_recorded_as_unavailable_and_nvml_shut_down(tmp_path: Path) -> None:
    fake = FakeNvml([])
    s = NvmlSampler(tmp_path / "node.csv.gz", nvml=fake)
    assert s.start() is False
    assert s.status()["reason"] == "no NVIDIA GPU on this node"
    assert fake.init_count == fake.shutdown_count == 1


def test_real_pynvml_without_driver_is_unavailable_not_an_exception(tmp_path: Path) -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver: the fake covers the unavailable path")
    s = NvmlSampler(tmp_path / "node.csv.gz")
    assert s.start() is False
    assert s.stop()["available"] is False


def test_counter_file_cut_short_by_a_crash_reads_up_to_the_last_complete_row(
    tmp_path: Path,
) -> None:
    s, _, clock = _sampler(tmp_path, [FakeGpu()])
    s.open()
    for i in range(1, 4):
        clock.t = i * 100_000_000
        s.poll()
    s._flush(force=True)  # what the thread does every second; the writer then "dies"
    data = (tmp_path / "node.csv.gz").read_bytes()
    crashed = tmp_path / "crashed.csv.gz"
    crashed.write_bytes(data)  # no gzip trailer: the file was never closed
    s.stop()
    df = read_counters(crashed)
    assert sorted(set(df["ts_ns"])) == [UNIX0 + i * 100_000_000 for i in range(1, 4)]
    full = read_counters(tmp_path / "node.csv.gz")
    assert len(full) > len(df)


def test_reading_something_else_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "x.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("a,b\n1,2\n")
    with pytest.raises(InputError, match="not a gpuscope NVML counter file"):
        read_counters(p)
    with pytest.raises(InputError, match="cannot read"):
        read_counters(tmp_path / "missing.csv.gz")
    q = tmp_path / "bad.csv.gz"
    q.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(InputError, match="gzip"):
        read_counters(q)
    assert CSV_HEADER.startswith("t_mono_ns,t_unix_ns,gpu,field,value")
