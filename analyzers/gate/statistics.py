"""The gate's statistics (docs/gating.md §3): baseline spread and the one-sided tests.

* **spread** (baseline noise): ``1.4826·MAD`` of the baseline runs' values (store), or for one
  baseline summary the standard error of its median, ``√(π/2)·1.4826·MAD(samples)/√n``
  (per-step samples), or ``std/√n`` (per-call kernel statistics);
* **evidence**, one-sided in the direction of the change, the first that applies:
  Mann–Whitney U on the per-step samples (both sides ≥ ``min_samples``), Welch's t-test from
  per-call (n, mean, std), or — store baselines of ≥ ``min_runs`` runs — the prediction
  t-test ``t = s·(x − mean) / (sd·√(1 + 1/K))`` with K − 1 degrees of freedom.

Medians are :func:`analyzers.stats.median`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

import numpy as np

from analyzers.stats import median

if TYPE_CHECKING:
    from analyzers.gate.baseline import Baseline
    from analyzers.gate.metrics import MetricValue
    from analyzers.gate.rules import GateRules

Test = Literal["mann-whitney", "welch", "prediction-t"]

SE_MEDIAN_FACTOR = math.sqrt(math.pi / 2.0)
"""Asymptotic standard error of a normal sample's median relative to σ/√n (≈ 1.2533)."""
MAD_TO_SIGMA = 1.0 / NormalDist().inv_cdf(0.75)
"""1 / Φ⁻¹(3/4) ≈ 1.4826: scales a MAD to σ for normal data (scipy's ``scale='normal'``)."""


@dataclass(frozen=True)
class CallStats:
    """Per-call duration statistics: count, mean and sample standard deviation (ns)."""

    n: int
    mean: float
    std: float


def pool(parts: Sequence[CallStats]) -> CallStats:
    """Pool groups of calls into one: the count, mean and sample standard deviation of the
    concatenated calls, ``ss = Σ (nᵢ − 1)·sᵢ² + nᵢ·(mᵢ − m)²``, ``s = √(ss / (n − 1))``.

    Raises:
        ValueError: no call in *parts*.
    """
    n = sum(p.n for p in parts)
    if n <= 0:
        raise ValueError("pooling needs at least one call")
    mean = sum(p.n * p.mean for p in parts) / n
    ss = sum((p.n - 1) * p.std**2 + p.n * (p.mean - mean) ** 2 for p in parts)
    return CallStats(n=n, mean=mean, std=math.sqrt(ss / (n - 1)) if n > 1 else 0.0)


def robust_spread(values: Sequence[float]) -> float:
    """``1.4826 × MAD`` (median absolute deviation from the median, normal-consistent)."""
    if len(values) < 2:
        return 0.0
    x = np.asarray(values, dtype=np.float64)
    return float(MAD_TO_SIGMA * median(np.abs(x - median(x))))


def se_of_median(samples: Sequence[float]) -> float:
    """Standard error of the median of *samples*: ``√(π/2)·1.4826·MAD/√n``."""
    if len(samples) < 2:
        return 0.0
    return SE_MEDIAN_FACTOR * robust_spread(samples) / math.sqrt(len(samples))


def spread(base: Sequence[MetricValue], baseline: Baseline) -> float:
    """The baseline's noise in the metric's unit (module docstring)."""
    if baseline.kind == "store" or len(base) > 1:
        return robust_spread([b.value for b in base])
    only = base[0]
    if only.samples:
        return se_of_median(only.samples)
    if only.stats is not None and only.stats.n > 0:
        return only.stats.std / math.sqrt(only.stats.n)
    return 0.0


def _alternative(lower_is_better: bool, test_worse: bool) -> Literal["greater", "less"]:
    """scipy's alternative for 'the candidate is worse' (or better) than the baseline."""
    return "greater" if lower_is_better == test_worse else "less"


def evidence(
    cur: MetricValue,
    base: Sequence[MetricValue],
    baseline: Baseline,
    rules: GateRules,
    lower_is_better: bool,
    test_worse: bool,
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
        and (bs := pool(base_stats)).n >= rules.min_samples
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
