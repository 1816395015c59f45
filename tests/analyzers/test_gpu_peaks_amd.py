"""AMD Instinct peaks: the table equals the documented per-CU rates × CUs × clock, traced
device names (and nameless devices, by gfx target and CU count) find their entry, and a device
without peaks says why."""

from __future__ import annotations

from dataclasses import replace

import pytest

from analyzers.gpu_peaks import peaks_for_device, peaks_named
from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import DeviceInfo
from collectors.peaks import load_peaks
from reports.summary.sections.efficiency import roofline
from tests.support.amd_traces import load, tracelens_path, tracelens_traces

CDNA3_FLOP_PER_CLOCK_PER_CU = {
    # ROCm docs, MI300 microarchitecture, "Peak-performance capabilities of the MI300X"
    "fp64_tflops": 128,
    "fp64_tensor_tflops": 256,
    "fp32_tflops": 256,
    "fp32_tensor_tflops": 256,
    "tf32_tensor_tflops": 1024,
    "fp16_tensor_tflops": 2048,
    "bf16_tensor_tflops": 2048,
    "fp8_tensor_tflops": 4096,
    "int8_tensor_tops": 4096,
}
CDNA2_FLOP_PER_CLOCK_PER_CU = {
    # ROCm docs, MI250 microarchitecture (fp32 = packed FP32 = FP32 matrix, 256)
    "fp64_tflops": 128,
    "fp64_tensor_tflops": 256,
    "fp32_tflops": 256,
    "fp32_tensor_tflops": 256,
    "fp16_tensor_tflops": 1024,
    "bf16_tensor_tflops": 1024,
    "int8_tensor_tops": 1024,
}


@pytest.mark.parametrize(
    ("entry", "rates", "cus", "ghz"),
    [
        ("MI300X OAM 192 GB", CDNA3_FLOP_PER_CLOCK_PER_CU, 304, 2.1),
        ("MI325X OAM 256 GB", CDNA3_FLOP_PER_CLOCK_PER_CU, 304, 2.1),
        ("MI250 (one GCD)", CDNA2_FLOP_PER_CLOCK_PER_CU, 104, 1.7),
        ("MI250X (one GCD)", CDNA2_FLOP_PER_CLOCK_PER_CU, 110, 1.7),
        ("MI210 PCIe 64 GB", CDNA2_FLOP_PER_CLOCK_PER_CU, 104, 1.7),
    ],
)
def test_peaks_are_the_documented_per_cu_rates_times_cus_times_clock(
    entry: str, rates: dict[str, int], cus: int, ghz: float
) -> None:
    g = peaks_named(load_peaks(), entry)
    assert g.values["sm_count"] == cus and g.values["boost_clock_mhz"] == ghz * 1000
    assert g.text["source"] and g.text["gfx"] in ("gfx942", "gfx90a")
    for key, per_cu in rates.items():
        assert g.values[key] == pytest.approx(per_cu * cus * ghz / 1000, abs=0.06), (entry, key)
    # CDNA2 has neither TF32 nor FP8 matrix rates
    if g.text["gfx"] == "gfx90a":
        assert "tf32_tensor_tflops" not in g.values and "fp8_tensor_tflops" not in g.values


def test_memory_bandwidths_are_the_documented_figures() -> None:
    t = load_peaks()
    bw = {
        n: peaks_named(t, n).values["mem_bw_gbs"] for n in ("MI300X OAM 192 GB", "MI250 (one GCD)")
    }
    # ROCm docs: MI300X 5.3 TB/s; MI250 3.2 TB/s per OAM = 1.6 TB/s per GCD
    assert bw == {"MI300X OAM 192 GB": 5300.0, "MI250 (one GCD)": 1600.0}
    assert peaks_named(t, "MI325X OAM 256 GB").is_unverified("mem_bw_gbs")


