"""MFU / HFU and the category roofs (docs/inference.md "MFU"): hand computations on built traces,
and the model FLOPs of the shared serving traces against independent sums.

Hand cases use the H100 SXM5 entry of the built-in peak table (989 TFLOP/s FP16/BF16 dense,
495 TFLOP/s TF32, 3350 GB/s): an ``aten::mm`` of bf16 [M, K] × [K, N] is 2·M·N·K FLOPs and
reads and writes (M·K + K·N + M·N) × 2 bytes.
"""

from __future__ import annotations

import pytest

from analyzers.gpu_peaks import find_peaks
from analyzers.op_models import model_op, op_costs
from analyzers.serving import serving_analysis
from analyzers.serving.flops import row_flops
from analyzers.serving.graphs import Capture
from collectors.kineto import read_kineto
from collectors.peaks import load_peaks
from tests.support.raw_kineto import capture_links, events
from tests.support.serving_builders import (
    Call,
    Kernel,
    Op,
    Range,
    captured_graph,
    launched,
    serving_trace,
)
from tests.support.serving_data import CAPTURED, SERVING, inference

H100 = find_peaks(load_peaks(None), "H100 SXM5 80 GB")
BF16 = '["c10::BFloat16","c10::BFloat16"]'
FP32 = '["float","float"]'
M, K, N = 64, 128, 256
MM = f"[[{M},{K}],[{K},{N}]]"
MM_FLOPS = 2 * M * N * K
MM_BYTES = (M * K + K * N + M * N) * 2


def _step(name: str, t0: float, t1: float) -> Range:
    return Range(name, t0, t1)


def _decode(tokens: int) -> str:
    return f"step[DECODE bs={tokens}]"


def test_one_gemm_mfu_is_its_flops_over_busy_time_over_the_bf16_peak():
    # mm at 0–2 µs launches a 10 µs kernel; an unmodelled op a 5 µs one
    host = [
        *launched("aten::mm", "gemm_A", 0, 1, MM, BF16),
        *launched("my::thing", "thing_K", 3, 2),
    ]
    gpu = [Kernel("gemm_A", 10, 20, 1), Kernel("thing_K", 20, 25, 2)]
    t = serving_trace(host, gpu, [_step(_decode(4), 0, 30)])
    a = serving_analysis(t, peaks=H100)
    (total,) = a.mfu["total"].to_dict("records")
    assert total["model_flops"] == MM_FLOPS
    assert total["busy_ns"] == 15_000 and total["gpu_ns"] == 15_000
    assert total["modelled_ns"] == 10_000 and total["coverage"] == 10_000 / 15_000
    assert total["exact_share"] == 1.0 and total["dtype"] == "fp16_tensor"
    assert total["peak"] == "H100 SXM5 80 GB" and total["peak_flops"] == 989e12
    assert total["achieved_flops_per_s"] == pytest.approx(MM_FLOPS / 15e-6, rel=1e-12)
    assert total["mfu"] == pytest.approx(MM_FLOPS / 15e-6 / 989e12, rel=1e-12)
    assert total["hfu"] is None  # no recomputation visible
    # the step and its phase: the same numbers, over the step's busy time
    (step,) = a.mfu["steps"].to_dict("records")
    (phase,) = a.mfu["phases"].to_dict("records")
    assert phase["group"] == "decode"
    for row in (step, phase):
        assert row["mfu"] == pytest.approx(total["mfu"], rel=1e-12)
    # its category's roof: max(FLOPs / peak, bytes / bandwidth) over its 10 µs
    roofs = a.roofs["total"].set_index("category")
    roof_ns = max(MM_FLOPS / 989e12, MM_BYTES / 3350e9) * 1e9
    assert roofs.loc["GEMM", "roof_ns"] == pytest.approx(roof_ns, rel=1e-12)
    assert roofs.loc["GEMM", "pct_of_roof"] == pytest.approx(100 * roof_ns / 10_000, rel=1e-12)
    assert "other" not in roofs.index  # no model, no roof row


def test_a_calls_flops_are_spread_over_its_kernels_by_duration():
    host = [
        Op("aten::mm", 0, 5, MM, BF16),
        Call("hipLaunchKernel", 1, 2, 1),
        Call("hipLaunchKernel", 3, 4, 2),
    ]
    gpu = [Kernel("gemm_A", 10, 40, 1), Kernel("gemm_B", 40, 50, 2)]
    t = serving_trace(host, gpu)
    a = serving_analysis(t, peaks=H100)
    assert a.kops["flops"].tolist() == [0.75 * MM_FLOPS, 0.25 * MM_FLOPS]
    assert a.kops["bytes"].tolist() == [0.75 * MM_BYTES, 0.25 * MM_BYTES]


