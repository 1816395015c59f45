"""The ``serving`` section inside the JSON summary: every key it writes is in the schema
(``collectors/summary/schema.py`` ``Serving``), for the shared serving traces with and without
their captures, a capture trace alone, and hand-built traces (MoE, recomputation, a device
with a peak), so the validating reader keeps it whole."""

from __future__ import annotations

import dataclasses
import json

import msgspec
import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.serving.graphs import Capture
from collectors.kineto import read_kineto
from collectors.model import DeviceInfo
from collectors.summary.reader import read_summary
from collectors.summary.schema import Summary
from reports.summary import build_summary, write_summary
from tests.support.serving_builders import Call, Kernel, Op, Range, launched, serving_trace
from tests.support.serving_data import CAPTURED, inference


def _round_trip(doc: dict) -> dict:
    raw = msgspec.json.encode(json.loads(json.dumps(doc, allow_nan=False)))
    typed = msgspec.json.decode(raw, type=Summary)
    assert typed == msgspec.json.decode(raw)
    assert msgspec.json.encode(typed) == raw  # no key dropped, no int/float changed
    return typed


@pytest.mark.parametrize("key", sorted(CAPTURED))
@pytest.mark.parametrize("with_capture", [True, False], ids=["capture", "no capture"])
def test_shared_serving_summaries_validate_unchanged(key, with_capture):
    ex_rel, cap_rel = CAPTURED[key]
    ex = read_kineto(inference(ex_rel))
    caps = {ex.rank: (Capture(read_kineto(inference(cap_rel))),)} if with_capture else {}
    doc = build_summary([ex], inputs=AnalysisInputs(graph_captures=caps))
    s = _round_trip(doc)["ranks"][0]["serving"]
    assert s["graphs"]["method"] == ("capture" if with_capture else "kernel-name")
    assert s["mfu"] is not None and s["peaks"]["name"] == "MI300X OAM 192 GB"


def test_a_capture_trace_alone_validates(tmp_path):
    _, cap_rel = CAPTURED["vllm"]
    doc = build_summary([read_kineto(inference(cap_rel))])
    assert _round_trip(doc)["ranks"][0]["serving"]["capture_trace"] is True
    path = write_summary(doc, tmp_path / "s.json")
    assert read_summary(path)["ranks"][0]["serving"] == doc["ranks"][0]["serving"]


def test_hand_built_serving_trace_with_moe_and_recomputation_validates():
    bf16 = '["c10::BFloat16","c10::BFloat16"]'
    host = [
        Op("vllm::moe_forward", 0, 50),
        Call("hipLaunchKernel", 1, 2, 1),
        *launched("aten::mm", "gemm_A", 60, 2, "[[64,128],[128,256]]", bf16),
        Op("CheckpointFunctionBackward", 70, 80),
        *launched("aten::mm", "gemm_A", 72, 3, "[[64,128],[128,256]]", bf16),
    ]
    gpu = [
        Kernel("_matmul_ogs_x", 100, 140, 1),
        Kernel("gemm_A", 140, 150, 2),
        Kernel("gemm_A", 150, 160, 3),
        Kernel("Memcpy HtoD", 160, 161, 3, kind="memcpy"),
    ]
    t = serving_trace(host, gpu, [Range("step[DECODE bs=8]", 0, 100)])
    dev = DeviceInfo(0, name="NVIDIA H100 80GB HBM3", sm_count=132)
    t = dataclasses.replace(t, meta=dataclasses.replace(t.meta, devices=[dev]))
    s = _round_trip(build_summary([t]))["ranks"][0]["serving"]
    assert s["peaks"]["name"] == "H100 SXM5 80 GB" and s["mfu"]["hfu"] is not None
    assert s["moe"]["layers"][0]["layer"] == "vllm::moe_forward"
    assert s["steps"][0]["mfu"]["dtype"] == "fp16_tensor"
    by_cat = {c["category"]: c for c in s["phases"][0]["categories"]}
    assert by_cat["MoE"]["pct_of_roof"] is None and by_cat["MoE"]["modelled_ns"] == 0
    assert by_cat["GEMM"]["pct_of_roof"] > 0


def test_a_trace_without_gpu_work_has_no_serving_section():
    t = serving_trace([Op("aten::mm", 0, 1)], [])
    assert "serving" not in build_summary([t])["ranks"][0]
