"""Gate metrics read from JSON summaries, against hand-computed values and numpy references.

``make_summary`` / ``sim_summary`` build schema-1 summaries by hand; the other gate and store
tests import them from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from analyzers.gate_metrics import METRICS, extract_metrics, metric_of, series_key
from collectors.errors import InputError


def make_summary(
    steps: Sequence[Sequence[int]],
    *,
    exposed: Sequence[Sequence[int]] | None = None,
    idle: Sequence[Sequence[int]] | None = None,
    idle_pct: Sequence[float] | None = None,
    overlap_pct: Sequence[float | None] | None = None,
    kernels: Sequence[Sequence[dict[str, Any]]] | None = None,
    device: str = "NVIDIA H100 80GB HBM3",
    version: str = "0.1.0",
    **top: Any,
) -> dict[str, Any]:
    """A schema-1 summary: ``steps[r][i]`` is rank r's duration of step i (ns)."""
    ranks = []
    for r, durs in enumerate(steps):
        rows = []
        t = 0
        for i, d in enumerate(durs):
            row = {"step": i, "start_ns": t, "end_ns": t + int(d), "duration_ns": int(d)}
            row["compute_ns"] = int(d) // 2
            row["exposed_comm_ns"] = int(exposed[r][i]) if exposed else 0
            row["idle_ns"] = int(idle[r][i]) if idle else 0
            rows.append(row)
            t += int(d)
        rank: dict[str, Any] = {"rank": r, "device": {"name": device}, "steps": rows}
        if idle_pct is not None:
            rank["temporal"] = {
                "span_ns": t,
                "idle_ns": 0,
                "compute_ns": 0,
                "non_compute_ns": 0,
                "idle_pct": idle_pct[r],
                "compute_pct": 0.0,
                "non_compute_pct": 0.0,
            }
        if overlap_pct is not None:
            rank["overlap"] = {
                "comm_ns": 1,
                "compute_ns": 1,
                "overlap_ns": 1,
                "exposed_comm_ns": 1,
                "overlap_pct": overlap_pct[r],
            }
        if kernels is not None:
            rank["kernel_summary"] = list(kernels[r])
        ranks.append(rank)
    return {
        "schema_version": 1,
        "tool": {"name": "gpuscope", "version": version},
        "ranks": ranks,
        **top,
    }


def sim_summary(
    rng: np.random.Generator,
    scale: float = 1.0,
    *,
    n: int = 30,
    noise: float = 0.02,
    base_ns: float = 100e6,
    offset: float = 0.0,
) -> dict[str, Any]:
    """One rank, *n* steps of ``base·scale·(1+offset)`` ns with *noise* relative normal noise."""
    mu = base_ns * scale * (1.0 + offset)
    d = np.rint(rng.normal(mu, mu * noise, n)).astype(np.int64)
    return make_summary([d.tolist()])


def kernel_row(name: str, durations: Sequence[float]) -> dict[str, Any]:
    """A kernel_summary row computed from raw per-call durations (as issue 2 defines it)."""
    d = np.asarray(durations, dtype=np.float64)
    return {
        "name": name,
        "type": "COMPUTATION",
        "count": int(d.size),
        "total_ns": int(d.sum()),
        "avg_ns": float(d.mean()),
        "median_ns": float(np.median(d)),
        "min_ns": int(d.min()),
        "max_ns": int(d.max()),
        "stddev_ns": float(d.std(ddof=1)),
        "time_pct": 0.0,
    }


def test_step_time_is_the_median_over_steps_of_the_slowest_rank() -> None:
    # step 0: max(100, 130) = 130; step 1: max(200, 150) = 200; step 2: max(90, 95) = 95
    m = extract_metrics(make_summary([[100, 200, 90], [130, 150, 95]]))
    st = m["step_time_ns"]
    assert st.samples == (130.0, 200.0, 95.0)
    assert st.value == 130.0
    assert st.spec.direction == "lower"


def test_warmup_steps_are_dropped_by_step_id() -> None:
    m = extract_metrics(make_summary([[1000, 10, 20, 30]]), warmup_steps=1)
    assert m["step_time_ns"].samples == (10.0, 20.0, 30.0)
    assert m["step_time_ns"].value == 20.0


def test_exposed_comm_and_idle_samples_take_the_worst_rank_per_step() -> None:
    s = make_summary(
        [[100, 100], [100, 200]],
        exposed=[[5, 7], [6, 1]],
        idle=[[10, 0], [0, 50]],
        idle_pct=[3.0, 12.5],
        overlap_pct=[80.0, 55.5],
    )
    m = extract_metrics(s)
    assert m["exposed_comm_ns"].samples == (6.0, 7.0)
    assert m["exposed_comm_ns"].value == 6.5
    assert m["overlap_pct"].value == 55.5  # the smaller overlap is the worse rank
    assert m["overlap_pct"].samples == ()
    idle = m["gpu_idle_pct"]
    assert idle.value == 12.5  # the summary's own figure, worst rank
    assert idle.samples == (0.0, 25.0)  # that rank's 100·idle/duration per step


def test_overlap_without_communication_gives_no_metric() -> None:
    m = extract_metrics(make_summary([[100, 100]], overlap_pct=[None]))
    assert "overlap_pct" not in m


