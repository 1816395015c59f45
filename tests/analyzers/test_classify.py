"""Kernel types: HTA 0.6 and 0.5 rule sets (metrics.md §3), by hand from the published regexes."""

from __future__ import annotations

import pandas as pd
import pytest

from analyzers.classify import (
    COMMUNICATION,
    COMPUTATION,
    MEMORY,
    OTHER,
    classify,
    classify_name,
    is_step_name,
)
from collectors.errors import UsageError

# (name, type under 0.6, type under 0.5), each derived by hand from metrics.md §3
CASES = [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", COMMUNICATION, COMMUNICATION),
    (
        "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        COMMUNICATION,
        COMMUNICATION,
    ),
    ("ncclSymkDevKernel_AllReduce_sum_f32", COMMUNICATION, COMMUNICATION),
    ("nccl:all_reduce", COMMUNICATION, COMPUTATION),  # 0.5 needs "nccl…Kernel"
    ("hccl_allreduce", COMMUNICATION, COMPUTATION),
    ("hipMemcpyWithStream", COMMUNICATION, OTHER),  # 0.6: any hip* name is communication
    ("void foo_ncclKernel_bar", COMMUNICATION, COMPUTATION),
    ("Memcpy HtoD (Pinned -> Device)", MEMORY, MEMORY),
    ("Memset (Device)", MEMORY, MEMORY),
    ("dma_copy_h2d", MEMORY, MEMORY),
    ("Stream Sync", OTHER, OTHER),
    ("Event Sync", OTHER, OTHER),
    ("Stream Wait Event", OTHER, COMPUTATION),  # the alexnet difference of §9.1
    ("cudaLaunchKernel", OTHER, COMPUTATION),
    ("runFunction - job_prep_and_submit_for_execution", OTHER, COMPUTATION),
    ("job_exe_xyz", OTHER, COMPUTATION),
    ("void at::native::vectorized_elementwise_kernel<4, float>", COMPUTATION, COMPUTATION),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>",
        COMPUTATION,
        COMPUTATION,
    ),
    ("my_Memcpy_like_kernel", OTHER, OTHER),  # ".*Memcpy" is "not compute" in both
]


@pytest.mark.parametrize(("name", "v06", "v05"), CASES)
def test_name_is_typed_as_hta_rules_say(name: str, v06: str, v05: str) -> None:
    assert classify_name(name, "0.6") == v06
    assert classify_name(name, "0.5") == v05


def test_vectorized_classification_matches_per_name_for_categorical_and_plain_strings() -> None:
    names = [c[0] for c in CASES] * 2
    expected = [classify_name(n) for n in names]
    assert list(classify(pd.Series(names))) == expected
    assert list(classify(pd.Series(pd.Categorical(names)))) == expected


def test_source_marked_memcpy_is_memory_whatever_its_name() -> None:
    names = pd.Series(
        ["[CUDA memcpy Host-to-Device]", "[CUDA memset]", "[CUDA memcpy Host-to-Device]"]
    )
    kinds = pd.Series(["memcpy", "memset", "kernel"])
    assert list(classify(names, kinds)) == [MEMORY, MEMORY, COMPUTATION]


def test_missing_name_is_classified_as_empty_string() -> None:
    got = classify(pd.Series(pd.Categorical([None, "Memset (Device)"])))
    assert list(got) == [COMPUTATION, MEMORY]


def test_unknown_rule_set_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"0\.4"):
        classify_name("x", "0.4")


def test_step_markers_follow_each_versions_rule() -> None:
    assert is_step_name("ProfilerStep#12", "0.6")
    assert not is_step_name("ProfilerStep", "0.6")
    assert not is_step_name("## ProfilerStep 3", "0.6")
    assert is_step_name("## ProfilerStep 3", "0.5")
    assert is_step_name("ProfilerStep#12", "0.5")
