"""Steps on the GPU's clock (docs/metrics.md §7) on synthetic two-rank runs whose GPUs run a
known 0, 0.5, 1.7 and 3 steps behind the CPU: per-step figures equal the layout's ground truth
(tests/support/lag_traces.py) at every lag, and ``analyze`` (the JSON summary), ``report``
(its payload: cards, step breakdown) and ``compare`` (kernels placed in steps) agree."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from analyzers.compare import compare
from analyzers.compare_sides import side_from_traces
from analyzers.options import AnalysisOptions
from collectors.summary.schema import Summary
from reports.html_payload import build_payload
from reports.summary import build_summary
from tests.support.lag_traces import EXPOSED, LATENCY_NS, STEP_NS, LagRank, lag_run

LAGS = (0.0, 0.5, 1.7, 3.0)
TRUTH_KEYS = (
    "step",
    "start_ns",
    "end_ns",
    "duration_ns",
    "gpu_start_ns",
    "gpu_end_ns",
    "gpu_duration_ns",
    "compute_ns",
    "exposed_comm_ns",
    "idle_ns",
    "work_events",
    "work_ns",
    "launch_lag_ns",
    "steps_behind",
)


def _summary(run: list[LagRank], options: AnalysisOptions | None = None) -> dict[str, Any]:
    doc = build_summary([r.trace for r in run], options)
    raw = json.dumps(doc, allow_nan=False)  # no NaN or infinity anywhere
    typed = msgspec.json.decode(raw.encode(), type=Summary)  # every key in the schema
    assert typed == json.loads(raw)
    return json.loads(raw)


@pytest.fixture(scope="module", params=LAGS, ids=lambda x: f"lag{x}")
def case(request: pytest.FixtureRequest) -> tuple[float, list[LagRank], dict[str, Any]]:
    run = lag_run(request.param)
    return request.param, run, _summary(run)


def test_analyze_steps_equal_the_ground_truth_at_every_lag(case: Any) -> None:
    _, run, doc = case
    for r, rank in zip(run, doc["ranks"], strict=True):
        want = [{k: getattr(t, k) for k in TRUTH_KEYS} for t in r.steps]
        assert rank["steps"] == want, rank["rank"]
        # the four parts of every step add up to its length on the GPU clock
        for s in rank["steps"]:
            assert s["compute_ns"] + s["exposed_comm_ns"] + s["idle_ns"] <= s["gpu_duration_ns"]


def test_host_wait_and_verdicts_follow_the_gpu_clock(case: Any) -> None:
    _, run, doc = case
    for r, rank in zip(run, doc["ranks"], strict=True):
        idle = rank["idle"]
        assert [s["host_wait_ns"] for s in idle["steps"]] == [t.host_wait_ns for t in r.steps]
        assert [s["gpu_duration_ns"] for s in idle["steps"]] == [t.gpu_duration_ns for t in r.steps]
        for s, t in zip(idle["steps"], r.steps, strict=True):
            assert s["comm_share"] == pytest.approx(EXPOSED / t.gpu_duration_ns)
        # ~15 % exposed communication in every step; a lagging GPU never waits for the host
        assert {s["verdict"] for s in idle["steps"]} == {"communication-bound"}
        assert idle["host_bound"]["duration_ns"] == sum(t.gpu_duration_ns for t in r.steps)


def test_the_lag_is_reported_per_step_and_noted(case: Any) -> None:
    lag, run, doc = case
    shift = round(lag * STEP_NS) + LATENCY_NS
    for r, rank in zip(run, doc["ranks"], strict=True):
        integ = rank["integrity"]
        assert integ["lag"]["median_launch_lag_ns"] == shift
        assert integ["lag"]["median_steps_behind"] == pytest.approx(shift / STEP_NS)
        noted = any("steps behind the CPU" in n for n in integ["notes"])
        assert noted == (lag >= 0.5)
        assert integ["prelaunched_events"] == r.prelaunched_events
        assert integ["prelaunched_ns"] == r.prelaunched_busy_ns
        assert (r.prelaunched_events > 0) == (lag > 0)


def test_report_cards_and_breakdown_equal_the_truth(case: Any) -> None:
    lag, run, doc = case
    p = build_payload(doc)
    truths = [(r.trace.rank, t) for r in run for t in r.steps]
    dur = sum(t.gpu_duration_ns for _, t in truths)
    busy = sum(t.gpu_duration_ns - t.idle_ns for _, t in truths)
    c = p["cards"]
    assert c["gpu_busy"]["pct"] == pytest.approx(100 * busy / dur)
    assert (c["gpu_busy"]["basis"], c["gpu_busy"]["view"]) == ("steps", "GPU clock")
    assert c["comm"]["exposed_per_step_ns"] == EXPOSED
    assert c["comm"]["exposed_share_pct"] == pytest.approx(100 * EXPOSED * len(truths) / dur)
    assert c["lag"]["median_launch_lag_ns"] == round(lag * STEP_NS) + LATENCY_NS
    rows = {(x["rank"], x["step"]): x for x in p["steps"]["rows"]}
    assert len(rows) == len(truths)
    for rank, t in truths:
        x = rows[(rank, t.step)]
        assert (x["gpu_duration_ns"], x["compute_ns"], x["idle_ns"]) == (
            t.gpu_duration_ns,
            t.compute_ns,
            t.idle_ns,
        )
        assert x["exposed_comm_ns"] == t.exposed_comm_ns and x["memory_other_ns"] == 0
    # the payload says what the summary says
    assert [s["idle_ns"] for r in doc["ranks"] for s in r["steps"]] == [
        rows[(r["rank"], s["step"])]["idle_ns"] for r in doc["ranks"] for s in r["steps"]
    ]


def test_compare_places_the_same_work_in_the_same_steps_at_every_lag(case: Any) -> None:
    _, run, doc = case
    base = side_from_traces([r.trace for r in lag_run(0.0)], "BASE")
    current = side_from_traces([r.trace for r in run], "CURRENT")
    result = compare(base, current)
    assert result.mode == "steps" and result.total_change_ns == 0
    kernels = result.view("kernel").entries
    assert kernels and all(e.delta_ns == 0 and e.status == "matched" for e in kernels)
    # what compare counts in the compared steps is the work analyze attributes to them
    work = sum(s["work_ns"] for r in doc["ranks"] for s in r["steps"])
    assert sum(e.current_total_ns for e in kernels) == work
    assert sum(e.current_count for e in kernels) == sum(
        s["work_events"] for r in doc["ranks"] for s in r["steps"]
    )


def test_prelaunched_work_is_counted_in_the_steps_only_when_asked() -> None:
    run = lag_run(1.7)
    doc = _summary(run, AnalysisOptions(include_prelaunched=True))
    for r, rank in zip(run, doc["ranks"], strict=True):
        pre = r.trace.gpu[r.trace.gpu["correlation"] < 1000]  # the ids below the first call
        assert len(pre) == r.prelaunched_events > 0
        placed = []
        for t in r.steps:  # placed at its GPU start, in the host range holding it
            s = pre["start_ns"]
            placed.append(int(((s >= t.start_ns) & (s < t.end_ns)).sum()))
        assert [s["work_events"] for s in rank["steps"]] == [
            t.work_events + n for t, n in zip(r.steps, placed, strict=True)
        ]
        assert rank["integrity"]["prelaunched_included"] is True
        assert any("counted in the per-step figures" in n for n in rank["integrity"]["notes"])