def test_the_outermost_modelled_op_owns_its_inner_ops_kernels():
    # aten::linear (modelled) around aten::addmm (modelled): counted once, as linear
    lin = "[[64,128],[256,128],[256]]"
    host = [
        Op("aten::linear", 0, 10, lin, '["c10::BFloat16","c10::BFloat16","c10::BFloat16"]'),
        Op(
            "aten::addmm",
            1,
            9,
            "[[256],[64,128],[128,256]]",
            '["c10::BFloat16","c10::BFloat16","c10::BFloat16"]',
        ),
        Call("hipLaunchKernel", 2, 3, 1),
    ]
    gpu = [Kernel("gemm_A", 10, 20, 1)]
    t = serving_trace(host, gpu)
    flops = row_flops(t, serving_analysis(t).kops)
    want = model_op("aten::linear", lin, '["c10::BFloat16","c10::BFloat16","c10::BFloat16"]')
    assert want is not None and flops["flops"].tolist() == [want.flops]


def test_replayed_kernels_carry_their_capture_ops_flops_once_per_replay():
    cap = serving_trace(captured_graph(0, launched("aten::mm", "gemm_A", 10, 101, MM, BF16), 100))
    ex = serving_trace(
        [Call("hipGraphLaunch", 1000, 1001, 900), Call("hipGraphLaunch", 1100, 1101, 901)],
        [Kernel("gemm_A", 1010, 1020, 900), Kernel("gemm_A", 1110, 1130, 901)],
    )
    a = serving_analysis(ex, [Capture(cap)], peaks=H100)
    assert a.kops["via"].tolist() == ["capture", "capture"]
    assert a.kops["flops"].tolist() == [MM_FLOPS, MM_FLOPS]
    (total,) = a.mfu["total"].to_dict("records")
    assert total["model_flops"] == 2 * MM_FLOPS and total["busy_ns"] == 30_000
    assert total["mfu"] == pytest.approx(2 * MM_FLOPS / 30e-6 / 989e12, rel=1e-12)
    # without the capture the replays have no op, hence no FLOPs
    blind = serving_analysis(ex, peaks=H100)
    assert blind.mfu["total"]["model_flops"].tolist() == [0.0]
    assert blind.mfu["total"]["coverage"].tolist() == [0.0]
    assert blind.mfu["total"]["mfu"].isna().all()  # no modelled dtype: no peak applies


def test_recomputed_flops_count_for_hfu_not_mfu():
    host = [
        *launched("aten::mm", "gemm_A", 0, 1, MM, BF16),
        Op("CheckpointFunctionBackward", 10, 20),
        *launched("aten::mm", "gemm_A", 12, 2, MM, BF16),
    ]
    gpu = [Kernel("gemm_A", 30, 40, 1), Kernel("gemm_A", 40, 50, 2)]
    a = serving_analysis(serving_trace(host, gpu), peaks=H100)
    assert a.kops["recomputed"].tolist() == [False, True]
    (total,) = a.mfu["total"].to_dict("records")
    assert total["model_flops"] == MM_FLOPS and total["recomputed_flops"] == MM_FLOPS
    assert total["mfu"] == pytest.approx(MM_FLOPS / 20e-6 / 989e12, rel=1e-12)
    assert total["hfu"] == pytest.approx(2 * MM_FLOPS / 20e-6 / 989e12, rel=1e-12)


def test_fp32_gemm_on_a_tf32_kernel_is_measured_against_the_tf32_peak():
    host = launched("aten::mm", "ampere_tf32_s1688gemm", 0, 1, MM, FP32)
    gpu = [Kernel("ampere_tf32_s1688gemm", 10, 20, 1)]
    (total,) = (
        serving_analysis(serving_trace(host, gpu), peaks=H100).mfu["total"].to_dict("records")
    )
    assert total["dtype"] == "tf32_tensor" and total["peak_flops"] == 495e12


def test_without_a_device_peak_mfu_is_unknown_but_flops_are_not():
    host = launched("aten::mm", "gemm_A", 0, 1, MM, BF16)
    t = serving_trace(host, [Kernel("gemm_A", 10, 20, 1)])
    (total,) = serving_analysis(t).mfu["total"].to_dict("records")
    assert total["model_flops"] == MM_FLOPS and total["dtype"] == "fp16_tensor"
    assert total["peak"] is None and total["mfu"] is None
    assert serving_analysis(t).roofs["total"]["roof_ns"].isna().all()


