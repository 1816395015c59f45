"""The one median/quantile definition (analyzers/stats.py), against hand-computed values and
independent implementations (Python's statistics module, numpy's documented default)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from analyzers.stats import median, quantile, round_ns


def test_median_is_the_middle_value_or_the_mean_of_the_two_middle_values() -> None:
    assert median([5, 1, 3]) == 3.0
    assert median([150, 400, 250, 900]) == 325.0  # (250 + 400) / 2, not the lower 250
    assert median([10, 20, 31, 41]) == 25.5  # half a nanosecond: not rounded
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 30, 31):
        x = rng.integers(0, 10**12, n).tolist()
        assert median(x) == statistics.median(x)


def test_quantile_interpolates_linearly_between_order_statistics() -> None:
    x = [150, 250, 400, 900]
    # h = (n - 1)·q = 2.7: x[2] + 0.7·(x[3] − x[2]) = 400 + 0.7·500
    assert quantile(x, 0.9) == pytest.approx(750.0)
    assert quantile(x, 0.5) == median(x)
    assert (quantile(x, 0.0), quantile(x, 1.0)) == (150.0, 900.0)
    assert quantile(list(range(1, 11)), 0.9) == pytest.approx(9.1)
    rng = np.random.default_rng(1)
    y = rng.normal(0, 1, 101).tolist()
    # statistics.quantiles(method="inclusive") is the same type-7 definition
    assert quantile(y, 0.25) == pytest.approx(statistics.quantiles(y, n=4, method="inclusive")[0])


def test_an_empty_sample_or_a_level_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        median([])
    with pytest.raises(ValueError, match="empty"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        quantile([1, 2], 1.5)


def test_round_ns_rounds_halves_to_even_like_the_summary() -> None:
    assert round_ns(325.0) == 325 and isinstance(round_ns(325.0), int)
    assert (round_ns(25.5), round_ns(26.5), round_ns(750.0000000000001)) == (26, 26, 750)
