"""Collectives table from each metadata source, and from partial metadata (hand-built traces).

Each scenario builds a tiny trace with :func:`collectors.model.make_trace` and states the
expected row by hand: which source each field comes from, and what stays unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.collectives import build_collectives, link_peak
from collectors.model import DeviceInfo, TraceMeta, make_trace

GPU_KEYS = (
    "name",
    "kind",
    "start_ns",
    "end_ns",
    "stream",
    "correlation",
    "external_id",
    "device",
    "comm_args",
)
HOST_KEYS = (
    "name",
    "cat",
    "start_ns",
    "end_ns",
    "pid",
    "tid",
    "correlation",
    "external_id",
    "input_dims",
    "input_types",
    "comm_args",
)


class Builder:
    def __init__(self) -> None:
        self.gpu: dict[str, list[Any]] = {k: [] for k in GPU_KEYS}
        self.host: dict[str, list[Any]] = {k: [] for k in HOST_KEYS}
        self.ann: dict[str, list[Any]] = {
            k: []
            for k in (
                "name",
                "kind",
                "start_ns",
                "end_ns",
                "pid",
                "tid",
                "domain",
                "payload",
                "step",
            )
        }

    def kernel(
        self,
        name: str,
        s: int,
        e: int,
        corr: int = -1,
        ext: int = -1,
        kind: str = "kernel",
        args: Any = None,
    ) -> None:
        for k, v in zip(GPU_KEYS, (name, kind, s, e, 40, corr, ext, 0, args), strict=True):
            self.gpu[k].append(v)

    def op(
        self,
        name: str,
        s: int,
        e: int,
        *,
        cat: str = "cpu_op",
        corr: int = -1,
        ext: int = -1,
        dims: str | None = None,
        types: str | None = None,
        args: Any = None,
        tid: int = 1,
    ) -> None:
        for k, v in zip(
            HOST_KEYS, (name, cat, s, e, 1, tid, corr, ext, dims, types, args), strict=True
        ):
            self.host[k].append(v)

    def launch(self, t: int, corr: int, tid: int = 1) -> None:
        self.op("cudaLaunchKernel", t, t + 2, cat="cuda_runtime", corr=corr, tid=tid)

    def nvtx(self, name: str, s: int, e: int, payload: Any = None) -> None:
        for k, v in zip(self.ann, (name, "nvtx", s, e, 1, 1, "NCCL", payload, -1), strict=True):
            self.ann[k].append(v)

    def trace(self, **meta: Any) -> Any:
        m = TraceMeta(rank=0, source_format="synthetic", **meta)
        return make_trace(m, self.gpu, self.host, self.ann)


def test_old_torch_sizes_come_from_input_dims_and_the_collective_from_the_range() -> None:
    b = Builder()
    b.op(
        "c10d::_reduce_scatter_base_",
        0,
        100,
        dims="[[8,4],[64,4],[],[],[]]",
        types='["float","float","","","Scalar"]',
    )
    b.op(
        "record_param_comms",
        10,
        90,
        dims="[[64,4],[],[],[],[],[],[]]",
        types='["float","Scalar","Scalar","Scalar","","",""]',
        args={},
    )
    b.op(
        "nccl:_reduce_scatter_base",
        20,
        80,
        cat="user_annotation",
        dims="[[64,4]]",
        types='["float"]',
        args={},
    )
    b.launch(30, corr=5)
    b.kernel(
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        1000,
        1128,
        corr=5,
    )
    row = build_collectives(b.trace()).iloc[0]
    assert (row["collective"], row["collective_source"]) == ("reduce_scatter", "annotation")
    assert row["kernel_collective"] == "send_recv"
    assert (row["dtype"], row["in_bytes"], row["size_source"]) == ("float32", 1024, "input_dims")
    # c10d tensors [output 8×4, input 64×4] → 8 ranks; reduce_scatter's S is its input
    assert (row["group_size"], row["group_size_source"]) == (8, "c10d_dims")
    assert row["message_bytes"] == 1024
    assert row["busbw_gbps"] == pytest.approx(1024 / 128 * 7 / 8)
    assert row["launch_ns"] == 30 and row["op_start_ns"] == 10


def test_kernel_args_are_used_when_the_launch_is_not_in_the_trace() -> None:
    # torch 2.2+ copies the metadata onto the kernel; no host rows at all
    b = Builder()
    b.kernel(
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        0,
        1000,
        args={
            "Collective name": "reduce_scatter_tensor_coalesced",
            "In msg nelems": 4096,
            "Out msg nelems": 1024,
            "dtype": "BFloat16",
            "Group size": 4,
            "Process Group Name": "3",
            "Process Group Description": "mesh_dp_shard",
        },
    )
    row = build_collectives(b.trace()).iloc[0]
    assert (row["collective"], row["collective_source"]) == ("reduce_scatter", "kernel_args")
    assert (row["in_bytes"], row["out_bytes"], row["message_bytes"]) == (8192, 2048, 8192)
    assert row["launch_ns"] == -1 and row["op_start_ns"] == -1
    assert row["busbw_gbps"] == pytest.approx(8192 / 1000 * 3 / 4)
    assert row["kernel_algo"] == "RING" and row["dtype"] == "bfloat16"


def test_external_id_links_a_kernel_to_its_op_without_a_launch_row() -> None:
    b = Builder()
    b.op(
        "record_param_comms",
        0,
        50,
        ext=77,
        args={"Collective name": "broadcast", "In msg nelems": 10, "dtype": "Long"},
    )
    b.kernel(
        "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        100,
        180,
        ext=77,
    )
    row = build_collectives(b.trace()).iloc[0]
    assert (row["collective_source"], row["in_bytes"], row["out_bytes"]) == (
        "record_param_comms",
        80,
        80,
    )
    assert row["busbw_gbps"] == pytest.approx(1.0)  # factor 1: needs no group size


def test_partial_metadata_leaves_unknowns_without_failing() -> None:
    b = Builder()
    # name only; no sizes, no group
    b.op("record_param_comms", 0, 50, args={"Collective name": "allreduce"})
    b.launch(10, corr=1)
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 100, 300, corr=1)
    # malformed values: sizes as text, unknown dtype, truncated ranks list
    b.op(
        "record_param_comms",
        400,
        450,
        args={
            "Collective name": "allgather",
            "In msg nelems": "n/a",
            "dtype": "Quaternion",
            "Process Group Ranks": "[0, 1, 2, ...",
            "Group size": 0,
        },
    )
    b.launch(410, corr=2)
    b.kernel("ncclDevKernel_AllGather_RING_LL(x)", 500, 600, corr=2)
    # a kernel with no op and an unparseable name
    b.kernel("ncclSomethingNew_Kernel", 700, 710)
    # an op with only a Comms Id (no collective): not a collective call
    b.op("record_param_comms", 800, 810, args={"Comms Id": 10159970886766084423})
    c = build_collectives(b.trace())
    assert len(c) == 3
    ar, ag, unknown = (c.iloc[i] for i in range(3))
    assert ar["collective"] == "all_reduce" and ar["message_bytes"] == -1
    assert np.isnan(ar["algbw_gbps"]) and np.isnan(ar["busbw_gbps"])
    assert ar["dtype"] == "float32"  # from the kernel name
    assert ag["collective"] == "all_gather" and ag["in_bytes"] == -1
    assert ag["pg_ranks"] is None and ag["group_size"] == -1
    assert unknown["collective"] is None and unknown["kernel_collective"] is None
    assert unknown["duration_ns"] == 10


def test_wait_ops_are_not_collectives() -> None:
    b = Builder()
    b.op(
        "record_param_comms",
        0,
        5,
        args={"Collective name": "wait", "In msg nelems": 0, "dtype": "Byte", "Group size": 1},
    )
    b.op(
        "record_param_comms",
        10,
        15,
        dims="[[],[],[],[],[],[]]",
        types='["Scalar","Scalar","Scalar","","",""]',
        args={},
    )
    assert build_collectives(b.trace()).empty


def test_nvtx_ranges_give_size_and_communicator_and_group_end_launches() -> None:
    b = Builder()
    b.nvtx("ncclAllReduce", 0, 40, {"message_size_bytes": 4096, "comm_id": 0xABC})
    b.launch(20, corr=1)
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 100, 200, corr=1)
    # grouped point-to-point: the kernel is launched by ncclGroupEnd
    b.nvtx("ncclGroupStart", 300, 301)
    b.nvtx("ncclSend", 302, 310, {"message_size_bytes": 1000, "comm_id": 0xABC, "peer": 1})
    b.nvtx("ncclRecv", 311, 320, {"message_size_bytes": 1000, "comm_id": 0xABC, "peer": 1})
    b.nvtx("ncclGroupEnd", 321, 340)
    b.launch(330, corr=2)
    b.kernel("ncclDevKernel_SendRecv(x)", 400, 450, corr=2)
    b.nvtx("ncclReduceScatter", 500, 540, {"message_size_bytes": 256, "comm_id": 0xABC})
    b.launch(520, corr=3)
    b.kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)", 600, 700, corr=3)
    c = build_collectives(b.trace())
    ar, sr, rs = (c.iloc[i] for i in range(3))
    assert (ar["collective_source"], ar["size_source"], ar["in_bytes"]) == ("nvtx", "nvtx", 4096)
    assert ar["pg_name"] == "comm:abc" and ar["message_bytes"] == 4096
    assert (sr["collective"], sr["in_bytes"]) == ("send_recv", 2000)
    assert sr["busbw_gbps"] == pytest.approx(2000 / 50)
    # NCCL's ReduceScatter payload is the per-rank *output*; without the group size S is unknown
    assert (rs["out_bytes"], rs["in_bytes"], rs["message_bytes"]) == (256, -1, -1)


def test_copy_engine_collective_is_the_memcpy_inside_the_nccl_range() -> None:
    b = Builder()
    b.op(
        "record_param_comms",
        0,
        60,
        args={
            "Collective name": "all_gather_into_tensor",
            "In msg nelems": 1 << 20,
            "Out msg nelems": 8 << 20,
            "dtype": "BFloat16",
            "Group size": 8,
        },
    )
    b.op("nccl:all_gather_into_tensor", 5, 55, cat="user_annotation", args={})
    b.launch(10, corr=9)
    b.kernel("Memcpy PtoP (Device -> Device)", 100, 1100, corr=9, kind="memcpy")
    # an ordinary copy outside any NCCL range is not a collective
    b.launch(70, corr=10)
    b.kernel("Memcpy DtoD (Device -> Device)", 1200, 1300, corr=10, kind="memcpy")
    c = build_collectives(b.trace(devices=[DeviceInfo(id=0, name="NVIDIA B200")]))
    assert len(c) == 1
    row = c.iloc[0]
    assert row["kernel_name"] == "Memcpy PtoP (Device -> Device)" and row["n_gpu_rows"] == 1
    assert row["message_bytes"] == 16 << 20
    assert row["busbw_gbps"] == pytest.approx((16 << 20) / 1000 * 7 / 8)
    assert row["busbw_link_pct"] == pytest.approx(100 * row["busbw_gbps"] / 900)


def test_several_kernels_of_one_op_form_one_collective() -> None:
    b = Builder()
    b.op(
        "record_param_comms",
        0,
        100,
        args={
            "Collective name": "all_to_all",
            "In msg nelems": 1000,
            "dtype": "Float",
            "Group size": 4,
        },
    )
    b.launch(10, corr=1)
    b.launch(20, corr=2)
    b.kernel("ncclDevKernel_SendRecv(x)", 200, 300, corr=1)
    b.kernel("ncclDevKernel_SendRecv(x)", 250, 400, corr=2)
    row = build_collectives(b.trace()).iloc[0]
    assert (row["n_gpu_rows"], row["start_ns"], row["end_ns"]) == (2, 200, 400)
    assert row["busbw_gbps"] == pytest.approx(4000 / 200 * 3 / 4)
    assert len(row["gpu_rows"]) == 2


@pytest.mark.parametrize(
    ("name", "peak"),
    [
        ("NVIDIA A100-SXM4-80GB", 300.0),
        ("NVIDIA A100-PG509-200", 300.0),
        ("NVIDIA H100 80GB HBM3", 450.0),
        ("NVIDIA H200", 450.0),
        ("NVIDIA H100 PCIe", 300.0),
        ("Tesla V100-SXM2-32GB", 150.0),
        ("NVIDIA GB200", 900.0),
        ("NVIDIA L40S", 32.0),
    ],
)
def test_link_peaks_follow_the_reference_table(name: str, peak: float) -> None:
    # reference/gpus.md: NVLink per direction, H100 PCIe bridge 600 bidirectional, PCIe 4 x16
    got = link_peak(name)
    assert got is not None and got[0] == peak


def test_unknown_devices_have_no_link_peak() -> None:
    assert link_peak("NVIDIA A100-PCIE-40GB") is None
    assert link_peak("AMD Instinct MI250X") is None
    assert link_peak(None) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(1, 2)), max_size=12),
    st.lists(st.tuples(st.integers(-5, 90), st.integers(1, 2)), max_size=12),
)
def test_innermost_enclosing_range_matches_brute_force(ranges: list, points: list) -> None:
    # launches are linked to the innermost op containing them, on the same thread
    import pandas as pd

    from analyzers.collectives.linking import innermost as _innermost

    df = pd.DataFrame(
        {
            "pid": [1] * len(ranges),
            "tid": [r[2] for r in ranges],
            "start_ns": [r[0] for r in ranges],
            "end_ns": [r[0] + r[1] for r in ranges],
        },
        index=pd.Index([100 + i for i in range(len(ranges))]),
    )
    t = np.array([p[0] for p in points], dtype=np.int64)
    tid = np.array([p[1] for p in points], dtype=np.int64)
    got = _innermost(df, np.ones(len(points), dtype=np.int64), tid, t)
    for k, (tt, th) in enumerate(points):
        inside = [
            (s, -(s + d), 100 + i)
            for i, (s, d, r_tid) in enumerate(ranges)
            if r_tid == th and s <= tt <= s + d and tt >= 0
        ]
        want = max(inside)[2] if inside else -1
        if inside:
            # equal (start, end) ranges are interchangeable
            best = max(inside)[:2]
            assert (df.loc[got[k], "start_ns"], -df.loc[got[k], "end_ns"]) == best
        else:
            assert got[k] == want
