"""AMD devices are named by their LLVM target (gfx942, gfx90a) and counted in compute units,
never as the non-existent ``sm_94``/``sm_90`` NVIDIA architectures their GFXIP version spells."""

from __future__ import annotations

import pytest

from analyzers.arch import amd_gfx, compute_unit_word, device_arch_name
from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import DeviceInfo
from reports.html_payload import header
from reports.summary.sections.core import device as device_section
from tests.support.amd_traces import HTA_MI250, load, tracelens_path, tracelens_traces
from tests.support.env import shared_path

TRACES = tracelens_traces()


@pytest.mark.parametrize("rel", TRACES)
def test_every_tracelens_device_is_named_by_its_gfx_target_and_cus(rel: str) -> None:
    trace = load(tracelens_path(rel))
    d = device_section(trace, AnalysisOptions(), AnalysisInputs())
    # ROCm "AMD GPU specifications": MI210 gfx90a (104 CUs), MI300X gfx942 (304 CUs)
    want = ("gfx90a", 104) if "mi210/" in rel else ("gfx942", 304)
    assert (d["arch"], d["sm_count"]) == want
    gpus = header({"ranks": [{"rank": 0, "device": d}]})["gpus"]
    if d["name"]:
        assert gpus[0]["name"] == f"{d['name']} ({want[0]}, {want[1]} CUs)"


def test_hta_mi250_trace_generic_name_resolves_by_gfxip_and_cu_count() -> None:
    dev = load(shared_path(*HTA_MI250)).gpu_device
    assert dev is not None and dev.name == "AMD Radeon Graphics" and dev.arch == "sm_90"
    assert device_arch_name(dev) == "gfx90a"  # GFXIP 9.0 with 104 CUs: MI210 / one MI250 GCD


@pytest.mark.parametrize(
    ("dev", "want"),
    [
        (DeviceInfo(id=0, name="AMD Instinct MI300X VF", vendor="AMD"), "gfx942"),
        (DeviceInfo(id=0, name="AMD Instinct MI325X", vendor="AMD"), "gfx942"),
        (DeviceInfo(id=0, name="AMD Instinct MI250X/MI250", vendor="AMD"), "gfx90a"),
        (DeviceInfo(id=0, name="AMD Instinct MI100", vendor="AMD"), "gfx908"),
        # an empty name (vLLM's trace): vendor guessed NVIDIA, but the wavefront is 64
        (
            DeviceInfo(
                id=0, name="", vendor="NVIDIA", compute_major=9, compute_minor=4, warp_size=64
            ),
            "gfx942",
        ),
        (
            DeviceInfo(
                id=0,
                name="AMD Radeon Graphics",
                vendor="AMD",
                compute_major=9,
                compute_minor=0,
                sm_count=80,
            ),
            None,  # GFXIP 9.0 with 80 CUs: gfx906/908/90a cannot be told apart
        ),
        (DeviceInfo(id=0, name="NVIDIA H100", compute_major=9, compute_minor=0), "sm_90"),
    ],
)
def test_arch_names(dev: DeviceInfo, want: str | None) -> None:
    assert device_arch_name(dev) == want


def test_compute_unit_word() -> None:
    assert compute_unit_word("AMD") == compute_unit_word(None, 64) == "CUs"
    assert compute_unit_word("NVIDIA", 32) == compute_unit_word(None) == "SMs"
    assert amd_gfx(DeviceInfo(id=0)) is None
