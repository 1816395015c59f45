"""The regression gate's decision: candidate metrics against a baseline (docs/gating.md §3).

For each series, with ``s = +1`` when lower is better and ``-1`` when higher is better:

* **centre** ``c``: the baseline value (one summary) or the median of the baseline runs' values
  (store: the last K runs of the latest environment segment);
* **change** ``Δ = s·(x − c)`` in the metric's unit (positive = worse) and **effect**
  ``100·Δ/|c|`` % (relative metrics) or ``Δ`` points (absolute metrics);
* **spread** (baseline noise): ``1.4826·MAD`` of the baseline runs' values (store), or for one
  baseline summary the standard error of its median, ``√(π/2)·1.4826·MAD(samples)/√n``
  (per-step samples), or ``std/√n`` (per-call kernel statistics);
* **evidence**, one-sided in the direction of the change, the first that applies:
  Mann–Whitney U on the per-step samples (both sides ≥ ``min_samples``), Welch's t-test from
  per-call (n, mean, std), or — store baselines of ≥ ``min_runs`` runs — the prediction
  t-test ``t = s·(x − mean) / (sd·√(1 + 1/K))`` with K − 1 degrees of freedom.  None
  applies, or a store baseline has fewer than ``min_runs`` runs → ``insufficient``.

Outcome: **fail** when effect ≥ fail threshold, ``Δ > noise_k·spread``, ``Δ > floor`` and
``p < α``; else **warn** when effect ≥ warn threshold; **improved** when effect ≤ −warn,
``−Δ > noise_k·spread`` and ``p < α``; else **pass**.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from analyzers.gate_metrics import METRICS, CallStats, MetricValue, metric_of
from analyzers.gate_rules import GateRules, MetricRule

Status = Literal["pass", "improved", "warn", "fail", "insufficient"]
Overall = Literal["pass", "warn", "fail", "insufficient"]
Test = Literal["mann-whitney", "welch", "prediction-t"]

SE_MEDIAN_FACTOR = math.sqrt(math.pi / 2.0)
"""Asymptotic standard error of a normal sample's median relative to σ/√n (≈ 1.2533)."""
MAD_TO_SIGMA = 1.0 / NormalDist().inv_cdf(0.75)
"""1 / Φ⁻¹(3/4) ≈ 1.4826: scales a MAD to σ for normal data (scipy's ``scale='normal'``)."""


@dataclass(frozen=True)
class Baseline:
    """What the candidate is compared with; ``runs`` newest first."""

    kind: Literal["file", "store"]
    runs: tuple[Mapping[str, MetricValue], ...]
    run_ids: tuple[int, ...] = ()


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


def robust_spread(values: Sequence[float]) -> float:
    """``1.4826 × MAD`` (median absolute deviation from the median, normal-consistent)."""
    if len(values) < 2:
        return 0.0
    x = np.asarray(values, dtype=np.float64)
    return float(MAD_TO_SIGMA * np.median(np.abs(x - np.median(x))))


def se_of_median(samples: Sequence[float]) -> float:
    """Standard error of the median of *samples*: ``√(π/2)·1.4826·MAD/√n``."""
    if len(samples) < 2:
        return 0.0
    return SE_MEDIAN_FACTOR * robust_spread(samples) / math.sqrt(len(samples))


def _pool(parts: Sequence[CallStats]) -> CallStats:
    n = sum(p.n for p in parts)
    mean = sum(p.n * p.mean for p in parts) / n
    ss = sum((p.n - 1) * p.std**2 + p.n * (p.mean - mean) ** 2 for p in parts)
    return CallStats(n=n, mean=mean, std=math.sqrt(ss / (n - 1)) if n > 1 else 0.0)


def _alternative(lower_is_better: bool, test_worse: bool) -> Literal["greater", "less"]:
    """scipy's alternative for 'the candidate is worse' (or better) than the baseline."""
    return "greater" if lower_is_better == test_worse else "less"


