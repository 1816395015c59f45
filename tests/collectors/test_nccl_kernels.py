"""NCCL kernel names of every NCCL version → collective, algorithm, protocol, redop, dtype.

Names are those NCCL declares (``src/device/generate.py``, ``symmetric/*.cu``, the 2.7
``IMPL_COLL_KERN`` macros) and those seen in the shared Kineto traces; expected fields are
read off the names by hand (reference/nccl.md §3).
"""

from __future__ import annotations

import pytest

from analyzers.classify import COMMUNICATION, classify_name
from collectors.nccl_kernels import parse_kernel_name, parse_kernel_names
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

CASES = [
    # (name, family, collective, algo, proto, redop, dtype)
    (
        "ncclAllReduceRingLLKernel_sum_f32(ncclColl)",
        "legacy",
        "all_reduce",
        "Ring",
        "LL",
        "sum",
        "float32",
    ),
    (
        "ncclBroadcastRingLLKernel_copy_i8(ncclColl)",
        "legacy",
        "broadcast",
        "Ring",
        "LL",
        None,
        None,
    ),
    (
        "ncclReduceScatterTreeLL128Kernel_max_bf16",
        "legacy",
        "reduce_scatter",
        "Tree",
        "LL128",
        "max",
        "bfloat16",
    ),
    (
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        "ncclKernel",
        "all_reduce",
        "RING",
        "LL",
        "Sum",
        "float32",
    ),
    (
        "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclKernel",
        "broadcast",
        "RING",
        "LL",
        None,
        None,
    ),
    (
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclKernel",
        "send_recv",
        "RING",
        "SIMPLE",
        None,
        None,
    ),
    (
        "ncclKernel_ReduceScatter_RING_LL_Sum___nv_bfloat16(ncclDevComm*, unsigned long)",
        "ncclKernel",
        "reduce_scatter",
        "RING",
        "LL",
        "Sum",
        "bfloat16",
    ),
    (
        "ncclKernel_AllReduce_TREE_LL128_Prod_half",
        "ncclKernel",
        "all_reduce",
        "TREE",
        "LL128",
        "Prod",
        "float16",
    ),
    (
        "ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Sum_double",
        "ncclKernel",
        "all_reduce",
        "COLLNET_DIRECT",
        "SIMPLE",
        "Sum",
        "float64",
    ),
    (
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclDevKernel",
        "all_reduce",
        "RING",
        "LL",
        "Sum",
        "float32",
    ),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_TREE_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel",
        "all_reduce",
        "TREE",
        "LL",
        "Sum",
        "bfloat16",
    ),
    (
        "ncclDevKernel_Reduce_Sum_u64_RING_LL",
        "ncclDevKernel",
        "reduce",
        "RING",
        "LL",
        "Sum",
        "uint64",
    ),
    (
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel",
        "all_gather",
        "RING",
        "LL",
        None,
        None,
    ),
    (
        "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclDevKernel",
        "send_recv",
        None,
        None,
        None,
        None,
    ),
    (
        "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel",
        None,
        None,
        None,
        None,
        None,
    ),
    (
        "ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16(ncclSymDevArgs)",
        "ncclSymDevKernel",
        "all_reduce",
        "RSxLD_AGxST",
        None,
        "sum",
        "bfloat16",
    ),
    (
        "ncclSymDevKernel_AllGather_LLMC(ncclSymDevArgs)",
        "ncclSymDevKernel",
        "all_gather",
        "LLMC",
        None,
        None,
        None,
    ),
    (
        "ncclSymkDevKernel_ReduceScatter_LL_sum_f8e4m3(ncclSymkDevWorkArgs4K)",
        "ncclSymkDevKernel",
        "reduce_scatter",
        "LL",
        None,
        "sum",
        "float8_e4m3",
    ),
    ("ncclSymkDevKernel_AllReduce", "ncclSymkDevKernel", "all_reduce", None, None, None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].split("(")[0] for c in CASES])
def test_kernel_name_fields(case: tuple) -> None:
    name, family, coll, algo, proto, redop, dtype = case
    k = parse_kernel_name(name)
    assert k is not None
    assert (
        k.family,
        k.collective,
        k.kernel_algo,
        k.kernel_proto,
        k.kernel_redop,
        k.kernel_dtype,
    ) == (family, coll, algo, proto, redop, dtype)
    # every NCCL name is COMMUNICATION under HTA 0.6 (the collectives table and the kernel
    # types agree on what is communication)
    assert classify_name(name, "0.6") == COMMUNICATION


@pytest.mark.parametrize(
    "name", ["void at::native::vectorized_elementwise_kernel<4>(...)", "Memcpy DtoD", "", None]
)
def test_other_names_are_not_nccl(name: object) -> None:
    assert parse_kernel_name(name) is None


def test_unrecognised_nccl_names_are_kept_as_unknown_communication() -> None:
    k = parse_kernel_name("ncclFutureKernel_Magic(x)")
    assert k is not None and k.family == "other" and k.collective is None
    r = parse_kernel_name("rcclGenericKernel(x)")
    assert r is not None and r.family == "rccl"


def test_every_nccl_kernel_of_the_shared_traces_parses() -> None:
    names = set()
    for parts in (
        ("nccl_parser_config", "nccl_data.json.gz"),
        ("trace_filter", "sampled_rank-0.json.gz"),
        ("negative_queue_length_values_check", "rank0.json.gz"),
    ):
        ev = trace_events(shared_path("kineto", "hta", *parts))
        names |= {e["name"] for e in ev if e.get("cat") == "kernel" and "nccl" in e["name"]}
    table = parse_kernel_names(sorted(names))
    assert set(table.index) == names
    assert table["family"].eq("ncclKernel").all()
    assert table["collective"].notna().all()
