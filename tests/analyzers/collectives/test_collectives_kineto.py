"""Collectives table on the shared Kineto traces with NCCL work, against the raw JSON events.

Expectations are computed here from the trace files with plain ``json``/``gzip``: the NCCL
kernel events (``cat == "kernel"``, name starting ``nccl``), the ``record_param_comms`` ops and
the ``nccl:*`` annotations; reference numbers of exposed communication come from
reference/metrics.md §9.1.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache
from typing import Any

import numpy as np
import pytest

from analyzers.collectives import collectives_table
from analyzers.comm import collective_summary, exposed_by_collective
from analyzers.temporal import overlap
from collectors.load import load_traces
from collectors.model import Trace
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

TRACES = {
    "nccl_data": ("nccl_parser_config", "nccl_data.json.gz"),
    "trace_filter": ("trace_filter", "sampled_rank-0.json.gz"),
    "negative_queue": ("negative_queue_length_values_check", "rank0.json.gz"),
    "ns_resolution": ("ns_resolution_trace", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
}

# the test's own name tables (c10d names, profiler titles, NCCL kernel names, element sizes)
C10D = {"allreduce": "all_reduce", "broadcast": "broadcast", "_allgather_base": "all_gather"}
TITLES = {
    "nccl:all_reduce": "all_reduce",
    "nccl:broadcast": "broadcast",
    "nccl:all_to_all": "all_to_all",
    "nccl:_all_gather_base": "all_gather",
    "nccl:_reduce_scatter_base": "reduce_scatter",
}
KERNEL = {"AllReduce": "all_reduce", "Broadcast": "broadcast", "SendRecv": "send_recv"}
ELT = {
    "Float": 4,
    "Long": 8,
    "Byte": 1,
    "float": 4,
    "long": 8,
    "int": 4,
    "unsigned char": 1,
    "signed char": 1,
}


@cache
def _raw(name: str) -> list[dict[str, Any]]:
    path = shared_path("kineto", "hta", *TRACES[name])
    return [e for e in trace_events(path) if e.get("ph") == "X"]


@cache
def _trace(name: str) -> Trace:
    (t,) = load_traces([shared_path("kineto", "hta", *TRACES[name])])
    return t


def _nccl_kernels(name: str) -> list[dict[str, Any]]:
    return [e for e in _raw(name) if e.get("cat") == "kernel" and e["name"].startswith("nccl")]


def _expected_sizes(name: str) -> Counter[tuple[str, int]]:
    """(collective, per-rank input bytes) of every collective call, from the raw events."""
    ev = _raw(name)
    rpcs = [e for e in ev if e["name"] == "record_param_comms"]
    out: Counter[tuple[str, int]] = Counter()
    if any("Collective name" in e["args"] for e in rpcs):  # torch ≥ 2.1: explicit metadata
        for e in rpcs:
            a = e["args"]
            if a["Collective name"] in C10D:
                out[C10D[a["Collective name"]], a["In msg nelems"] * ELT[a["dtype"]]] += 1
        return out
    # torch ≤ 2.0: the collective is named by the nccl:* range (inside the op, when there is
    # one); the size is the op's input tensor, else the range's own Input Dims
    for ann in (e for e in ev if e["name"] in TITLES):
        op = next(
            (
                r
                for r in rpcs
                if r["pid"] == ann["pid"]
                and r["tid"] == ann["tid"]
                and r["ts"] <= ann["ts"] <= r["ts"] + r["dur"]
            ),
            None,
        )
        src = op["args"] if op is not None and op["args"]["Input Dims"][0] else ann["args"]
        dims = [d for d in src["Input Dims"] if d]
        n = sum(math.prod(d) for d in dims)
        out[TITLES[ann["name"]], n * ELT[src["Input type"][0]]] += 1
    return out


@pytest.mark.parametrize("name", ["nccl_data", "trace_filter", "negative_queue"])
def test_every_nccl_kernel_belongs_to_one_classified_collective(name: str) -> None:
    t = _trace(name)
    c = collectives_table(t)
    raw = _nccl_kernels(name)
    members = [r for rows in c["gpu_rows"] for r in rows]
    assert len(members) == len(set(members))
    assert Counter(t.gpu.loc[members, "name"].astype(str)) == Counter(e["name"] for e in raw)
    for kname, kcoll, coll in zip(
        c["kernel_name"], c["kernel_collective"], c["collective"], strict=True
    ):
        if not isinstance(kname, str):
            continue
        m = re.match(r"ncclKernel_([A-Za-z]+)_", kname)
        assert m is not None and kcoll == KERNEL[m.group(1)]
        assert coll is not None


@pytest.mark.parametrize("name", list(TRACES))
def test_message_sizes_are_those_recorded_by_the_profiler(name: str) -> None:
    c = collectives_table(_trace(name))
    sized = c[c["size_source"].isin(["record_param_comms", "input_dims", "annotation_dims"])]
    got = Counter(zip(sized["collective"], sized["in_bytes"].astype(int), strict=True))
    assert got == _expected_sizes(name)
    # every collective linked to a profiler op has its size; only kernels launched before the
    # capture started (no op to link to) stay unsized
    linked = c[c["collective_source"] != "kernel_name"]
    assert (linked["in_bytes"] >= 0).all()


def test_single_rank_collectives_are_calls_without_gpu_work() -> None:
    # ns_resolution ran NCCL on a 1-rank group: collective calls, but no NCCL kernel
    c = collectives_table(_trace("ns_resolution"))
    assert not _nccl_kernels("ns_resolution")
    assert len(c) == sum(_expected_sizes("ns_resolution").values()) > 0
    assert (c["n_gpu_rows"] == 0).all() and (c["start_ns"] == -1).all()
    assert c["algbw_gbps"].isna().all()
    assert set(c["group_size"]) == {1}


def test_bandwidth_of_nccl_data_from_kernel_duration_and_comm_args() -> None:
    c = collectives_table(_trace("nccl_data"))
    c = c[c["n_gpu_rows"] > 0]
    kernels = sorted(_nccl_kernels("nccl_data"), key=lambda e: e["ts"])
    assert len(c) == len(kernels) == 21
    c = c.sort_values("start_ns")
    for (_, row), k in zip(c.iterrows(), kernels, strict=True):
        a = k["args"]
        size = a["In msg nelems"] * ELT[a["dtype"]]
        algbw = size / (k["dur"] * 1e3)  # B / ns = GB/s
        assert row["message_bytes"] == size
        assert row["algbw_gbps"] == pytest.approx(algbw, rel=1e-6)
        # 2 ranks: all_reduce factor 2(n-1)/n = 1, broadcast 1
        assert row["busbw_gbps"] == pytest.approx(algbw, rel=1e-6)
        assert row["group_size"] == 2 and row["pg_ranks"] == (0, 1)
        assert row["pg_name"] == "0" and row["pg_desc"] == "default_pg"
        # A100 (PG509 = SXM4 module): NVLink 3, 300 GB/s per direction (reference/gpus.md)
        assert row["busbw_link_pct"] == pytest.approx(100 * algbw / 300, rel=1e-6)


def test_group_size_of_old_all_gather_comes_from_the_c10d_tensors() -> None:
    # trace_filter: c10d::_allgather_base_ has Input Dims [[1073741824], [16777216]] (int8)
    c = collectives_table(_trace("trace_filter"))
    ag = c[c["collective"] == "all_gather"]
    assert len(ag) == 2
    assert set(ag["group_size"]) == {1073741824 // 16777216}
    assert set(ag["group_size_source"]) == {"c10d_dims"}
    assert set(ag["message_bytes"]) == {1073741824}
    for _, row in ag.iterrows():
        algbw = 1073741824 / row["duration_ns"]
        assert row["busbw_gbps"] == pytest.approx(algbw * 63 / 64)
    # without group size, all_reduce / all_to_all busbw stays undefined (never guessed)
    assert c.loc[c["collective"] == "all_reduce", "busbw_gbps"].isna().all()


@pytest.mark.parametrize(
    ("name", "exposed_us"),
    [("trace_filter", 172_259), ("negative_queue", 134_619)],
)
def test_exposed_communication_by_collective_adds_up_to_the_reference(
    name: str, exposed_us: int
) -> None:
    t = _trace(name)
    ex = exposed_by_collective(t)
    assert ex.exposed_ns == exposed_us * 1000 == overlap(t).exposed_comm_ns
    assert "other" not in set(ex.by_label["label"])  # every comm kernel has a collective
    assert ex.by_label["exposed_ns"].sum() >= ex.exposed_ns
    steps = ex.by_step[ex.by_step["label"] == "all"]
    per_type = ex.by_step[ex.by_step["label"] != "all"].groupby("step")["exposed_ns"].sum()
    assert (per_type.reindex(steps["step"]).to_numpy() >= steps["exposed_ns"].to_numpy()).all()


def test_summary_counts_window_collectives_by_size_bucket() -> None:
    t = _trace("nccl_data")
    s = collective_summary(t)
    alls = s[s["size_bucket"] == "all"].set_index("collective")
    # window = steps 4 and 5 of 3 ProfilerSteps (the last is dropped): 10 all_reduce,
    # 4 broadcast; counted independently from the raw kernels launched before step 6 starts
    ev = _raw("nccl_data")
    last = max(e["ts"] for e in ev if e["name"].startswith("ProfilerStep#"))
    runtime = {
        e["args"]["correlation"]: e["ts"]
        for e in ev
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    kept = [k for k in _nccl_kernels("nccl_data") if runtime[k["args"]["correlation"]] < last]
    want = Counter(KERNEL[re.match(r"ncclKernel_([A-Za-z]+)_", k["name"]).group(1)] for k in kept)
    assert alls["count"].to_dict() == dict(want)
    buckets = s[s["size_bucket"] != "all"]
    for coll, grp in buckets.groupby("collective"):
        assert grp["count"].sum() == alls.loc[coll, "count"]
        assert grp["time_ns"].sum() == alls.loc[coll, "time_ns"]
    times = {
        "all_reduce": sum(k["dur"] for k in kept if "AllReduce" in k["name"]),
        "broadcast": sum(k["dur"] for k in kept if "Broadcast" in k["name"]),
    }
    for coll, us in times.items():
        assert alls.loc[coll, "time_ns"] == pytest.approx(us * 1e3, abs=len(kept))


def test_bucket_boundaries_are_powers_of_two() -> None:
    import pandas as pd

    from analyzers.comm import size_bucket

    b = size_bucket(pd.Series([-1, 0, 65535, 65536, 1 << 20, (16 << 20) - 1, 256 << 20]))
    assert b.tolist() == [
        "unknown",
        "<64KiB",
        "<64KiB",
        "64KiB-1MiB",
        "1-16MiB",
        "1-16MiB",
        ">=256MiB",
    ]


def test_table_columns_have_model_dtypes() -> None:
    from analyzers.collectives import COLUMNS, INT_COLUMNS

    for name in TRACES:
        c = collectives_table(_trace(name))
        assert tuple(c.columns) == COLUMNS
        for col in INT_COLUMNS:
            assert c[col].dtype == np.int64, (name, col)
