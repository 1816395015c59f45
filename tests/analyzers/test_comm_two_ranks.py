"""A hand-built two-rank trace with known timings: exposed communication, skew, transfer.

Timeline (ns).  Three ProfilerSteps [0,1000), [1000,2000), [2000,3000); the window keeps the
work launched before step 3 starts.  Process group "0" = ranks (0, 1).

    step 1   rank 0: gemm [100,400)   all_reduce [300,700)    (launched at 260)
             rank 1: gemm [100,600)   all_reduce [550,700)
    step 2   rank 0: gemm [1200,1500) all_gather [1250,1300)  (launched at 1060)
             rank 1: gemm [1000,1250) all_gather [1100,1300)
    step 3   both:   broadcast [2100,2200)                     (launched in the last step)

Hand-computed:
    all_reduce: d = (400, 150) → transfer 150, skew 250, late rank 1, rank 0 waits 250
    all_gather: d = (50, 200)  → transfer 50,  skew 150, late rank 0, rank 1 waits 150
    exposed rank 0: [400,700) = 300 (step 1) + 0 (step 2, all_gather under gemm)   = 300
    exposed rank 1: [600,700) = 100 (step 1) + [1250,1300) = 50 (step 2)            = 150
    all_gather: 1000 float elements in, 2 ranks → S = out bytes = 8000;
        rank 0: algbw 8000 B / 50 ns = 160 GB/s, busbw × 1/2 = 80 GB/s
"""

from __future__ import annotations

from typing import Any

import pytest

from analyzers.collectives import collectives_table
from analyzers.comm import collective_summary, exposed_by_collective
from analyzers.options import AnalysisOptions
from analyzers.parallelism import comm_by_dimension, trace_process_groups
from analyzers.skew import cross_rank_skew
from analyzers.temporal import overlap
from collectors.model import DeviceInfo, TraceMeta, make_trace

PG = {
    "Process Group Name": "0",
    "Process Group Description": "default_pg",
    "Process Group Ranks": "[0, 1]",
    "Group size": 2,
}

# per rank: (gemm start, end), collective (name, start, end), ... for steps 1, 2, 3
TIMES = {
    0: {"gemm": [(100, 400), (1200, 1500)], "ar": (300, 700), "ag": (1250, 1300)},
    1: {"gemm": [(100, 600), (1000, 1250)], "ar": (550, 700), "ag": (1100, 1300)},
}


def build_rank(rank: int, extra: dict[str, Any] | None = None) -> Any:
    """The trace of one rank (see the module docstring)."""
    t = TIMES[rank]
    gpu: dict[str, list[Any]] = {
        k: []
        for k in (
            "name",
            "kind",
            "start_ns",
            "end_ns",
            "stream",
            "correlation",
            "device",
            "comm_args",
        )
    }
    host: dict[str, list[Any]] = {
        k: []
        for k in ("name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation", "comm_args")
    }

    def kernel(name: str, s: int, e: int, corr: int, launch: int, stream: int) -> None:
        for k, v in zip(
            ("name", "kind", "start_ns", "end_ns", "stream", "correlation", "device", "comm_args"),
            (name, "kernel", s, e, stream, corr, 0, None),
            strict=True,
        ):
            gpu[k].append(v)
        hrow("cudaLaunchKernel", "cuda_runtime", launch, launch + 5, corr)

    def hrow(name: str, cat: str, s: int, e: int, corr: int = -1, args: Any = None) -> None:
        for k, v in zip(
            ("name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation", "comm_args"),
            (name, cat, s, e, 1, 1, corr, args),
            strict=True,
        ):
            host[k].append(v)

    for i in range(3):
        hrow(f"ProfilerStep#{i + 1}", "user_annotation", i * 1000, (i + 1) * 1000)
    (g1, g2) = t["gemm"]
    kernel("void gemm_kernel<float>(...)", *g1, corr=1, launch=50, stream=7)
    kernel("void gemm_kernel<float>(...)", *g2, corr=3, launch=1050, stream=7)
    hrow(
        "record_param_comms",
        "cpu_op",
        250,
        280,
        args={
            "Collective name": "allreduce",
            "In msg nelems": 2500,
            "Out msg nelems": 2500,
            "dtype": "Float",
            **PG,
            **(extra or {}).get("ar", {}),
        },
    )
    kernel(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        *t["ar"],
        corr=2,
        launch=260,
        stream=40,
    )
    hrow(
        "record_param_comms",
        "cpu_op",
        1055,
        1080,
        args={
            "Collective name": "_allgather_base",
            "In msg nelems": 1000,
            "Out msg nelems": 2000,
            "dtype": "Float",
            **PG,
            **(extra or {}).get("ag", {}),
        },
    )
    kernel(
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        *t["ag"],
        corr=4,
        launch=1060,
        stream=40,
    )
    hrow(
        "record_param_comms",
        "cpu_op",
        2050,
        2080,
        args={
            "Collective name": "broadcast",
            "In msg nelems": 10,
            "Out msg nelems": 10,
            "dtype": "Float",
            **PG,
        },
    )
    kernel(
        "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        2100,
        2200,
        corr=5,
        launch=2060,
        stream=40,
    )
    steps = {
        "name": [f"ProfilerStep#{i + 1}" for i in range(3)],
        "kind": ["step"] * 3,
        "start_ns": [0, 1000, 2000],
        "end_ns": [1000, 2000, 3000],
        "step": [1, 2, 3],
    }
    meta = TraceMeta(
        rank=rank,
        source_format="synthetic",
        world_size=2,
        devices=[DeviceInfo(id=0, name="NVIDIA H100 80GB HBM3")],
    )
    return make_trace(meta, gpu=gpu, host=host, annotations=steps)


