"""Kernel-name normalisation: each documented rule, and names from real traces."""

from __future__ import annotations

import pytest

from analyzers.name_normalize import normalize_kernel_name as norm
from collectors.load import load_traces
from tests.support.env import shared_path


@pytest.mark.parametrize(
    ("name", "key"),
    [
        # 1. whitespace runs, ends
        ("  relu_kernel \t", "relu_kernel"),
        # 2. return type, 3. parameter list, 4. template spacing
        ("void k<4, at::Array<char*, 3> >(int, at::Array<char*, 3>)", "k<4,at::Array<char*,3>>"),
        (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        ),
        # a parenthesised suffix after a space is not a parameter list
        ("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pinned ->Device)"),
        ("Memset (Device)", "Memset (Device)"),
        ("k<4> (int)", "k<4> (int)"),
        # nested parentheses and lambdas inside template arguments stay
        (
            "void f<at::(anonymous namespace)::g(int)::{lambda()#2}>(int)",
            "f<at::(anonymous namespace)::g(int)::{lambda()#2}>",
        ),
        # 5. integer-literal suffixes
        ("OpaqueType<4u>", "OpaqueType<4>"),
        ("k<128UL, 7ll, 3>", "k<128,7,3>"),
        # 6. generation-order numbers
        ("triton_poi_fused_add_cos_sin_0", "triton_poi_fused_add_cos_sin"),
        ("triton_red_fused__softmax_12_3", "triton_red_fused__softmax_12"),
        ("nvfuser_pointwise_f0_c1_r0_g2", "nvfuser_pointwise"),
        ("CudaCodeGen::kernel12(Tensor<float, 2>)", "CudaCodeGen::kernel"),
        # library tile configurations are kept
        (
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_execute",
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_execute",
        ),
        ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        # unbalanced text is left as it is (after the spacing rules)
        ("broken(name", "broken(name"),
        (None, ""),
    ],
)
def test_documented_rules(name: str | None, key: str) -> None:
    assert norm(name) == key


def test_different_kernels_keep_different_keys() -> None:
    add = "void at::native::elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
    fill = "void at::native::elementwise_kernel<4, at::native::FillFunctor<float> >(int)"
    assert norm(add) != norm(fill)
    assert norm("triton_poi_fused_add_0") != norm("triton_poi_fused_mul_0")


def test_demangler_spellings_of_one_kernel_share_a_key() -> None:
    a = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, unsigned int> >(x)"
    b = "at::native::reduce_kernel<512,1,at::native::ReduceOp<float,unsigned int>>"
    assert norm(a) == norm(b) == b


@pytest.mark.parametrize("trace_dir", ["nccl_parser_config", "ns_resolution_trace"])
def test_normalisation_of_real_names_is_idempotent_and_keeps_distinct_kernels(
    trace_dir: str,
) -> None:
    trace = load_traces([shared_path("kineto", "hta", trace_dir)])[0]
    names = [str(n) for n in trace.gpu["name"].cat.categories]
    keys = [norm(n) for n in names]
    assert all(norm(k) == k for k in keys)
    # demangled signatures differ in their template arguments, so no two collapse
    assert len(set(keys)) == len(set(names))
    assert all(not k.startswith("void ") for k in keys)
