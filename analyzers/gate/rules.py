"""Gate rules: the statistical settings and per-metric thresholds (``--rules gate.toml``).

A rules file is TOML (docs/gating.md §4)::

    [gate]
    alpha = 0.01          # one-sided significance level
    noise_k = 3.0         # the change must exceed noise_k × the baseline's robust spread
    baseline_runs = 10    # K: store runs in the baseline window
    min_runs = 5          # fewer store runs → insufficient data
    min_samples = 10      # fewer per-step samples on a side → no Mann–Whitney test
    top_kernels = 5       # kernels gated: the baseline's top N by total time
    warmup_steps = 0      # leading steps left out of per-step samples

    [metrics.step_time_ns]
    fail = 3.0            # % of baseline (relative metrics) or points (absolute metrics)
    warn = 2.0
    floor = 200000        # smallest absolute change, in the metric's unit
    direction = "lower"
    enabled = true

Unknown tables, settings or metric names are a :class:`UsageError`: a typo must not silently
fall back to a default.  Parsing is pure (the CLI reads the file).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from analyzers.gate.metrics import METRICS, Compare, Direction
from collectors.errors import InputError, MissingDependencyError, UsageError


@dataclass(frozen=True)
class MetricRule:
    """Thresholds of one metric (units as in :class:`analyzers.gate.metrics.MetricSpec`)."""

    direction: Direction
    compare: Compare
    fail: float
    warn: float
    floor: float
    enabled: bool = True


def _default_metric_rules() -> dict[str, MetricRule]:
    return {
        name: MetricRule(s.direction, s.compare, s.fail, s.warn, s.floor)
        for name, s in METRICS.items()
    }


@dataclass(frozen=True)
class GateRules:
    """All settings of one gate decision; the defaults are documented in docs/gating.md."""

    alpha: float = 0.01
    noise_k: float = 3.0
    baseline_runs: int = 10
    min_runs: int = 5
    min_samples: int = 10
    top_kernels: int = 5
    warmup_steps: int = 0
    metrics: Mapping[str, MetricRule] = field(default_factory=_default_metric_rules)

    def rule(self, metric: str) -> MetricRule:
        """The rule of *metric* (a metric name, not a series key)."""
        return self.metrics[metric]


_GATE_TYPES: dict[str, type] = {
    "alpha": float,
    "noise_k": float,
    "baseline_runs": int,
    "min_runs": int,
    "min_samples": int,
    "top_kernels": int,
    "warmup_steps": int,
}
_METRIC_KEYS = {"fail", "warn", "floor", "direction", "enabled"}


def _typed(value: Any, want: type, where: str, source: str) -> Any:
    if want is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if want is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if want is bool and isinstance(value, bool):
        return value
    raise UsageError(f"{source}: {where} must be a {want.__name__}, got {value!r}")


def rules_from_mapping(doc: Mapping[str, Any], source: str = "rules") -> GateRules:
    """Build :class:`GateRules` from a parsed TOML document (defaults for what it omits).

    Raises:
        UsageError: an unknown table, setting or metric, a value of the wrong type, or
            inconsistent thresholds (warn above fail, alpha outside (0, 1), ...).
    """
    unknown = set(doc) - {"gate", "metrics"}
    if unknown:
        raise UsageError(f"{source}: unknown table(s) {sorted(unknown)}; use [gate] and [metrics]")
    base = GateRules()
    gate = doc.get("gate", {})
    if not isinstance(gate, Mapping):
        raise UsageError(f"{source}: [gate] must be a table")
    changes: dict[str, Any] = {}
    for key, value in gate.items():
        if key not in _GATE_TYPES:
            raise UsageError(
                f"{source}: unknown setting gate.{key}; known: {', '.join(sorted(_GATE_TYPES))}"
            )
        changes[key] = _typed(value, _GATE_TYPES[key], f"gate.{key}", source)
    metrics = dict(base.metrics)
    table = doc.get("metrics", {})
    if not isinstance(table, Mapping):
        raise UsageError(f"{source}: [metrics] must be a table of [metrics.<name>] tables")
    for name, spec in table.items():
        if name not in METRICS:
            raise UsageError(
                f"{source}: unknown metric '{name}' in [metrics]; known: {', '.join(METRICS)}"
            )
        if not isinstance(spec, Mapping):
            raise UsageError(f"{source}: [metrics.{name}] must be a table")
        bad = set(spec) - _METRIC_KEYS
        if bad:
            raise UsageError(
                f"{source}: unknown key(s) {sorted(bad)} in [metrics.{name}]; "
                f"known: {', '.join(sorted(_METRIC_KEYS))}"
            )
        upd: dict[str, Any] = {}
        for key in ("fail", "warn", "floor"):
            if key in spec:
                upd[key] = _typed(spec[key], float, f"metrics.{name}.{key}", source)
        if "enabled" in spec:
            upd["enabled"] = _typed(spec["enabled"], bool, f"metrics.{name}.enabled", source)
        if "direction" in spec:
            if spec["direction"] not in ("lower", "higher"):
                raise UsageError(f"{source}: metrics.{name}.direction must be 'lower' or 'higher'")
            upd["direction"] = spec["direction"]
        metrics[name] = replace(metrics[name], **upd)
    rules = replace(base, metrics=metrics, **changes)
    _check(rules, source)
    return rules


def _check(rules: GateRules, source: str) -> None:
    if not 0.0 < rules.alpha < 1.0:
        raise UsageError(f"{source}: gate.alpha must lie in (0, 1), got {rules.alpha}")
    for f in fields(rules):
        v = getattr(rules, f.name)
        if isinstance(v, (int, float)) and v < 0:
            raise UsageError(f"{source}: gate.{f.name} must not be negative")
    if rules.baseline_runs < 1 or rules.min_runs < 1 or rules.min_samples < 2:
        raise UsageError(
            f"{source}: gate.baseline_runs and gate.min_runs must be ≥ 1, gate.min_samples ≥ 2"
        )
    for name, r in rules.metrics.items():
        if r.fail < 0 or r.warn < 0 or r.floor < 0:
            raise UsageError(f"{source}: thresholds of {name} must not be negative")
        if r.warn > r.fail:
            raise UsageError(f"{source}: metrics.{name}.warn ({r.warn}) exceeds fail ({r.fail})")


def parse_rules(text: str, source: str = "rules") -> GateRules:
    """Parse a rules file's text (TOML).

    Raises:
        InputError: the text is not valid TOML (names *source*).
        UsageError: see :func:`rules_from_mapping`.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 (pyproject declares tomli there)
        try:
            import tomli as tomllib
        except ModuleNotFoundError as err:
            raise MissingDependencyError("reading TOML on Python 3.10 needs 'tomli'") from err
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", path=source) from err
    return rules_from_mapping(doc, source)