# --- shared traces ----------------------------------------------------------------------------


def test_eager_model_flops_equal_the_op_costs_of_the_roofline():
    """sglang prefill: every kernel launched eagerly; the roofline's op costs (linked through
    the launch's External id) give the same FLOPs per GPU work time."""
    t = read_kineto(inference(SERVING["sglang_prefilldecode"]))
    a = serving_analysis(t)
    costs = op_costs(t)
    assert a.kops["flops"].sum() == pytest.approx(float(costs["flops"].sum()), rel=1e-9)
    assert int(a.kops.loc[a.kops["modelled"], "dur_ns"].sum()) == int(costs["kernel_time_ns"].sum())


@pytest.mark.parametrize("key", ["sglang_decode", "vllm"])
def test_replayed_flops_are_the_capture_ops_costs_from_the_raw_json(key):
    """Every replayed row's op and shapes from the capture trace's own links (External id of
    the launch → ``cpu_op``), its op modelled from the raw ``Input Dims``/``Input type``/
    ``Concrete Inputs``: the replays' FLOPs sum to those costs, once per (op, replay)."""
    ex_path, cap_path = (inference(p) for p in CAPTURED[key])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    a = serving_analysis(ex, [Capture(cap)])
    links = capture_links(cap_path)
    raw_ops = {}
    for e in events(cap_path):
        args = e.get("args") or {}
        if e.get("cat") == "cpu_op" and "External id" in args:
            raw_ops.setdefault(int(args["External id"]), e)
    ext_of = {}
    for e in events(cap_path):
        args = e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "kernel" in args:
            ext_of[int(args["correlation"])] = int(args.get("External id", -1))
    g = a.graphs.kernels
    rows = a.kops.set_index("gpu_row")
    want, seen = 0.0, set()
    for r in g.itertuples(index=False):
        if r.op_row < 0 or r.capture_correlation not in links:
            continue
        op = raw_ops[ext_of[r.capture_correlation]]
        args = op["args"]
        cost = model_op(
            op["name"],
            args.get("Input Dims"),
            args.get("Input type"),
            args.get("Concrete Inputs"),
            args.get("Input Strides"),
        )
        key_ = (r.launch, ext_of[r.capture_correlation])
        if cost is not None and key_ not in seen:
            seen.add(key_)
            want += cost.flops
    replayed = rows.loc[g["gpu_row"].to_numpy()]
    assert want > 0
    assert float(replayed["flops"].sum()) == pytest.approx(want, rel=1e-9)


def test_shared_serving_mfu_uses_the_devices_fp16_peak():
    t = read_kineto(inference(SERVING["sglang_prefilldecode"]))
    peaks = find_peaks(load_peaks(None), "MI300X")
    (total,) = serving_analysis(t, peaks=peaks).mfu["total"].to_dict("records")
    assert total["dtype"] == "fp16_tensor" and total["peak"] == peaks.name
    assert 0 < total["mfu"] < 1 and total["exact_share"] == 1.0
    assert total["mfu"] == pytest.approx(
        total["model_flops"] / (total["busy_ns"] / 1e9) / peaks.peak_flops("fp16_tensor")
    )


# Qwen3-8B (the model of both SGLang traces; its published config.json): hidden 4096, 36
# layers, 32 query and 8 KV heads of 128, MLP 12288 (gate, up, down), vocabulary 151936.
QWEN3_8B_LAYER = 4096 * (4096 + 2 * 8 * 128) + 4096 * 4096 + 3 * 4096 * 12288
QWEN3_8B_LM_HEAD = 4096 * 151936


@pytest.mark.parametrize(
    ("key", "tokens", "sequences"),
    [("sglang_prefilldecode", 15360, 15), ("sglang_decode", 32, 32)],
)
def test_sglang_model_flops_are_two_flops_per_weight_per_token(key, tokens, sequences):
    """The modelled FLOPs (every linear layer: ``aten::mm`` calls, eager in prefill, replayed
    from the decode graph through its capture) equal the hand count 2 × weights × tokens over
    the 36 layers, plus the LM head for the last token of each sequence (prefill: 15
    sequences; decode: each of the 32 tokens)."""
    rel = SERVING[key]
    t = read_kineto(inference(rel))
    cap = dict(CAPTURED.values()).get(rel)
    caps = [Capture(read_kineto(inference(cap)))] if cap else []
    a = serving_analysis(t, caps)
    hand = 2 * QWEN3_8B_LAYER * 36 * tokens + 2 * QWEN3_8B_LM_HEAD * sequences
    assert float(a.kops["flops"].sum()) == pytest.approx(hand, rel=1e-9)
