"""``compare`` on real Kineto traces: HTA's trace_compare pair, self-comparisons, mismatches.

Every expected number is recomputed here from the raw JSON events (ts/dur × 1000 = ns): the
ProfilerSteps, each GPU activity's launch (the ``cuda_runtime`` call with the same
correlation, else its own start; none when its correlation is below every call's: launched
before the profiler started), the window filter's kept activities, and per-name totals.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from analyzers.compare import Comparison, compare
from analyzers.compare_sides import side_from_traces
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

PAIR = ("kineto", "hta", "trace_compare")
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def raw_events(folder: Path) -> list[dict[str, Any]]:
    (f,) = sorted(folder.glob("*.json.gz"))
    return trace_events(f)


def ns(x: Any) -> int:
    return round(x * 1000)


def raw_measure(events: list[dict[str, Any]], all_events: bool) -> dict[str, Any]:
    """Steps, compared total and per-(view, name) totals of one side, from the raw events."""
    steps = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if re.match(r"ProfilerStep#\d+", e.get("name", ""))
    )
    cutoff = steps[-1][0]
    if not all_events:  # HTA's window: the last step and what it launched are dropped
        steps = steps[:-1]
    launch = {
        e["args"]["correlation"]: ns(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    kernels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("cat") not in GPU_CATS:
            continue
        corr = e["args"]["correlation"]
        if not all_events and not (corr in launch and launch[corr] < cutoff):
            continue
        if corr not in launch and 0 <= corr < min(launch):
            continue  # launched before the profiler started: in no step (docs/metrics.md §7)
        t = launch.get(corr, ns(e["ts"]))
        if any(lo <= t < hi for lo, hi in steps):
            kernels[e["name"]][0] += 1
            kernels[e["name"]][1] += ns(e["dur"])
    annotations: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("cat") == "user_annotation" and not e["name"].startswith("ProfilerStep"):
            t = ns(e["ts"])
            if (all_events or t < cutoff) and any(lo <= t < hi for lo, hi in steps):
                annotations[e["name"]][0] += 1
                annotations[e["name"]][1] += ns(e["dur"])
    return {
        "steps": steps,
        "total": sum(hi - lo for lo, hi in steps),
        "kernel": dict(kernels),
        "annotation": dict(annotations),
    }


def _run(base: Path, cur: Path, all_events: bool) -> Comparison:
    opts = AnalysisOptions(all_events=all_events)
    return compare(
        side_from_traces(load_traces([base]), str(base), opts),
        side_from_traces(load_traces([cur]), str(cur), opts),
    )


@pytest.mark.parametrize("all_events", [False, True], ids=["default-window", "all-events"])
def test_trace_compare_pair_contributions_add_up_to_the_measured_difference(
    all_events: bool,
) -> None:
    base_dir = shared_path(*PAIR, "base")
    cur_dir = shared_path(*PAIR, "test")
    rb = raw_measure(raw_events(base_dir), all_events)
    rc = raw_measure(raw_events(cur_dir), all_events)
    result = _run(base_dir, cur_dir, all_events)

    assert result.mode == "steps" and result.rank_pairs == ((1, 1),)
    n = min(len(rb["steps"]), len(rc["steps"]))
    assert (result.base.units, result.current.units) == (n, n)
    measured = sum(hi - lo for lo, hi in rc["steps"][:n]) - sum(
        hi - lo for lo, hi in rb["steps"][:n]
    )
    assert result.total_change_ns == measured

    for view in ("kernel", "annotation"):
        v = result.view(view)
        # each entry is one raw name here (no two names normalise to one key in this pair)
        assert all(len(e.names) == 1 for e in v.entries)
        got = {
            e.names[0]: (e.base_count, e.base_total_ns, e.current_count, e.current_total_ns)
            for e in v.entries
        }
        names = set(rb[view]) | set(rc[view])
        want = {k: (*rb[view].get(k, (0, 0)), *rc[view].get(k, (0, 0))) for k in names}
        assert got == {k: tuple(v_) for k, v_ in want.items()}
        # the contributions and the explicit remainder close exactly on the measured change
        assert sum(e.delta_ns for e in v.entries) + v.other_ns == measured
        assert v.matched_ns + v.added_ns + v.removed_ns + v.other_ns == measured

    steps = result.view("step")
    assert sum(e.delta_ns for e in steps.entries) == measured and steps.other_ns == 0
    if all_events:
        # what differs in this pair: CURRENT lacks one add kernel and one nccl:all_reduce range
        k = {e.names[0]: e.delta_ns for e in result.view("kernel").entries if e.delta_ns}
        assert len(k) == 1 and next(iter(k.values())) == -4000
        a = result.view("annotation").entries[0]
        assert (a.key, a.base_count, a.current_count, a.delta_ns) == (
            "nccl:all_reduce",
            2,
            1,
            -67000,
        )


@pytest.mark.parametrize(
    "parts",
    [
        ("kineto", "hta", "nccl_parser_config"),
        ("kineto", "hta", "ns_resolution_trace"),
    ],
    ids=lambda p: p[-1],
)
def test_a_real_trace_compared_with_itself_reports_no_change(parts: tuple[str, ...]) -> None:
    folder = shared_path(*parts)
    traces = load_traces([folder])
    opts = AnalysisOptions()
    result = compare(
        side_from_traces(traces, "a", opts), side_from_traces(load_traces([folder]), "b", opts)
    )
    assert result.notes == ()
    assert result.total_change_ns == 0 and result.base.total_ns > 0
    for v in result.views:
        assert v.available, v.view
        assert all(e.status == "matched" and e.delta_ns == 0 for e in v.entries), v.view
        assert v.other_ns == 0
    assert len(result.view("kernel").entries) > 10
    assert result.view("op").entries  # ops with shapes linked to their GPU work
    assert result.step_test.statement == "step times are identical on both sides"
    assert result.step_test.differ is False


def test_collectives_of_a_real_trace_match_by_type_and_size() -> None:
    folder = shared_path("kineto", "hta", "nccl_parser_config")
    opts = AnalysisOptions()
    side = side_from_traces(load_traces([folder]), "x", opts)
    result = compare(side, side)
    keys = {e.key for e in result.view("collective").entries}
    # AllReduce and Broadcast of several sizes each form their own entry
    assert any(k.startswith("all_reduce ") for k in keys)
    assert any(k.startswith("broadcast ") for k in keys)
    assert len(keys) > 2


def test_different_real_runs_are_paired_and_explained_in_one_line() -> None:
    """Rank 1 of the trace_compare pair against rank 0 of another model: no rank in common."""
    a = shared_path(*PAIR, "base")
    b = shared_path("kineto", "hta", "ns_resolution_trace")
    result = _run(a, b, all_events=False)
    assert result.rank_pairs == ((1, 0),)
    assert any(n.startswith("no rank id on both sides") for n in result.notes)
    assert all("\n" not in n for n in result.notes)
    for v in result.views:
        assert sum(e.delta_ns for e in v.entries) + v.other_ns == result.total_change_ns


def test_nsys_against_kineto_runs_and_says_what_differs() -> None:
    """Nsight Systems export (no ProfilerSteps, no cpu_op rows) against a Kineto trace."""
    nsys = shared_path("nsys", "nsys2024.6.2.25__Fuser__report2.sqlite")
    kineto = shared_path("kineto", "hta", "ns_resolution_trace")
    result = _run(nsys, kineto, all_events=False)
    assert result.mode == "span"
    # BASE's T: the GPU span, straight from the export's activity tables
    with sqlite3.connect(nsys) as db:
        lo, hi = db.execute(
            "SELECT min(start), max(end) FROM (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"
            " UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY"
            " UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET"
            " UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)"
        ).fetchone()
    assert result.base.total_ns == hi - lo
    assert result.base.formats == ("nsys",) and result.current.formats == ("kineto",)
    assert any(n.startswith("BASE is Nsight Systems, CURRENT Kineto") for n in result.notes)
    assert any(n.startswith("no ProfilerSteps in BASE rank 0") for n in result.notes)
    assert not result.view("op").entries or all(
        e.status == "added" for e in result.view("op").entries
    )
    for v in result.views:
        assert sum(e.delta_ns for e in v.entries) + v.other_ns == result.total_change_ns
