"""Op categories: the rule table on hand cases, the breakdown's arithmetic, and every shared trace
against TraceLens's ``ops_summary.csv`` (per-op time equal, categories equal or a documented
definition)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzers.serving.categories import (
    CATEGORIES,
    KERNEL_RULES,
    OP_RULES,
    category_breakdown,
    kernel_category,
)
from tests.support import tracelens_compare as tl
from tests.support.serving_data import tracelens_root

CASES = [
    # (kernel name, launching op, kind) -> category
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64", "aten::addmm", "kernel", "GEMM"),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64", None, "kernel", "GEMM"),
    ("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1", "aten::miopen_convolution", "kernel", "GEMM"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", None, "kernel", "MoE"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1", "vllm::moe_forward", "kernel", "MoE"),
    # an op rule wins over the kernel name: a GEMM kernel launched inside the MoE op is MoE
    ("Cijk_Alik_Bljk_MT32x64x128", "vllm::moe_forward", "kernel", "MoE"),
    ("_topk_forward", "TopK", "kernel", "MoE"),
    # Inductor's fused kernel before MoE, although its name says moe_forward
    (
        "triton_poi_fused_constant_pad_nd_moe_forward_0",
        "triton_poi_fused_constant_pad_nd_moe_forward_0",
        "kernel",
        "Triton-fused",
    ),
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", None, "kernel", "Triton-fused"),
    ("fmha_fwd_d128_bf16_batch", "aten::_flash_attention_forward", "kernel", "attention"),
    (
        "void vllm::reshape_and_cache_flash_kernel<>",
        "_C_cache_ops::reshape_and_cache_flash",
        "kernel",
        "attention",
    ),
    ("kernel_unified_attention_2d", None, "kernel", "attention"),
    (
        "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwd",
        "aiter::rmsnorm2d_fwd_with_add_ck",
        "kernel",
        "normalization",
    ),
    ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwd", None, "kernel", "normalization"),
    ("void at::native::vectorized_elementwise_kernel<4>", "aten::mul", "kernel", "elementwise"),
    ("void at::native::vectorized_elementwise_kernel<4>", None, "kernel", "elementwise"),
    (
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>",
        "_C::rotary_embedding",
        "kernel",
        "elementwise",
    ),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "c10d::allreduce_", "kernel", "communication"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", None, "kernel", "communication"),
    ("cross_device_reduce_1stage<bf16, 8>", None, "kernel", "communication"),
    # a copy row is memory whatever launched it
    ("Memcpy DtoD (Device -> Device)", "aten::copy_", "memcpy", "memory"),
    ("Memset (Device)", "aten::miopen_batch_norm", "memset", "memory"),
    ("Memcpy HtoD (Host -> Device)", None, None, "memory"),
    # an op no rule knows: the kernel name decides
    ("void some_vendor_kernel<int>", "mylib::custom_op", "kernel", "other"),
    ("Cijk_Ailk_Bljk_MT64x64", "mylib::custom_op", "kernel", "GEMM"),
    (None, None, "kernel", "other"),
]


@pytest.mark.parametrize(("name", "op", "kind", "want"), CASES)
def test_rule_table_decides_in_documented_order(name, op, kind, want):
    assert kernel_category([name], [op], [kind]).tolist() == [want]


def test_kernel_category_without_ops_uses_kernel_names_only():
    names = [c[0] for c in CASES]
    got = kernel_category(names)
    for (name, _, _, _), cat in zip(CASES, got, strict=True):
        assert cat == kernel_category([name], [None]).item()
    assert set(got) <= set(CATEGORIES)


def test_rules_name_only_known_categories():
    assert {r.category for r in (*OP_RULES, *KERNEL_RULES)} <= set(CATEGORIES)
    assert {r.category for r in OP_RULES} | {r.category for r in KERNEL_RULES} == set(
        CATEGORIES
    ) - {"other"}


def test_breakdown_sums_durations_and_shares_per_group():
    kops = pd.DataFrame(
        {
            "name": ["Cijk_a", "Cijk_b", "void at::native::x", "Memcpy DtoH", "fmha_fwd"],
            "op": ["aten::mm", "aten::mm", "aten::add", "aten::copy_", None],
            "kind": ["kernel", "kernel", "kernel", "memcpy", "kernel"],
            "dur_ns": [300, 100, 50, 50, 500],
        }
    )
    whole = category_breakdown(kops)
    assert whole.values.tolist() == [
        ["GEMM", 2, 400, 0.4],
        ["attention", 1, 500, 0.5],
        ["elementwise", 1, 50, 0.05],
        ["memory", 1, 50, 0.05],
    ]
    by = category_breakdown(kops, np.array(["decode", "decode", "prefill", None, "prefill"]))
    assert by.values.tolist() == [
        ["decode", "GEMM", 2, 400, 1.0],
        ["prefill", "attention", 1, 500, 500 / 550],
        ["prefill", "elementwise", 1, 50, 50 / 550],
    ]


# --- TraceLens ------------------------------------------------------------------------------


def _references():
    return tl.traces_with_reference(tracelens_root())


def test_every_shared_trace_with_a_tracelens_category_summary_is_compared():
    refs = _references()
    have = {p.parent for p in tracelens_root().rglob("ops_summary_by_category.csv")}
    assert {csvs for _, _, _, csvs in refs} == have
    assert len(refs) == 11


@pytest.mark.parametrize("ref", range(11))
def test_per_op_kernel_time_and_category_equal_tracelens_or_a_documented_definition(ref):
    label, trace, cap, csvs = _references()[ref]
    k = tl.rows(trace, cap)
    mine, theirs = tl.op_times(k), tl.tracelens_ops(csvs)
    assert set(mine.index) == set(theirs.index), label
    bare = set(tl.tracelens_key(k)[tl.bare_launch(k)])
    for op, m in mine.iterrows():
        t = theirs.loc[op]
        # TraceLens's ms are sums of float µs: at most 1 ns per row apart
        assert abs(m["ms"] - t["ms"]) <= m["n"] * 1e-6, (label, op, m["ms"], t["ms"])
        if op in bare:
            assert t["category"] == "other"  # TraceLens: a launch outside every op
            continue
        same = m["categories"] == {tl.CROSSWALK[t["category"]]}
        documented = tl.DIFFERENCES.get(op) == (t["category"], next(iter(m["categories"])))
        assert same or (documented and len(m["categories"]) == 1), (label, op, t["category"])


def test_every_documented_difference_occurs_in_a_shared_trace():
    seen = set()
    for _, trace, cap, _ in _references():
        seen |= set(tl.op_times(tl.rows(trace, cap)).index)
    assert set(tl.DIFFERENCES) <= seen


def test_tracelens_total_is_gpuscope_total_less_the_rows_it_leaves_out():
    for label, trace, cap, csvs in _references():
        k = tl.rows(trace, cap)
        left_out = (k["kind"] == "memset") | (k["via"] == "no-launch")
        ours = k["dur_ns"][~left_out].sum() / 1e6
        assert abs(ours - sum(tl.tracelens_categories(csvs).values())) <= len(k) * 1e-6, label