@pytest.fixture
def ranks() -> list[Any]:
    return [build_rank(0), build_rank(1)]


def test_exposed_communication_per_rank_per_step_and_per_type(ranks: list[Any]) -> None:
    r0, r1 = (exposed_by_collective(t) for t in ranks)
    assert (r0.exposed_ns, r1.exposed_ns) == (300, 150)
    assert (r0.comm_ns, r1.comm_ns) == (400 + 50, 150 + 200)  # broadcast is outside the window
    assert r0.exposed_ns == overlap(ranks[0]).exposed_comm_ns
    by = {(row.step, row.label): (row.comm_ns, row.exposed_ns) for row in r1.by_step.itertuples()}
    assert by[(1, "all")] == (150, 100) and by[(2, "all")] == (200, 50)
    assert by[(1, "all_reduce")] == (150, 100) and by[(2, "all_gather")] == (200, 50)
    assert by[(1, "all_gather")] == (0, 0)
    assert r0.by_label.set_index("label")["exposed_ns"].to_dict() == {
        "all_reduce": 300,
        "all_gather": 0,
    }


def test_skew_transfer_and_straggler(ranks: list[Any]) -> None:
    s = cross_rank_skew(ranks)
    m = s.matched.set_index("collective")
    assert len(m) == 2 and s.mismatched == 0  # broadcast launched in the last step: no
    assert m.loc["all_reduce", ["transfer_ns", "arrival_skew_ns", "late_rank"]].tolist() == [
        150,
        250,
        1,
    ]
    assert m.loc["all_gather", ["transfer_ns", "arrival_skew_ns", "late_rank"]].tolist() == [
        50,
        150,
        0,
    ]
    assert m.loc["all_reduce", "start_spread_ns"] == 250
    assert set(m["match_by"]) == {"ordinal"}
    w = s.waits.set_index(["key", "rank"])["wait_ns"]
    assert w.sum() == 250 + 150
    pr = s.per_rank.set_index("rank")
    assert pr.loc[0, "wait_ns"] == 250 and pr.loc[1, "wait_ns"] == 150
    assert pr.loc[0, "transfer_ns"] == pr.loc[1, "transfer_ns"] == 150 + 50
    assert pr["late_count"].to_dict() == {0: 1, 1: 1}
    ps = s.per_step.set_index("step")
    assert ps.loc[1, ["straggler", "straggler_caused_wait_ns"]].tolist() == [1, 250]
    assert ps.loc[2, ["straggler", "straggler_caused_wait_ns"]].tolist() == [0, 150]


def test_bandwidth_and_link_share_of_the_all_gather(ranks: list[Any]) -> None:
    c = collectives_table(ranks[0]).set_index("collective")
    ag = c.loc["all_gather"]
    assert (ag["in_bytes"], ag["out_bytes"], ag["message_bytes"]) == (4000, 8000, 8000)
    assert ag["algbw_gbps"] == pytest.approx(160.0)
    assert ag["busbw_gbps"] == pytest.approx(80.0)
    assert ag["busbw_link_pct"] == pytest.approx(100 * 80 / 450)  # NVLink 4: 450 GB/s
    ar = c.loc["all_reduce"]  # 2 ranks: factor 2(n-1)/n = 1; 10,000 B / 400 ns
    assert ar["busbw_gbps"] == pytest.approx(25.0)
    assert list(collectives_table(ranks[0])["step"]) == [1, 2, 3]


def test_summary_and_dimension_breakdown(ranks: list[Any]) -> None:
    s = collective_summary(ranks[1]).set_index(["collective", "size_bucket"])
    assert s.loc[("all_gather", "all"), "time_ns"] == 200
    assert s.loc[("all_reduce", "<64KiB"), "count"] == 1
    assert ("broadcast", "all") not in s.index
    groups = trace_process_groups(ranks[0])
    assert groups[["pg_name", "dimension", "source"]].values.tolist() == [
        ["0", "data", "rank_layout"]
    ]
    d = comm_by_dimension(ranks[1]).set_index("dimension")
    assert d.loc["data", ["calls", "comm_ns", "exposed_ns"]].tolist() == [2, 350, 150]


def test_all_events_option_brings_the_last_step_back(ranks: list[Any]) -> None:
    s = cross_rank_skew(ranks, AnalysisOptions(all_events=True))
    assert sorted(s.matched["collective"]) == ["all_gather", "all_reduce", "broadcast"]
    assert exposed_by_collective(ranks[0], AnalysisOptions(all_events=True)).exposed_ns == 400