def _amd(name: str, cc: tuple[int, int], cus: int, gib: float | None = None) -> DeviceInfo:
    mem = int(gib * 2**30) if gib else None
    return DeviceInfo(
        id=0,
        name=name,
        vendor="AMD",
        compute_major=cc[0],
        compute_minor=cc[1],
        sm_count=cus,
        total_memory_bytes=mem,
        warp_size=64,
    )


@pytest.mark.parametrize(
    ("dev", "entry", "how"),
    [
        (_amd("AMD Instinct MI300X VF", (9, 4), 304, 191.45), "MI300X OAM 192 GB", "device name"),
        (_amd("AMD Instinct MI325X", (9, 4), 304, 256), "MI325X OAM 256 GB", "device name"),
        (_amd("AMD Instinct MI210", (9, 0), 104, 64), "MI210 PCIe 64 GB", "device name"),
        # one ROCm name for both SKUs: the CU count picks the GCD
        (_amd("AMD Instinct MI250X/MI250", (9, 0), 104), "MI250 (one GCD)", "device name"),
        (_amd("AMD Instinct MI250X/MI250", (9, 0), 110), "MI250X (one GCD)", "device name"),
        # no marketing name: gfx target + CUs (+ memory)
        (_amd("", (9, 4), 304, 192), "MI300X OAM 192 GB", "architecture gfx942, 304 CUs"),
        (_amd("AMD Radeon Graphics", (9, 4), 304, 256), "MI325X OAM 256 GB", "architecture"),
        (_amd("AMD Radeon Graphics", (9, 0), 104, 64), "MI250 (one GCD)", "architecture gfx90a"),
    ],
)
def test_amd_devices_find_their_entry(dev: DeviceInfo, entry: str, how: str) -> None:
    m = peaks_for_device(load_peaks(), dev)
    assert m.peaks is not None and m.peaks.name == entry and m.reason is None
    assert m.how is not None and m.how.startswith(how)


@pytest.mark.parametrize(
    ("dev", "words"),
    [
        (_amd("AMD Instinct MI300X", (9, 4), 38), "reports 38 CUs"),  # CPX compute partition
        (_amd("AMD Radeon Graphics", (9, 4), 228), "unknown device name 'AMD Radeon Graphics'"),
        (DeviceInfo(id=0, name="NVIDIA GeForce RTX 3090"), "unknown device name 'NVIDIA GeFo"),
        (DeviceInfo(id=0, name=None), "empty device name"),
        (None, "no device properties"),
    ],
)
def test_device_without_peaks_says_why(dev: DeviceInfo | None, words: str) -> None:
    m = peaks_for_device(load_peaks(), dev)
    assert m.peaks is None and m.reason is not None and words in m.reason


TRACES = tracelens_traces()


def test_mi300x_trace_roofline_has_ceilings_and_unknown_device_says_why() -> None:
    if not TRACES:
        pytest.skip("TraceLens traces not present")
    trace = load(tracelens_path("mi300/gaunernst_bert-small-uncased__1016001.json.gz"))
    ops = roofline(trace, AnalysisOptions(), AnalysisInputs())["ops"]
    assert ops["gpu_peaks"] == "MI300X OAM 192 GB" and "gpu_peaks_missing" not in ops
    timed = [p for p in ops["points"] if p["time_ns"]]
    assert timed and all(p["pct_of_attainable"] is not None for p in timed)
    assert all(p["ceilings"]["bytes_per_s"]["dram"] == 5300e9 for p in timed)
    dev = trace.gpu_device
    assert dev is not None
    # a name the table does not know, and 228 CUs: no entry by name or by gfx942 + CUs
    mystery = replace(dev, name="Mystery GPU", sm_count=228)
    other = replace(trace, meta=replace(trace.meta, devices=[mystery]))
    ops = roofline(other, AnalysisOptions(), AnalysisInputs())["ops"]
    assert ops["gpu_peaks"] is None
    assert "unknown device name 'Mystery GPU' (gfx942, 228 CUs)" in ops["gpu_peaks_missing"]
    assert all(p["pct_of_attainable"] is None for p in ops["points"])
