"""``compare`` on hand-built traces whose every number is worked out in the comments.

Traces are built with :func:`collectors.model.make_trace` (``tests/support/compare_traces.py``
holds the builder and the BASE/CURRENT case with its worked-out numbers) and analysed with
``--all-events`` (every step compared) unless a test says otherwise.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analyzers.compare import compare
from analyzers.compare_sides import side_from_summary, side_from_traces
from analyzers.compare_steps import StepDistribution, step_distribution, step_test
from analyzers.options import AnalysisOptions
from collectors.model import Trace
from reports.summary import build_summary
from tests.support.compare_traces import ALL, base_trace, build, current_trace, k


def sides(base: list[Trace], cur: list[Trace], options: AnalysisOptions = ALL) -> Any:
    return side_from_traces(base, "base", options), side_from_traces(cur, "current", options)


def test_hand_case_contributions_shares_and_other() -> None:
    r = compare(*sides([base_trace()], [current_trace()]))
    assert r.mode == "steps" and r.notes == ()
    assert (r.base.total_ns, r.current.total_ns, r.total_change_ns) == (2000, 2300, 300)
    v = r.view("kernel")
    got = [(e.key, e.status, e.base_count, e.current_count, e.delta_ns) for e in v.entries]
    # ranked by |Δ|, ties by key; "pre" was launched before the first step: not compared
    assert got == [
        ("gemm", "matched", 2, 2, 120),
        ("softmax", "added", 0, 1, 120),
        ("relu", "removed", 1, 0, -100),
        ("late", "matched", 1, 1, 0),
    ]
    gemm = v.entries[0]
    assert (gemm.base_per_call_ns, gemm.current_per_call_ns) == (300.0, 360.0)
    assert gemm.per_call_delta_pct == pytest.approx(20.0)
    assert gemm.delta_pct == pytest.approx(20.0)
    assert v.share_pct(gemm.delta_ns) == pytest.approx(40.0)
    assert (v.matched_ns, v.added_ns, v.removed_ns, v.other_ns) == (120, 120, -100, 160)


def test_ops_match_by_name_and_shapes_through_the_launching_call() -> None:
    r = compare(*sides([base_trace()], [current_trace()]))
    got = {
        (e.key, e.status, e.base_count, e.current_count, e.delta_ns) for e in r.view("op").entries
    }
    assert got == {
        ("aten::mm [[4,4]]", "matched", 2, 2, 120),
        ("aten::softmax [[8]]", "added", 0, 1, 120),
        ("aten::relu [[4]]", "removed", 1, 0, -100),
        ("aten::add [[2]]", "matched", 1, 1, 0),
    }
    assert r.view("op").other_ns == 160


def test_annotations_match_by_name_host_and_gpu_apart() -> None:
    r = compare(*sides([base_trace()], [current_trace()]))
    got = {e.key: e.delta_ns for e in r.view("annotation").entries}
    assert got == {"fwd": 100, "fwd [GPU]": 60}  # 490 → 590 and 300 → 360
    assert r.view("annotation").other_ns == 300 - 160


def test_steps_match_by_index_and_add_up_to_the_change() -> None:
    r = compare(*sides([base_trace()], [current_trace()]))
    v = r.view("step")
    got = [(e.key, e.base_total_ns, e.current_total_ns, e.names) for e in v.entries]
    assert got == [
        ("#1", 1000, 1200, ("ProfilerStep#2 → ProfilerStep#2",)),
        ("#0", 1000, 1100, ("ProfilerStep#1 → ProfilerStep#1",)),
    ]
    assert v.other_ns == 0


def test_default_window_compares_complete_steps_only() -> None:
    """Without --all-events the last step and what it launched are dropped (T = 1000 → 1100)."""
    r = compare(*sides([base_trace()], [current_trace()], AnalysisOptions()))
    assert (r.base.total_ns, r.current.total_ns) == (1000, 1100)
    got = {e.key: (e.base_count, e.current_count, e.delta_ns) for e in r.view("kernel").entries}
    # step 1: one gemm each side (+60); "late" launched in step 1 on both sides
    assert got == {"gemm": (1, 1, 60), "late": (1, 1, 0)}
    assert r.view("kernel").other_ns == 40


def test_the_same_trace_twice_reports_no_change() -> None:
    r = compare(*sides([base_trace()], [base_trace()]))
    assert r.total_change_ns == 0 and r.notes == ()
    for v in r.views:
        assert v.available and (v.entries or v.view == "collective")
        assert all(e.status == "matched" and e.delta_ns == 0 for e in v.entries)
        assert v.other_ns == 0 and v.share_pct(0) is None
    assert r.step_test.statement == "step times are identical on both sides"


def test_uneven_step_counts_compare_the_first_steps_of_each() -> None:
    base = build(
        [(0, 100), (100, 200), (200, 300)],
        [k("a", 10, 40, 5), k("a", 110, 140, 105), k("a", 210, 240, 205)],
    )
    cur = build([(0, 120), (120, 240)], [k("a", 10, 50, 5), k("a", 130, 170, 125)])
    r = compare(*sides([base], [cur]))
    assert (r.base.units, r.current.units) == (2, 2)
    assert (r.base.total_ns, r.current.total_ns) == (200, 240)
    assert r.view("kernel").entries[0].delta_ns == 80 - 60  # base step 3's kernel left out
    assert any(
        n.startswith("step counts differ (3 in BASE, 2 in CURRENT") and "first 2" in n
        for n in r.notes
    )
    assert [e.key for e in r.view("step").entries] == ["#0", "#1"]


def test_traces_without_steps_compare_the_gpu_span() -> None:
    # span: BASE [0, 300) = 300, CURRENT [0, 320) = 320; a +20, b unchanged
    base = build([], [k("a", 0, 100, None), k("b", 150, 300, None)])
    cur = build([], [k("a", 0, 120, None), k("b", 170, 320, None)])
    r = compare(*sides([base], [cur]))
    assert r.mode == "span" and r.total_change_ns == 20
    assert {e.key: e.delta_ns for e in r.view("kernel").entries} == {"a": 20, "b": 0}
    assert r.view("kernel").other_ns == 0
    assert not r.view("step").available
    assert any("no ProfilerSteps in BASE rank 0" in n for n in r.notes)
    assert r.step_test.statement == "no step-time test: BASE has no ProfilerSteps"


def test_different_rank_counts_compare_the_common_ranks_with_one_line() -> None:
    r = compare(*sides([base_trace(0), base_trace(1)], [current_trace(0)]))
    assert r.rank_pairs == ((0, 0),)
    assert r.notes == (
        "rank sets differ (BASE 2: 0, 1; CURRENT 1: 0): comparing the 1 common rank(s) 0",
    )
    assert r.total_change_ns == 300  # rank 0 only
    assert r.base.ranks == (0, 1) and r.base.units == 2


def test_no_common_kernel_is_explained_and_the_rest_still_compared() -> None:
    base = build([(0, 100)], [k("alpha", 10, 40, 5)])
    cur = build([(0, 130)], [k("beta", 10, 70, 5)])
    r = compare(*sides([base], [cur]))
    (line,) = [n for n in r.notes if "appears on both sides" in n]
    assert line.startswith("no kernel name (after normalisation) appears on both sides")
    assert "1 only in BASE, 1 only in CURRENT" in line
    v = r.view("kernel")
    assert [(e.key, e.status, e.delta_ns) for e in v.entries] == [
        ("beta", "added", 60),
        ("alpha", "removed", -30),
    ]
    assert v.other_ns == 0 and r.view("step").entries[0].delta_ns == 30


def test_kernel_names_are_matched_after_normalisation() -> None:
    base = build([(0, 100)], [k("void k<4, float>(int, float*)", 10, 40, 5)])
    cur = build([(0, 100)], [k("k<4,float>", 10, 50, 5)])
    (e,) = compare(*sides([base], [cur])).view("kernel").entries
    assert (e.key, e.status, e.delta_ns) == ("k<4,float>", "matched", 10)
    assert set(e.names) == {"void k<4, float>(int, float*)", "k<4,float>"}


def test_collectives_match_by_type_and_message_size() -> None:
    def nccl(name: str, coll: str, nelems_in: int, nelems_out: int, s: int, e: int) -> dict:
        comm = {
            "Collective name": coll,
            "In msg nelems": nelems_in,
            "Out msg nelems": nelems_out,
            "dtype": "Float",
            "Group size": 2,
        }
        return k(name, s, e, s - 50, stream=20, comm=comm)

    ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    ag = "ncclDevKernel_AllGather_RING_LL"
    base = build(
        [(0, 1000)],
        [nccl(ar, "allreduce", 1024, 1024, 100, 300), nccl(ar, "allreduce", 2048, 2048, 400, 700)],
    )
    cur = build(
        [(0, 1000)],
        [nccl(ar, "allreduce", 1024, 1024, 100, 350), nccl(ag, "allgather", 512, 1024, 400, 500)],
    )
    v = compare(*sides([base], [cur])).view("collective")
    got = [(e.key, e.status, e.delta_ns) for e in v.entries]
    # 1024 float32 = 4 KiB; all_gather's message is its output (1024 floats)
    assert got == [
        ("all_reduce 8 KiB", "removed", -300),
        ("all_gather 4 KiB", "added", 100),
        ("all_reduce 4 KiB", "matched", 50),
    ]
    assert v.other_ns == 150


def test_a_json_summary_side_supports_the_kernel_and_step_views() -> None:
    summary = build_summary([base_trace()], ALL)
    cur = current_trace()
    r = compare(side_from_summary(summary, "base.json"), side_from_traces([cur], "cur", ALL))
    assert r.mode == "window"
    assert any(n.startswith("BASE is a JSON summary") for n in r.notes)
    for view in ("op", "collective", "annotation"):
        assert not r.view(view).available
        assert r.view(view).note == "not available: BASE is a JSON summary"
    # window totals: "pre" counts (unchanged) as in the summary's kernel_summary
    got = {e.key: e.delta_ns for e in r.view("kernel").entries}
    assert got == {"gemm": 120, "softmax": 120, "relu": -100, "late": 0, "pre": 0}
    assert r.view("kernel").other_ns == 160
    assert sum(e.delta_ns for e in r.view("step").entries) == 300


def test_summary_against_its_own_trace_reports_no_change() -> None:
    t = base_trace()
    r = compare(
        side_from_summary(build_summary([t], ALL), "s.json"), side_from_traces([t], "t", ALL)
    )
    assert r.total_change_ns == 0
    assert all(e.delta_ns == 0 and e.status == "matched" for e in r.view("kernel").entries)


def _shifted(n: int, shift: int) -> tuple[StepDistribution, StepDistribution]:
    base = tuple(float(10_000_000 + 1000 * (7 * i % 13)) for i in range(n))
    return StepDistribution(base), StepDistribution(tuple(x + shift for x in base))


def test_step_test_says_current_is_slower_when_every_step_is() -> None:
    b, c = _shifted(12, 1_000_000)  # every step 1 ms (10 %) longer
    t = step_test(b, c)
    assert t.differ is True and t.test == "mann-whitney" and t.p_value < 0.01
    assert t.statement.startswith("step times differ: CURRENT is slower")
    assert t.gate_status == "fail"


def test_step_test_finds_no_difference_between_overlapping_samples() -> None:
    b, c = _shifted(12, 1000)
    t = step_test(b, c)
    assert t.differ is False and t.p_value >= 0.01
    assert t.statement.startswith("no significant difference in step time")


def test_step_test_needs_ten_steps_a_side() -> None:
    b, c = _shifted(3, 1_000_000)
    t = step_test(b, c)
    assert t.test is None and t.differ is None
    assert t.statement.startswith("too few steps for the gate's test")


def test_step_samples_are_the_slowest_rank_of_each_step() -> None:
    df0 = pd.DataFrame({"step": [1, 2], "duration_ns": [100, 300]})
    df1 = pd.DataFrame({"step": [1, 2], "duration_ns": [150, 200]})
    assert step_distribution([(0, df0), (1, df1)]).samples_ns == (150.0, 300.0)


def test_ops_without_a_shared_external_id_are_found_around_the_launch() -> None:
    """Launch rows without the op's external id: the innermost cpu_op around the launch."""
    ops = [(1, "aten::linear", "[[8,8]]", 0, 100), (2, "aten::addmm", "[[8,8]]", 10, 50)]
    steps = [(0, 200)]
    base = build(steps, [k("gemm", 110, 140, 20), k("bias", 140, 150, 60)], ops)
    cur = build(steps, [k("gemm", 110, 150, 20), k("bias", 150, 160, 60)], ops)
    got = {
        e.key: (e.base_total_ns, e.current_total_ns)
        for e in compare(*sides([base], [cur])).view("op").entries
    }
    # launch at 20 is inside addmm (inner) and linear; launch at 60 only inside linear
    assert got == {"aten::addmm [[8,8]]": (30, 40), "aten::linear [[8,8]]": (10, 10)}


def test_innermost_range_per_thread() -> None:
    import numpy as np

    from analyzers.compare_sides import innermost_range

    # thread 1: [0,100) ⊃ [10,50) ⊃ [20,30), then [60,70); thread 2: [0,1000)
    starts = np.array([0, 10, 20, 60, 0])
    ends = np.array([100, 50, 30, 70, 1000])
    groups = np.array([1, 1, 1, 1, 2])
    t = np.array([25, 40, 55, 65, 80, 100, 5, 25, -1])
    tg = np.array([1, 1, 1, 1, 1, 1, 2, 3, 1])
    assert innermost_range(starts, ends, groups, t, tg).tolist() == [2, 1, 0, 3, 0, -1, 4, -1, -1]
