"""The rules file: defaults as documented, overrides, and every mistake is a clear error."""

from __future__ import annotations

import pytest

from analyzers.gate.metrics import METRICS
from analyzers.gate.rules import GateRules, parse_rules
from collectors.errors import InputError, UsageError


def test_defaults_are_the_documented_ones() -> None:
    r = GateRules()
    assert (r.alpha, r.noise_k, r.baseline_runs, r.min_runs, r.min_samples) == (
        0.01,
        3.0,
        10,
        5,
        10,
    )
    step = r.rule("step_time_ns")
    assert (step.fail, step.warn, step.floor, step.direction) == (3.0, 2.0, 200_000.0, "lower")
    assert r.rule("busbw_GBps").direction == "higher"
    assert r.rule("overlap_pct").compare == "absolute"
    assert set(r.metrics) == set(METRICS)


def test_overrides_replace_only_what_they_name() -> None:
    r = parse_rules(
        """
        [gate]
        alpha = 0.05
        top_kernels = 3
        [metrics.step_time_ns]
        fail = 5
        [metrics.busbw_GBps]
        enabled = false
        """
    )
    assert r.alpha == 0.05 and r.top_kernels == 3 and r.noise_k == 3.0
    assert r.rule("step_time_ns").fail == 5.0 and r.rule("step_time_ns").warn == 2.0
    assert r.rule("busbw_GBps").enabled is False


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[metrics.step_time]\nfail = 1\n", "unknown metric 'step_time'"),
        ("[metrics.step_time_ns]\nfial = 1\n", r"unknown key\(s\) \['fial'\]"),
        ("[gate]\nalfa = 0.1\n", "unknown setting gate.alfa"),
        ("[thresholds]\n", "unknown table"),
        ("[gate]\nalpha = 1.5\n", "alpha must lie in"),
        ("[gate]\nalpha = 'x'\n", "gate.alpha must be a float"),
        ("[metrics.step_time_ns]\nwarn = 5\n", r"warn \(5.0\) exceeds fail \(3.0\)"),
        ("[metrics.step_time_ns]\ndirection = 'up'\n", "direction must be"),
        ("[metrics.step_time_ns]\nenabled = 1\n", "enabled must be a bool"),
        ("[gate]\nmin_samples = 1\n", "min_samples"),
    ],
)
def test_mistakes_are_usage_errors_naming_the_file(text: str, match: str) -> None:
    with pytest.raises(UsageError, match=match) as err:
        parse_rules(text, "ci/gate.toml")
    assert str(err.value).startswith("ci/gate.toml: ")


def test_invalid_toml_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not valid TOML") as err:
        parse_rules("[gate\nalpha=", "gate.toml")
    assert err.value.path == "gate.toml"