def test_kernel_statistics_pool_ranks_like_the_concatenated_calls() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(50_000, 900, 400), rng.normal(51_000, 1_500, 250)
    s = make_summary(
        [[100], [100]],
        kernels=[[kernel_row("gemm", a), kernel_row("nccl", [5.0, 6.0])], [kernel_row("gemm", b)]],
    )
    m = extract_metrics(s)
    g = m[series_key("kernel_time_ns", "gemm")]
    allc = np.concatenate([a, b])
    # reference: numpy on the raw calls (totals are integers in the summary, hence rel=1e-6)
    assert g.stats is not None and g.stats.n == 650
    assert g.stats.mean == pytest.approx(allc.mean(), rel=1e-6)
    assert g.stats.std == pytest.approx(allc.std(ddof=1), rel=1e-4)
    assert g.value == pytest.approx(allc.sum() / 650, rel=1e-6)
    # ordered by summed total time
    kernels = [k for k in m if metric_of(k) == "kernel_time_ns"]
    assert kernels == ["kernel_time_ns[gemm]", "kernel_time_ns[nccl]"]


def test_busbw_keeps_large_buckets_and_the_worst_rank() -> None:
    # rows shaped like issue 4's per-rank collective summary (analyzers/comm.py)
    def row(coll: str, bucket: str, bw: float) -> dict[str, Any]:
        return {
            "collective": coll,
            "size_bucket": bucket,
            "count": 10,
            "bytes": 10 << 30,
            "time_ns": 1,
            "median_busbw_gbps": bw,
            "max_busbw_gbps": 999.0,
            "median_busbw_link_pct": 50.0,
        }

    s = make_summary([[100], [100]])
    s["ranks"][0]["collectives"] = [
        row("all_reduce", "all", 150.0),
        row("all_reduce", "16-256MiB", 90.0),
        row("all_reduce", ">=256MiB", 180.0),
    ]
    s["ranks"][1]["collectives"] = [row("all_reduce", ">=256MiB", 170.0)]
    m = extract_metrics(s)
    keys = [k for k in m if metric_of(k) == "busbw_GBps"]
    assert keys == ["busbw_GBps[all_reduce >=256MiB]"]
    assert m[keys[0]].value == 170.0  # the worse rank; "all" and small buckets are not gated
    assert m[keys[0]].spec.direction == "higher"


def test_busbw_rows_with_a_message_size_and_without_any_size() -> None:
    s = make_summary([[100]])
    s["collectives"] = [
        {"collective": "all_gather", "size": 1 << 30, "busbw_gbps": 120.0},
        {"collective": "all_gather", "size": 1 << 20, "busbw_gbps": 20.0},
        {"collective": "broadcast", "busbw_gbps": 99.0},  # size unknown: not gated
    ]
    m = extract_metrics(s)
    assert [k for k in m if metric_of(k) == "busbw_GBps"] == ["busbw_GBps[all_gather 1GiB]"]
    assert m["busbw_GBps[all_gather 1GiB]"].value == 120.0


def test_energy_per_step_sums_ranks_per_step() -> None:
    s = make_summary([[100, 100, 100], [100, 100, 100]])
    for r, vals in enumerate([[1000, 1100, 900], [500, 400, 600]]):
        for row, v in zip(s["ranks"][r]["steps"], vals, strict=True):
            row["energy_mj"] = v
    m = extract_metrics(s)["energy_per_step_mj"]
    assert m.samples == (1500.0, 1500.0, 1500.0)
    assert m.value == 1500.0


def test_energy_in_joules_and_as_a_section_figure() -> None:
    s = make_summary([[100, 100]])
    for row, j in zip(s["ranks"][0]["steps"], [1.5, 2.5], strict=True):
        row["energy_j"] = j
    assert extract_metrics(s)["energy_per_step_mj"].samples == (1500.0, 2500.0)
    s2 = make_summary([[100], [100]])
    s2["ranks"][0]["energy"] = {"energy_per_step_mj": 700.0}
    s2["ranks"][1]["energy"] = {"energy_per_step_mj": 800.0}
    assert extract_metrics(s2)["energy_per_step_mj"].value == 1500.0


def test_absent_sections_give_no_metric() -> None:
    m = extract_metrics({"schema_version": 1, "ranks": [{"rank": 0, "device": None}]})
    assert m == {}


def test_summary_without_ranks_is_an_input_error() -> None:
    with pytest.raises(InputError, match="ranks"):
        extract_metrics({"schema_version": 1}, source="x.json")


def test_every_metric_is_documented_with_its_default_threshold() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "gating.md").read_text()
    for name, spec in METRICS.items():
        assert f"`{name}`" in doc, name
        assert spec.warn <= spec.fail
        assert math.isfinite(spec.floor)


def test_energy_from_the_run_sections_nvml_nodes_is_summed() -> None:
    s = make_summary([[100, 100]])
    s["run"] = {"nvml": [{"energy_per_step_mj": 700.0}, {"energy_per_step_mj": 800.5}]}
    assert extract_metrics(s)["energy_per_step_mj"].value == 1500.5
