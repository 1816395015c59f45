"""Trend page: change points (ruptures) at known steps, environment segments, escaping."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from analyzers.gate.changepoints import annotate_history, change_points
from reports.history import render_history
from reports.store import VERDICT_COLUMNS

EVIL = "</script><script>alert('x')</script>"


def _history(values: list[float], fingerprints: list[str] | None = None, key: str = "step_time_ns"):
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    n = len(values)
    return pd.DataFrame(
        {
            "run_id": range(1, n + 1),
            "name": "llama",
            "branch": "main",
            "commit_sha": [f"c{i:03d}" for i in range(n)],
            "recorded_at": [t0 + timedelta(hours=i) for i in range(n)],
            "fingerprint": fingerprints or ["a"] * n,
            "key": key,
            "metric": key.split("[")[0],
            "unit": "ns",
            "direction": "lower",
            "value": values,
        }
    )


def _verdicts(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def test_a_step_is_found_where_it_happened() -> None:
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(100, 1, 25), rng.normal(105, 1, 25)]
    assert change_points(x) == [25]


def test_flat_noisy_series_rarely_get_a_change_point() -> None:
    rng = np.random.default_rng(2)
    found = sum(bool(change_points(rng.normal(100, 1, 40))) for _ in range(100))
    assert found <= 2  # ≤ 2 % of 100


def test_three_sigma_shift_is_found_within_one_run() -> None:
    rng = np.random.default_rng(6)
    hits = 0
    for _ in range(100):
        x = np.r_[rng.normal(100, 1, 20), rng.normal(103, 1, 20)]
        hits += any(abs(i - 20) <= 1 for i in change_points(x))
    assert hits >= 90  # ≥ 90 % of 100


def test_a_single_spike_is_not_a_change_point() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(100, 1, 30)
    x[12] = 130
    assert change_points(x) == []


def test_short_or_constant_series_have_none() -> None:
    assert change_points([1.0, 2.0, 3.0]) == []
    assert change_points([5.0] * 20) == []


def test_environment_change_starts_a_segment_and_detection_restarts_there() -> None:
    rng = np.random.default_rng(4)
    # level shifts exactly at the environment change: a segment break, not a change point
    vals = list(rng.normal(100, 1, 20)) + list(rng.normal(110, 1, 20))
    df = annotate_history(_history(vals, ["a"] * 20 + ["b"] * 20))
    assert df["segment"].tolist() == [0] * 20 + [1] * 20
    assert not df["change_point"].any()
    # within one environment the same shift is a change point at run 21 (index 20)
    df2 = annotate_history(_history(vals))
    assert df2.index[df2["change_point"]].tolist() == [20]


def test_page_marks_change_points_verdicts_and_escapes_every_string() -> None:
    rng = np.random.default_rng(5)
    vals = list(rng.normal(100e6, 1e6, 15)) + list(rng.normal(108e6, 1e6, 15))
    hist = _history(vals, key=f"kernel_time_ns[{EVIL}]")
    hist["commit_sha"] = [EVIL] * len(hist)
    verdicts = _verdicts(
        [
            {
                "created_at": datetime(2026, 1, 2, tzinfo=timezone.utc),
                "name": "llama",
                "branch": "main",
                "commit_sha": EVIL,
                "key": f"kernel_time_ns[{EVIL}]",
                "status": "fail",
                "current": 108e6,
                "baseline": 100e6,
                "effect": 8.0,
                "p_value": 1e-9,
                "reason": EVIL,
            }
        ]
    )
    page = render_history(hist, verdicts, title=f"history {EVIL}")
    assert "alert('x')" not in page.replace("&#x27;", "'") or EVIL not in page
    assert EVIL not in page
    assert "<script>alert" not in page
    assert page.count("change point</td>") == 1
    # the figure carries the data (ms) and the verdict marker
    figs = re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", page, flags=re.S)
    assert figs, "no plotly figure in the page"
    traces = json.loads(figs[0])
    assert any(t.get("marker", {}).get("symbol") == "x" for t in traces)
    line = next(t for t in traces if t.get("mode") == "lines+markers")
    ys = line["y"] if isinstance(line["y"], list) else None
    if ys is not None:
        assert ys[0] == vals[0] * 1e-6


def test_empty_history_renders_a_page() -> None:
    page = render_history(_history([])[:0], _verdicts([]))
    assert page.startswith("<!DOCTYPE html>")
