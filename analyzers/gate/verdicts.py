"""The regression gate's decision: candidate metrics against a baseline (docs/gating.md §3).

For each series, with ``s = +1`` when lower is better and ``-1`` when higher is better:

* **centre** ``c``: the baseline value (one summary) or the median of the baseline runs' values
  (store: the last K runs of the latest environment segment);
* **change** ``Δ = s·(x − c)`` in the metric's unit (positive = worse) and **effect**
  ``100·Δ/|c|`` % (relative metrics) or ``Δ`` points (absolute metrics);
* **spread** and **evidence**: :mod:`analyzers.gate.statistics`.  No test applies, or a store
  baseline has fewer than ``min_runs`` runs → ``insufficient``.

Outcome: **fail** when effect ≥ fail threshold, ``Δ > noise_k·spread``, ``Δ > floor`` and
``p < α``; else **warn** when effect ≥ warn threshold; **improved** when effect ≤ −warn,
``−Δ > noise_k·spread`` and ``p < α``; else **pass**.  Without any baseline run (a store
candidate in another environment), every verdict says so (:func:`evaluate`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from analyzers.gate.baseline import Baseline, BaselinePlan
from analyzers.gate.metrics import METRICS, MetricValue, metric_of
from analyzers.gate.rules import GateRules, MetricRule
from analyzers.gate.statistics import Test, evidence, spread
from analyzers.stats import median

Status = Literal["pass", "improved", "warn", "fail", "insufficient"]
Overall = Literal["pass", "warn", "fail", "insufficient"]

NO_BASELINE_RUN = "no baseline run in the candidate's environment"


@dataclass(frozen=True)
class MetricVerdict:
    """The gate's decision for one series (units of ``current``/``baseline``: ``unit``)."""

    key: str
    metric: str
    unit: str
    direction: str
    compare: str
    status: Status
    current: float | None
    baseline: float | None
    delta: float | None
    """Change in the metric's unit, positive = worse."""
    effect: float | None
    """Change in % of the baseline (relative) or in points (absolute), positive = worse."""
    spread: float | None
    p_value: float | None
    test: Test | None
    n_current: int
    n_baseline: int
    """Samples (or calls) on each side for the test; for prediction-t, baseline runs."""
    baseline_runs: int
    fail_threshold: float
    warn_threshold: float
    reason: str


@dataclass(frozen=True)
class GateResult:
    """Every series' verdict and the overall outcome."""

    verdicts: tuple[MetricVerdict, ...]
    baseline_kind: str
    baseline_run_ids: tuple[int, ...]
    alpha: float
    noise_k: float

    @property
    def status(self) -> Overall:
        """``fail`` if any series fails; else ``insufficient`` if any (or no series) lacks
        data; else ``warn`` if any warns; else ``pass``."""
        st = {v.status for v in self.verdicts}
        if "fail" in st:
            return "fail"
        if "insufficient" in st or not self.verdicts:
            return "insufficient"
        if "warn" in st:
            return "warn"
        return "pass"

    def exit_code(self, strict: bool = False) -> int:
        """0 pass/warn (and insufficient unless *strict*), 1 regression, 3 insufficient+strict."""
        s = self.status
        if s == "fail":
            return 1
        if s == "insufficient" and strict:
            return 3
        return 0


def _insufficient(
    key: str, rule: MetricRule, cur: MetricValue | None, base: Sequence[MetricValue], why: str
) -> MetricVerdict:
    spec = METRICS[metric_of(key)]
    return MetricVerdict(
        key=key,
        metric=spec.name,
        unit=spec.unit,
        direction=rule.direction,
        compare=rule.compare,
        status="insufficient",
        current=cur.value if cur else None,
        baseline=median([b.value for b in base]) if base else None,
        delta=None,
        effect=None,
        spread=None,
        p_value=None,
        test=None,
        n_current=0,
        n_baseline=0,
        baseline_runs=len(base),
        fail_threshold=rule.fail,
        warn_threshold=rule.warn,
        reason=why,
    )


