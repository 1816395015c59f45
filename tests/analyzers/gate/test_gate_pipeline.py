"""The gate on real summaries: synthetic Kineto traces → load → build_summary → gate.

The generator (``tests.support.synthetic``) knows each step's duration (its ground truth), which is
the independent reference for the gate's step-time samples.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from analyzers.gate.baseline import Baseline
from analyzers.gate.metrics import extract_metrics
from analyzers.gate.rules import parse_rules
from analyzers.gate.verdicts import decide

synthetic = pytest.importorskip("tests.support.synthetic")
STEPS = 31


def _summary(tmp: Path, seed: int, scale: float = 1.0) -> tuple[dict[str, Any], list[dict]]:
    """Summary of a 2-rank synthetic run whose every timestamp and duration is × *scale*."""
    from collectors.load import load_traces
    from reports.summary import build_summary

    traces, truth = synthetic.generate(ranks=2, steps=STEPS, seed=seed)
    out = tmp / f"run-{seed}-{scale}"
    out.mkdir()
    for r, trace in enumerate(traces):
        for ev in trace["traceEvents"]:
            for k in ("ts", "dur"):
                if scale != 1.0 and isinstance(ev.get(k), (int, float)):
                    ev[k] = ev[k] * scale
        (out / f"rank-{r}.json").write_text(json.dumps(trace))
    return build_summary(load_traces([out])), truth


def test_step_time_samples_are_the_ground_truth_slowest_rank(tmp_path: Path) -> None:
    summary, truth = _summary(tmp_path, seed=1)
    per_step: dict[int, int] = {}
    for rank in truth:
        for s in rank["windows"]["default"]["steps"]:
            per_step[s["step"]] = max(per_step.get(s["step"], 0), s["duration_ns"])
    expected = [float(per_step[k]) for k in sorted(per_step)]
    st = extract_metrics(summary)["step_time_ns"]
    assert st.samples == tuple(expected)
    assert st.value == median(expected)


def test_same_workload_passes_and_a_25pct_slower_one_fails(tmp_path: Path) -> None:
    base = extract_metrics(_summary(tmp_path, seed=1)[0])
    same = extract_metrics(_summary(tmp_path, seed=2)[0])
    slow = extract_metrics(_summary(tmp_path, seed=3, scale=1.25)[0])
    ok = decide(same, Baseline("file", (base,)))
    assert ok.status != "fail", [(v.key, v.status) for v in ok.verdicts]

    # the synthetic steps last ~0.6 ms: +25 % is ~0.15 ms, under the default 0.2 ms floor
    by_default = {v.key: v for v in decide(slow, Baseline("file", (base,))).verdicts}
    assert by_default["step_time_ns"].status == "warn"
    assert by_default["step_time_ns"].reason == "below the absolute floor"

    rules = parse_rules("[metrics.step_time_ns]\nfloor = 0\n")
    bad = {v.key: v for v in decide(slow, Baseline("file", (base,)), rules).verdicts}
    assert bad["step_time_ns"].status == "fail"
    assert bad["step_time_ns"].effect == pytest.approx(25.0, abs=8.0)
    # every gated series comes from the summary's own sections
    assert {"step_time_ns", "exposed_comm_ns", "overlap_pct", "gpu_idle_pct"} <= set(bad)
