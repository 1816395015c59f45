"""GEMM costs of every overload Kineto records: ``out=`` (Inductor's extern kernels), ``dtype``,
``beta = 0``, vendor GEMM ops; the torch.compile trace whose GEMMs all use ``out=``."""

from __future__ import annotations

import json

from analyzers.op_models import model_op, op_costs
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

B = "c10::BFloat16"


def _cost(name, dims, types, concrete=None):
    return model_op(
        name,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
    )


def test_mm_out_reads_two_inputs_and_writes_the_out_tensor() -> None:
    # aten::mm.out(self, mat2, *, out): Inductor's extern_kernels.mm(a, b, out=buf)
    c = _cost("aten::mm", [[32768, 2048], [2048, 8192], [32768, 8192]], [B, B, B])
    assert c is not None and c.exact
    assert c.flops == 2 * 32768 * 8192 * 2048
    assert c.bytes == (32768 * 2048 + 2048 * 8192 + 32768 * 8192) * 2
    # the out tensor's dtype sets the output bytes
    f = _cost("aten::mm", [[4, 8], [8, 2], [4, 2]], [B, B, "float"])
    assert f is not None and f.bytes == (32 + 16) * 2 + 8 * 4
    # a third input that is not a tensor is the out_dtype of mm.dtype (6 = float)
    d = _cost("aten::mm", [[4, 8], [8, 2], []], [B, B, "Scalar"], ["", "", "6"])
    assert d is not None and d.bytes == f.bytes and d.exact
    # more inputs than any overload takes: not modelled
    assert _cost("aten::mm", [[4, 8], [8, 2], [4, 2], [4, 2], [1]], [B] * 5) is None


def test_addmm_and_baddbmm_out_forms_and_beta_zero() -> None:
    # addmm.out(self, mat1, mat2, *, beta, alpha, out)
    dims = [[3072], [768, 3072], [3072, 3072], [], [], [768, 3072]]
    types = [B, B, B, "Scalar", "Scalar", B]
    c = _cost("aten::addmm", dims, types, ["", "", "", "1", "1", ""])
    assert c is not None
    assert c.flops == 2 * 768 * 3072 * 3072 + 768 * 3072
    assert c.bytes == (3072 + 768 * 3072 + 3072 * 3072 + 768 * 3072) * 2
    # beta = 0: self is neither read nor added
    z = _cost("aten::addmm", dims, types, ["", "", "", "0", "1", ""])
    assert z is not None and z.flops == 2 * 768 * 3072 * 3072
    assert z.bytes == c.bytes - 3072 * 2
    bdims = [[4, 5, 7], [4, 5, 6], [4, 6, 7], [], [], [4, 5, 7]]
    bb = _cost("aten::baddbmm", bdims, ["float"] * 3 + ["Scalar", "Scalar", "float"])
    assert bb is not None and bb.flops == 4 * (2 * 5 * 7 * 6 + 5 * 7)


def test_bmm_linear_and_matmul_out_forms() -> None:
    bmm = _cost("aten::bmm", [[2, 3, 4], [2, 4, 5], [2, 3, 5]], ["float"] * 3)
    assert bmm is not None and bmm.flops == 2 * 2 * 3 * 5 * 4
    lin = _cost("aten::linear", [[2, 3, 4], [5, 4], [5], [2, 3, 5]], ["float"] * 4)
    assert lin is not None and lin.flops == 2 * 6 * 5 * 4 + 6 * 5
    mat = _cost("aten::matmul", [[3, 4], [4, 5], [3, 5]], ["float"] * 3)
    assert mat is not None and mat.flops == 2 * 3 * 5 * 4


def test_vendor_gemms_are_x_times_w_transposed() -> None:
    # aiter::gemm_a16w16(A [M, K], B [N, K], bias, otype, ...); 15 = bfloat16
    a = _cost(
        "aiter::gemm_a16w16",
        [[32, 4096], [24576, 4096], [], [], [], [], []],
        [B, B, "", "Scalar", "", "", ""],
        ["", "", "", "15", "", "", ""],
    )
    assert a is not None and a.flops == 2 * 32 * 24576 * 4096
    assert a.bytes == (32 * 4096 + 24576 * 4096 + 32 * 24576) * 2
    # vllm::rocm_unquantized_gemm(x, weight, bias)
    v = _cost("vllm::rocm_unquantized_gemm", [[8192, 2880], [5120, 2880], [5120]], [B, B, B])
    assert v is not None and v.flops == 2 * 8192 * 5120 * 2880 + 8192 * 5120


def test_expanded_inputs_are_read_once() -> None:
    # a bias expanded to [5, 7] (stride 0 on dim 0) is 7 elements in memory
    c = model_op(
        "aten::add",
        json.dumps([[5, 7], [5, 7], []]),
        json.dumps(["float", "float", "Scalar"]),
        json.dumps(["", "", "1"]),
        json.dumps([[7, 1], [0, 1], []]),
    )
    assert c is not None and c.bytes == (35 + 7 + 35) * 4


def test_torch_compile_gemms_with_out_are_all_modelled() -> None:
    from collectors.load import load_traces

    path = shared_path("kineto", "tracelens", "torch_compile_triton", "trace.json.gz")
    (t,) = load_traces([path])
    costs = op_costs(t)
    # independent count from the raw JSON: kernels whose launch sits inside an aten::mm or
    # the flash-attention op
    ev = trace_events(path)
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}
    launched = {}
    for k in (e for e in ev if e.get("cat") == "kernel"):
        rt = calls[k["args"]["correlation"]]
        owner = [o for o in ops if o["ts"] <= rt["ts"] < o["ts"] + o["dur"]]
        if owner:
            launched[k["args"]["correlation"]] = k["dur"]
    assert len(launched) == 8  # 7 GEMMs + attention; the 4 Triton kernels are not modelled
    mm = costs[costs["op"] == "aten::mm"]
    assert len(mm) == 7 and mm["exact"].all()
    assert int(costs["kernels"].sum()) == 8
    assert int(costs["kernel_time_ns"].sum()) == round(sum(launched.values()) * 1000)
    gpu_time = costs.attrs["gpu_time_ns"]
    assert costs["kernel_time_ns"].sum() / gpu_time > 0.9