def _evidence(
    cur: MetricValue,
    base: Sequence[MetricValue],
    baseline: Baseline,
    rules: GateRules,
    lower_is_better: bool,
    test_worse: bool,
    delta: float,
) -> tuple[float, Test, int, int] | str:
    """(p, test, n_current, n_baseline) of the first applicable test, or why none applies."""
    from scipy import stats  # imported here: it costs seconds, and only the gate needs it

    alt = _alternative(lower_is_better, test_worse)
    pooled = [s for b in base for s in b.samples]
    if len(cur.samples) >= rules.min_samples and len(pooled) >= rules.min_samples:
        res = stats.mannwhitneyu(cur.samples, pooled, alternative=alt)
        return float(res.pvalue), "mann-whitney", len(cur.samples), len(pooled)
    base_stats = [b.stats for b in base if b.stats is not None]
    if (
        cur.stats is not None
        and base_stats
        and cur.stats.n >= rules.min_samples
        and (bs := _pool(base_stats)).n >= rules.min_samples
        and (cur.stats.std > 0 or bs.std > 0)
    ):
        res = stats.ttest_ind_from_stats(
            cur.stats.mean,
            cur.stats.std,
            cur.stats.n,
            bs.mean,
            bs.std,
            bs.n,
            equal_var=False,
            alternative=alt,
        )
        return float(res.pvalue), "welch", cur.stats.n, bs.n
    if baseline.kind == "store" and len(base) >= rules.min_runs:
        vals = np.array([b.value for b in base], float)
        k = len(vals)
        sd = float(np.std(vals, ddof=1))
        worse = (1.0 if lower_is_better else -1.0) * (cur.value - float(np.mean(vals)))
        d = worse if test_worse else -worse
        if sd == 0.0:
            p = 0.0 if d > 0 else 1.0
        else:
            p = float(stats.t.sf(d / (sd * math.sqrt(1.0 + 1.0 / k)), df=k - 1))
        return p, "prediction-t", 1, k
    if baseline.kind == "store":
        return f"{len(base)} baseline run(s) < min_runs {rules.min_runs}"
    n_cur = len(cur.samples) if cur.samples else (cur.stats.n if cur.stats else 0)
    n_base = len(pooled) if pooled else sum(s.n for s in base_stats)
    if n_cur or n_base:
        return f"{n_cur} vs {n_base} samples (< min_samples {rules.min_samples} on a side)"
    return "no per-step samples; needs a store baseline of ≥ min_runs runs"


def _spread(base: Sequence[MetricValue], baseline: Baseline) -> float:
    if baseline.kind == "store" or len(base) > 1:
        return robust_spread([b.value for b in base])
    only = base[0]
    if only.samples:
        return se_of_median(only.samples)
    if only.stats is not None and only.stats.n > 0:
        return only.stats.std / math.sqrt(only.stats.n)
    return 0.0


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
        baseline=float(np.median([b.value for b in base])) if base else None,
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
    centre = float(np.median([b.value for b in base]))
    delta = sign * (cur.value - centre)
    if rule.compare == "absolute":
        effect = delta
    elif centre != 0.0:
        effect = 100.0 * delta / abs(centre)
    else:
        effect = 0.0 if delta == 0.0 else math.copysign(math.inf, delta)
    spread = _spread(base, baseline)
    ev = _evidence(cur, base, baseline, rules, lower, delta >= 0.0, delta)
    common = dict(
        key=key,
        metric=metric_of(key),
        unit=METRICS[metric_of(key)].unit,
        direction=rule.direction,
        compare=rule.compare,
        current=cur.value,
        baseline=centre,
        delta=delta,
        effect=effect,
        spread=spread,
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
    noise = rules.noise_k * spread
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
        current: the candidate's metrics (:func:`analyzers.gate_metrics.extract_metrics`).
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