def judge(
    key: str,
    cur: MetricValue | None,
    base: Sequence[MetricValue],
    baseline: Baseline,
    rules: GateRules,
) -> MetricVerdict:
    """The verdict for one series (*base*: the baseline runs that have it, newest first)."""
    rule = rules.rule(metric_of(key))
    if cur is None:
        return _insufficient(key, rule, cur, base, "absent from the current summary")
    if not base:
        return _insufficient(key, rule, cur, base, "absent from the baseline")
    lower = rule.direction == "lower"
    sign = 1.0 if lower else -1.0
    centre = median([b.value for b in base])
    delta = sign * (cur.value - centre)
    if rule.compare == "absolute":
        effect = delta
    elif centre != 0.0:
        effect = 100.0 * delta / abs(centre)
    else:
        effect = 0.0 if delta == 0.0 else math.copysign(math.inf, delta)
    noise_scale = spread(base, baseline)
    ev = evidence(cur, base, baseline, rules, lower, delta >= 0.0)
    common: dict[str, Any] = dict(
        key=key,
        metric=metric_of(key),
        unit=METRICS[metric_of(key)].unit,
        direction=rule.direction,
        compare=rule.compare,
        current=cur.value,
        baseline=centre,
        delta=delta,
        effect=effect,
        spread=noise_scale,
        baseline_runs=len(base),
        fail_threshold=rule.fail,
        warn_threshold=rule.warn,
    )
    if isinstance(ev, str):
        return MetricVerdict(
            status="insufficient",
            p_value=None,
            test=None,
            n_current=0,
            n_baseline=0,
            reason=ev,
            **common,
        )
    p, test, n_cur, n_base = ev
    noise = rules.noise_k * noise_scale
    significant = p < rules.alpha
    status: Status
    if effect >= rule.fail and delta > noise and delta > rule.floor and significant:
        status, reason = "fail", "beyond threshold, noise and significance"
    elif effect >= rule.warn:
        status = "warn"
        if effect < rule.fail:
            reason = "in the warn band (below the fail threshold)"
        elif not delta > noise:
            reason = f"within baseline noise (Δ ≤ {rules.noise_k:g} × spread)"
        elif not delta > rule.floor:
            reason = "below the absolute floor"
        else:
            reason = f"not significant (p ≥ α = {rules.alpha:g})"
    elif effect <= -rule.warn and -delta > noise and significant:
        status, reason = "improved", "better beyond the warn band, significant"
    else:
        status, reason = "pass", "within tolerance"
    return MetricVerdict(
        status=status,
        p_value=p,
        test=test,
        n_current=n_cur,
        n_baseline=n_base,
        reason=reason,
        **common,
    )


def gated_keys(
    current: Mapping[str, MetricValue], baseline: Baseline, rules: GateRules
) -> list[str]:
    """The series to judge: every non-kernel series on either side, and the baseline's top
    ``top_kernels`` kernels by total time (the candidate's, when the baseline has none)."""
    keys: set[str] = set()
    for side in (current, *baseline.runs):
        keys |= {k for k in side if metric_of(k) != "kernel_time_ns"}
    ref = baseline.runs[0] if baseline.runs else {}
    kernels = [m for m in ref.values() if m.metric == "kernel_time_ns"]
    if not kernels:
        kernels = [m for m in current.values() if m.metric == "kernel_time_ns"]
    kernels.sort(key=lambda m: (-m.rank_by, m.key))
    keys |= {m.key for m in kernels[: rules.top_kernels]}
    order = {name: i for i, name in enumerate(METRICS)}
    return sorted(
        (k for k in keys if metric_of(k) in METRICS and rules.rule(metric_of(k)).enabled),
        key=lambda k: (order[metric_of(k)], k),
    )


def decide(
    current: Mapping[str, MetricValue], baseline: Baseline, rules: GateRules | None = None
) -> GateResult:
    """Judge every gated series of *current* against *baseline*.

    Args:
        current: the candidate's metrics (:func:`analyzers.gate.metrics.extract_metrics`).
        baseline: one baseline summary's metrics (``kind="file"``) or the store's last runs.
        rules: thresholds and statistical settings (defaults: :class:`GateRules`).
    """
    rules = rules or GateRules()
    verdicts = []
    for key in gated_keys(current, baseline, rules):
        base = [run[key] for run in baseline.runs[: rules.baseline_runs] if key in run]
        verdicts.append(judge(key, current.get(key), base, baseline, rules))
    return GateResult(
        verdicts=tuple(verdicts),
        baseline_kind=baseline.kind,
        baseline_run_ids=baseline.run_ids,
        alpha=rules.alpha,
        noise_k=rules.noise_k,
    )


def without_baseline(result: GateResult, why: str = NO_BASELINE_RUN) -> GateResult:
    """*result* with every verdict's reason replaced by *why* (no baseline run to compare)."""
    return replace(result, verdicts=tuple(replace(v, reason=why) for v in result.verdicts))


def evaluate(
    current: Mapping[str, MetricValue], plan: BaselinePlan, rules: GateRules | None = None
) -> GateResult:
    """The gate's decision for a candidate against a chosen baseline: :func:`decide`, and,
    when the plan has no baseline run, every verdict saying why."""
    result = decide(current, plan.baseline, rules)
    return result if plan.baseline.runs else without_baseline(result)
