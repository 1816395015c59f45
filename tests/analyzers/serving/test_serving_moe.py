"""MoE view: roles and shares on a hand-built expert-parallel layer, and the vLLM gpt-oss trace
(graph replays attributed through its capture) against kernel sums taken from the raw JSON."""

from __future__ import annotations

from analyzers.serving.graphs import attribute_graphs
from analyzers.serving.moe import moe_rows, moe_view
from analyzers.serving.ops import kernel_ops
from analyzers.serving.phases import serving_steps
from collectors.kineto import read_kineto
from tests.support.raw_kineto import events
from tests.support.serving_builders import Call, Kernel, Op, Range, serving_trace
from tests.support.serving_data import CAPTURED, inference


def _ep_layer():
    """One decode step: a router GEMM outside the layer, then an MoE layer op (two calls of
    it) with top-k, token sort, all-to-all dispatch, expert GEMM, all-to-all combine, and
    un-permute; plus an unrelated elementwise kernel."""
    host: list = []
    gpu: list = []
    corr = 0

    def k(op: str | None, kernel: str, t: float, dur: float) -> None:
        nonlocal corr
        corr += 1
        if op:
            host.append(Op(op, t, t + 1))
        host.append(Call("hipLaunchKernel", t + 0.2, t + 0.8, corr))
        gpu.append(Kernel(kernel, 1000 + t, 1000 + t + dur, corr))

    k("aten::mm", "Cijk_router_gemm", 5, 2)
    for base in (10, 60):
        host.append(Op("sglang::FusedMoE", base, base + 40))
        k("aiter::topk_softmax", "topk_softmax_kernel", base + 1, 1)
        k("aiter::moe_sorting_fwd", "moe_sorting_kernel", base + 3, 2)
        k("c10d::alltoall_base_", "ncclDevKernel_SendRecv", base + 6, 4)
        k(None, "fused_moe_kernel_gemm_bf16", base + 11, 10)
        k("c10d::alltoall_base_", "ncclDevKernel_SendRecv", base + 22, 4)
        k(None, "moe_sum_kernel", base + 27, 1)
        k(None, "dynamic_quant_kernel", base + 29, 1)
    k("aten::add", "void at::native::vectorized_elementwise_kernel<add>", 110, 3)
    return serving_trace(host, gpu, [Range("step[DECODE bs=8]", 0, 200)])


def test_layer_roles_dispatch_and_combine_by_position_and_shares():
    t = _ep_layer()
    kops = kernel_ops(t)
    steps, owner = serving_steps(t, kops)
    v = moe_view(t, kops, steps=steps, owner=owner)
    roles = v["roles"]
    assert roles[["layer", "role", "kernels", "time_ns"]].values.tolist() == [
        ["sglang::FusedMoE", "routing", 2, 2_000],
        ["sglang::FusedMoE", "permute", 2, 4_000],
        ["sglang::FusedMoE", "dispatch", 2, 8_000],
        ["sglang::FusedMoE", "expert_gemm", 2, 20_000],
        ["sglang::FusedMoE", "combine", 2, 8_000],
        ["sglang::FusedMoE", "unpermute", 2, 2_000],
        ["sglang::FusedMoE", "other", 2, 2_000],
    ]
    total = 2_000 + 46_000 + 3_000
    assert roles["share_of_gpu"].tolist() == [x / total for x in roles["time_ns"]]
    assert roles["share_of_layer"].tolist() == [x / 46_000 for x in roles["time_ns"]]
    assert v["layers"].values.tolist() == [["sglang::FusedMoE", 2, 14, 46_000, 46_000 / total]]
    assert v["steps"].values.tolist() == [[0, "sglang::FusedMoE", 46_000, total, 46_000 / total]]


def test_moe_kernels_outside_any_layer_op_are_grouped_by_kernel_name():
    t = serving_trace(
        [Op("mylib::op", 0, 5), Call("hipLaunchKernel", 1, 2, 1)],
        [Kernel("_matmul_ogs_NNT_bf16", 10, 20, 1), Kernel("other_kernel", 20, 25, -1)],
    )
    m = moe_rows(t, kernel_ops(t))
    assert m[["layer", "role", "call"]].values.tolist() == [["(kernel name)", "expert_gemm", -1]]


def _raw_moe_truth(path):
    """Per role, the kernel time of the raw execution trace by kernel-name prefix, and the total
    GPU work time."""
    prefixes = {
        "routing": ("_topk_forward",),
        "permute": ("_sum_bitmatrix_rows", "_combined_routing"),
        "expert_gemm": ("_matmul_ogs_",),
        "unpermute": ("_finalize_matmul_scatter",),
    }
    truth = dict.fromkeys(prefixes, 0)
    counts = dict.fromkeys(prefixes, 0)
    total = 0
    for e in events(path):
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        d = e["end_ns"] - e["ts_ns"]
        total += d
        for role, ps in prefixes.items():
            if e["name"].startswith(ps):
                truth[role] += d
                counts[role] += 1
    return truth, counts, total


def test_vllm_gpt_oss_moe_layers_match_the_raw_kernel_sums():
    ex_path, cap_path = (inference(p) for p in CAPTURED["vllm"])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    g = attribute_graphs(ex, [cap])
    kops = kernel_ops(ex, g)
    steps, owner = serving_steps(ex, kops)
    v = moe_view(ex, kops, g, steps, owner)
    truth, counts, total = _raw_moe_truth(ex_path)
    roles = v["roles"].set_index("role")
    assert set(v["roles"]["layer"]) == {"vllm::moe_forward"}
    for role, ns in truth.items():
        assert roles.loc[role, "time_ns"] == ns, role
        assert roles.loc[role, "kernels"] == counts[role], role
        assert roles.loc[role, "share_of_gpu"] == ns / total
    layer = v["layers"].iloc[0]
    assert layer["calls"] == 24  # one per decoder layer (24 replayed pieces)
    assert layer["time_ns"] == sum(truth.values())
    assert v["steps"]["share_of_step"].tolist() == [sum(truth.values()) / total]
    assert roles.loc["expert_gemm", "share_of_gpu"] > 0.75
