"""Step-time distributions of both sides and the gate's test of whether they differ.

Samples are the gate's (docs/gating.md §2, :func:`analyzers.gate.metrics.extract_metrics`):
one per ProfilerStep id of the analysis window, the largest ``duration_ns`` of that step over
the compared ranks (a synchronous step ends with its slowest rank).  The statement comes from
the gate's own decision for ``step_time_ns`` (:func:`analyzers.gate.verdicts.judge` with the default
:class:`analyzers.gate.rules.GateRules`, BASE as a one-summary baseline): a one-sided
Mann–Whitney U test in the direction of the change of medians, at α = 0.01, when both sides
have at least ``min_samples`` = 10 steps; fewer steps → no test, and the statement says so.

    ===============================  ==========================================================
    situation                        statement
    ===============================  ==========================================================
    a side without steps             no step-time test: BASE has no ProfilerSteps
    same samples on both sides       step times are identical on both sides
    < 10 steps on a side             too few steps for the gate's test (…); medians a → b ms
    p < α                            step times differ: CURRENT is slower (median a → b ms, +x %;
                                     one-sided Mann–Whitney U p = … < α = 0.01; gate: fail)
    p ≥ α                            no significant difference in step time (median a → b ms,
                                     +x %; one-sided Mann–Whitney U p = … ≥ α = 0.01)
    ===============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzers.gate.baseline import Baseline
from analyzers.gate.metrics import MetricValue, per_step
from analyzers.gate.rules import GateRules
from analyzers.gate.verdicts import judge
from analyzers.stats import quantile

STEP_METRIC = "step_time_ns"


@dataclass(frozen=True)
class StepDistribution:
    """One side's per-step samples (ns): the slowest compared rank of each step id."""

    samples_ns: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.samples_ns)

    def quantile(self, q: float) -> float | None:
        """:func:`analyzers.stats.quantile` (type 7, linear); None without samples."""
        return quantile(self.samples_ns, q) if self.samples_ns else None

    @property
    def median_ns(self) -> float | None:
        return self.quantile(0.5)

    @property
    def mean_ns(self) -> float | None:
        return float(np.mean(self.samples_ns)) if self.samples_ns else None


@dataclass(frozen=True)
class StepTest:
    """Whether the step-time distributions differ, in the gate's terms."""

    statement: str
    test: str | None
    """``mann-whitney`` when the test ran, else None."""
    p_value: float | None
    """One-sided, in the direction of the change of medians."""
    alpha: float
    gate_status: str | None
    """The gate's verdict for ``step_time_ns`` (pass / improved / warn / fail / insufficient)."""
    differ: bool | None
    """True when p < α, False when p ≥ α or the samples are identical, None without a test."""


def step_distribution(steps: Sequence[tuple[int, pd.DataFrame]]) -> StepDistribution:
    """Samples of one side from ``(rank, steps table)`` pairs (module docstring)."""
    per_rank = [
        [(int(s), float(d)) for s, d in zip(df["step"], df["duration_ns"], strict=True)]
        for _, df in steps
    ]
    return StepDistribution(tuple(per_step(per_rank, max)))


def _ms(ns: float | None) -> str:
    return "–" if ns is None else f"{ns / 1e6:,.3f}"


def step_test(
    base: StepDistribution,
    current: StepDistribution,
    base_label: str = "BASE",
    current_label: str = "CURRENT",
    rules: GateRules | None = None,
) -> StepTest:
    """The gate's step-time decision between the two sides, as one statement."""
    rules = rules or GateRules()
    a = rules.alpha
    for dist, label in ((base, base_label), (current, current_label)):
        if not dist.n:
            return StepTest(
                f"no step-time test: {label} has no ProfilerSteps", None, None, a, None, None
            )
    if sorted(base.samples_ns) == sorted(current.samples_ns):
        return StepTest("step times are identical on both sides", None, None, a, "pass", False)

    def mv(d: StepDistribution) -> MetricValue:
        return MetricValue(STEP_METRIC, STEP_METRIC, float(d.median_ns or 0.0), d.samples_ns)

    b = mv(base)
    v = judge(STEP_METRIC, mv(current), [b], Baseline("file", ({STEP_METRIC: b},)), rules)
    bm, cm = base.median_ns, current.median_ns
    rel = f", {100.0 * (cm - bm) / bm:+.1f} %" if bm and cm is not None else ""
    medians = f"median {_ms(bm)} → {_ms(cm)} ms{rel}"
    if v.p_value is None:
        return StepTest(
            f"too few steps for the gate's test ({v.reason}); {medians}",
            None,
            None,
            a,
            v.status,
            None,
        )
    p = v.p_value
    if p < a:
        slower = "slower" if (v.delta or 0.0) >= 0.0 else "faster"
        text = (
            f"step times differ: {current_label} is {slower} ({medians}; one-sided "
            f"Mann–Whitney U p = {p:.3g} < α = {a:g}; gate: {v.status})"
        )
    else:
        text = (
            f"no significant difference in step time ({medians}; one-sided Mann–Whitney U "
            f"p = {p:.3g} ≥ α = {a:g})"
        )
    return StepTest(text, v.test, p, a, v.status, p < a)
