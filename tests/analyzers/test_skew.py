"""Cross-rank matching: by (process group, Seq) when recorded, else by per-group ordinal.

Scenario: rank 1's capture starts one collective later than rank 0's, so per-group ordinals
are shifted by one.  With ``Seq`` recorded the collectives still pair up; without it the
ordinal pairs join different collectives, which the type check flags.
"""

from __future__ import annotations

from typing import Any

from analyzers.skew import cross_rank_skew
from collectors.model import TraceMeta, make_trace

# (seq, collective c10d name, in elements, duration on rank 0, duration on rank 1)
CALLS = [
    (7, "allreduce", 100, 80, 30),
    (8, "_allgather_base", 50, 40, 90),
    (9, "allreduce", 100, 60, 60),
]


def build(rank: int, calls: list[tuple[int, str, int, int, int]], with_seq: bool) -> Any:
    gpu: dict[str, list[Any]] = {
        k: [] for k in ("name", "kind", "start_ns", "end_ns", "stream", "correlation")
    }
    host: dict[str, list[Any]] = {
        k: []
        for k in ("name", "cat", "start_ns", "end_ns", "pid", "tid", "correlation", "comm_args")
    }
    for i, (seq, coll, n, d0, d1) in enumerate(calls):
        t0 = 1000 * (i + 1)
        args = {
            "Collective name": coll,
            "In msg nelems": n,
            "Out msg nelems": n * (2 if "gather" in coll else 1),
            "dtype": "Float",
            "Group size": 2,
            "Process Group Name": "7",
            "Process Group Ranks": "[0, 1]",
        }
        if with_seq:
            args["Seq"] = seq
        for k, v in zip(
            host, ("record_param_comms", "cpu_op", t0, t0 + 50, 1, 1, -1, args), strict=True
        ):
            host[k].append(v)
        for k, v in zip(
            host, ("cudaLaunchKernel", "cuda_runtime", t0 + 10, t0 + 20, 1, 1, i, None), strict=True
        ):
            host[k].append(v)
        d = d0 if rank == 0 else d1
        end = t0 + 500
        kname = (
            "ncclKernel_AllGather_RING_LL_Sum_int8_t"
            if "gather" in coll
            else ("ncclKernel_AllReduce_RING_LL_Sum_float")
        )
        for k, v in zip(gpu, (kname, "kernel", end - d, end, 40, i), strict=True):
            gpu[k].append(v)
    return make_trace(TraceMeta(rank=rank, source_format="synthetic", world_size=2), gpu, host)


def test_seq_pairs_collectives_when_captures_start_at_different_calls() -> None:
    r0 = build(0, CALLS, with_seq=True)
    r1 = build(1, CALLS[1:], with_seq=True)  # rank 1 missed seq 7
    s = cross_rank_skew([r0, r1])
    assert set(s.matched["match_by"]) == {"seq"}
    assert s.mismatched == 0
    m = s.matched.set_index("key")
    assert sorted(m.index) == ["7#seq8", "7#seq9"]
    assert m.loc[
        "7#seq8", ["collective", "transfer_ns", "arrival_skew_ns", "late_rank"]
    ].tolist() == [
        "all_gather",
        40,
        50,
        0,
    ]
    assert m.loc["7#seq9", "arrival_skew_ns"] == 0
    pr = s.per_rank.set_index("rank")
    assert pr.loc[0, "unmatched"] == 1 and pr.loc[1, "unmatched"] == 0
    assert pr.loc[1, "wait_ns"] == 50


def test_ordinal_matching_flags_pairs_of_different_collectives() -> None:
    r0 = build(0, CALLS, with_seq=False)
    r1 = build(1, CALLS[1:], with_seq=False)
    s = cross_rank_skew([r0, r1])
    assert set(s.matched["match_by"]) == {"ordinal"}
    # ordinal 0: all_reduce on rank 0 vs all_gather on rank 1; ordinal 1: the reverse
    assert s.mismatched == len(s.matched) == 2
    assert not s.matched["consistent"].any()
    # mismatched pairs stay out of the per-rank and per-step sums
    assert s.per_rank["wait_ns"].sum() == 0
    assert s.per_step.empty


def test_one_rank_or_no_collectives_gives_empty_results() -> None:
    s = cross_rank_skew([build(0, CALLS, with_seq=True)])
    assert s.matched.empty and s.waits.empty and s.per_step.empty
    assert s.per_rank["unmatched"].tolist() == [3]
    empty = make_trace(TraceMeta(rank=3, source_format="synthetic"))
    s = cross_rank_skew([empty, empty])
    assert s.matched.empty and s.per_rank.empty
