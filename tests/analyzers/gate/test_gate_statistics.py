"""The gate's statistical behaviour, simulated with fixed seeds, and its tests against scipy.

Must show (issue 8): 30 steps per run, 2 % step-time noise: identical distributions fail in at
most 1 % of 200 trials, a 5 % slowdown fails in at least 95 %.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analyzers.gate.baseline import Baseline
from analyzers.gate.metrics import MetricValue, extract_metrics
from analyzers.gate.rules import GateRules
from analyzers.gate.statistics import robust_spread, se_of_median
from analyzers.gate.verdicts import GateResult, decide
from tests.support.summaries import kernel_row, make_summary, sim_summary

TRIALS = 200


def _step_verdict(cur: dict, base: Baseline, rules: GateRules | None = None):
    r = decide(extract_metrics(cur), base, rules)
    (v,) = [v for v in r.verdicts if v.key == "step_time_ns"]
    return v


def _file(summary: dict) -> Baseline:
    return Baseline("file", (extract_metrics(summary),))


def _store(rng: np.random.Generator, runs: int = 10, drift: float = 0.0) -> Baseline:
    return Baseline(
        "store",
        tuple(
            extract_metrics(sim_summary(rng, offset=float(rng.normal(0, drift)) if drift else 0))
            for _ in range(runs)
        ),
    )


def _trial_fails(seed: int, baseline_kind: str, scale: float = 1.0) -> int:
    """Failed step-time verdicts in :data:`TRIALS` runs of *scale* against a fresh baseline."""
    rng = np.random.default_rng(seed)
    fails = 0
    for _ in range(TRIALS):
        base = _file(sim_summary(rng)) if baseline_kind == "file" else _store(rng)
        fails += _step_verdict(sim_summary(rng, scale), base).status == "fail"
    return fails


@pytest.mark.parametrize("baseline_kind", ["file", "store"])
def test_identical_distributions_fail_in_at_most_1pct_of_200_trials(baseline_kind: str) -> None:
    assert _trial_fails(20260801, baseline_kind) <= 0.01 * TRIALS


@pytest.mark.parametrize("baseline_kind", ["file", "store"])
def test_five_pct_slowdown_fails_in_at_least_95pct_of_200_trials(baseline_kind: str) -> None:
    assert _trial_fails(20260802, baseline_kind, 1.05) >= 0.95 * TRIALS


def test_run_to_run_drift_is_held_back_by_the_noise_rule() -> None:
    # every run has its own level (3 % run-to-run σ): the per-step test alone is fooled,
    # the noise rule (Δ > 3 × 1.4826·MAD of the run values) is not
    rng = np.random.default_rng(20260803)
    mw_only = gate = 0
    for _ in range(100):
        base = _store(rng, drift=0.03)
        v = _step_verdict(sim_summary(rng, offset=float(rng.normal(0, 0.03))), base)
        mw_only += v.p_value is not None and v.p_value < 0.01 and v.effect >= 3.0
        gate += v.status == "fail"
    assert mw_only >= 10  # the trap is real
    assert gate <= 2


def test_slowdown_inside_the_warn_band_warns() -> None:
    rng = np.random.default_rng(5)
    v = _step_verdict(sim_summary(rng, 1.025, noise=0.002), _file(sim_summary(rng, noise=0.002)))
    assert v.status == "warn"
    assert "warn band" in v.reason
    assert 2.0 <= v.effect < 3.0


def test_significant_speedup_is_an_improvement() -> None:
    rng = np.random.default_rng(6)
    v = _step_verdict(sim_summary(rng, 0.93), _file(sim_summary(rng)))
    assert v.status == "improved"
    assert v.effect < -2.0


def test_too_few_steps_is_insufficient_not_pass() -> None:
    rng = np.random.default_rng(7)
    v = _step_verdict(sim_summary(rng, 1.5, n=5), _file(sim_summary(rng, n=5)))
    assert v.status == "insufficient"
    assert "min_samples" in v.reason
    assert v.effect == pytest.approx(50.0, abs=5.0)  # the effect is still reported


def test_store_baseline_with_too_few_runs_is_insufficient_for_series_without_samples() -> None:
    base = Baseline(
        "store",
        tuple({"overlap_pct": MetricValue("overlap_pct", "overlap_pct", 60.0)} for _ in range(4)),
    )
    r = decide({"overlap_pct": MetricValue("overlap_pct", "overlap_pct", 30.0)}, base)
    (v,) = r.verdicts
    assert v.status == "insufficient"
    assert "min_runs" in v.reason


def test_overlap_drop_in_points_against_a_store_baseline() -> None:
    vals = [60.0, 61.0, 59.0, 60.5, 59.5, 60.0, 60.2, 59.8, 60.1, 59.9]
    base = Baseline(
        "store", tuple({"overlap_pct": MetricValue("overlap_pct", "overlap_pct", x)} for x in vals)
    )

    def judge(x: float):
        cur = {"overlap_pct": MetricValue("overlap_pct", "overlap_pct", x)}
        return decide(cur, base).verdicts[0]

    # hand-computed: centre = median = 60.0; a 12 pp drop → effect +12 pp (worse).
    # mean 60.0; squared deviations sum to 2.6 → sd = √(2.6/9); t = 12 / (sd·√(1 + 1/10))
    v = judge(48.0)
    assert (v.status, v.effect, v.test) == ("fail", 12.0, "prediction-t")
    t = 12.0 / (math.sqrt(2.6 / 9) * math.sqrt(1.1))
    assert v.p_value == pytest.approx(stats.t.sf(t, 9), rel=1e-9)
    assert judge(54.0).status == "warn"  # 6 pp: warn band (5..10 pp)
    assert judge(59.0).status == "pass"


def test_mann_whitney_p_is_scipys_one_sided_in_the_bad_direction() -> None:
    rng = np.random.default_rng(8)
    cur, base = sim_summary(rng, 1.01), sim_summary(rng)
    v = _step_verdict(cur, _file(base))
    x = [s["duration_ns"] for s in cur["ranks"][0]["steps"]]
    y = [s["duration_ns"] for s in base["ranks"][0]["steps"]]
    assert v.test == "mann-whitney"
    assert v.p_value == pytest.approx(stats.mannwhitneyu(x, y, alternative="greater").pvalue)


def test_higher_is_better_tests_the_lower_side() -> None:
    # the same samples read as a higher-is-better series: "worse" means smaller
    rng = np.random.default_rng(9)
    x, y = rng.normal(90, 2, 30), rng.normal(100, 2, 30)
    cur = {"busbw_GBps[x]": MetricValue("busbw_GBps[x]", "busbw_GBps", 90.0, tuple(x))}
    base = {"busbw_GBps[x]": MetricValue("busbw_GBps[x]", "busbw_GBps", 100.0, tuple(y))}
    (v,) = decide(cur, Baseline("file", (base,))).verdicts
    assert v.status == "fail" and v.effect == pytest.approx(10.0)
    assert v.p_value == pytest.approx(stats.mannwhitneyu(x, y, alternative="less").pvalue)


def test_kernel_welch_test_matches_scipy_on_the_raw_calls() -> None:
    rng = np.random.default_rng(10)
    a = rng.normal(54_000, 1_500, 300)  # candidate: +8 %
    b = rng.normal(50_000, 1_500, 300)
    cur = extract_metrics(make_summary([[100]], kernels=[[kernel_row("gemm", a)]]))
    base = extract_metrics(make_summary([[100]], kernels=[[kernel_row("gemm", b)]]))
    (v,) = [v for v in decide(cur, Baseline("file", (base,))).verdicts if "gemm" in v.key]
    ref = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    assert v.test == "welch"
    assert v.p_value == pytest.approx(ref, rel=1e-3)
    assert v.status == "fail"


def test_standard_error_of_the_median_matches_simulation() -> None:
    # reference: the empirical spread of medians of many 30-sample normal draws
    rng = np.random.default_rng(11)
    draws = rng.normal(100.0, 2.0, (20_000, 30))
    empirical = float(np.std(np.median(draws, axis=1)))
    estimated = float(np.median([se_of_median(d) for d in draws[:1_000]]))
    assert estimated == pytest.approx(empirical, rel=0.12)


def test_robust_spread_ignores_one_outlier_run() -> None:
    assert robust_spread([100, 101, 99, 100, 100, 101, 99, 500]) == pytest.approx(
        stats.median_abs_deviation([100, 101, 99, 100, 100, 101, 99, 500], scale="normal")
    )
    assert robust_spread([100, 101, 99, 100, 100, 101, 99, 500]) < 2.0


def test_rules_thresholds_change_the_decision() -> None:
    from analyzers.gate.rules import parse_rules

    rng = np.random.default_rng(12)
    cur, base = sim_summary(rng, 1.05), _file(sim_summary(rng))
    assert _step_verdict(cur, base).status == "fail"
    loose = parse_rules("[metrics.step_time_ns]\nfail = 8.0\nwarn = 4.0\n")
    assert _step_verdict(cur, base, loose).status == "warn"
    off = parse_rules("[metrics.step_time_ns]\nenabled = false\n")
    assert all(v.key != "step_time_ns" for v in decide(extract_metrics(cur), base, off).verdicts)


def test_exit_codes_of_the_overall_outcome() -> None:
    def result(*statuses: str) -> GateResult:
        base = {"step_time_ns": MetricValue("step_time_ns", "step_time_ns", 1.0)}
        vs = decide(base, Baseline("file", (base,))).verdicts[0]
        from dataclasses import replace

        return GateResult(tuple(replace(vs, status=s) for s in statuses), "file", (), 0.01, 3.0)

    assert (result("pass", "improved").status, result("pass").exit_code(True)) == ("pass", 0)
    assert result("warn", "pass").exit_code(True) == 0
    assert result("fail", "insufficient").exit_code(True) == 1
    assert result("insufficient", "pass").exit_code(False) == 0
    assert result("insufficient", "pass").exit_code(True) == 3
    assert result().status == "insufficient"  # nothing to judge is not a pass
