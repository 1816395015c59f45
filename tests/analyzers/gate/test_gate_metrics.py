"""Gate metrics read from JSON summaries, against hand-computed values and numpy references.

The summaries are built by ``tests/support/summaries.py`` (complete schema-1 summaries).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.gate.metrics import METRICS, extract_metrics, metric_of, series_key
from collectors.errors import InputError
from collectors.summary.reader import read_summary
from collectors.summary.schema import CollectiveRow
from tests.support.summaries import complete, kernel_row, make_summary


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
    # ms-long calls: the summary rounds avg/median/stddev to whole ns (docs/metrics.md §4),
    # which is negligible here against the tolerances below
    a, b = rng.normal(50_000, 900, 400) * 1000, rng.normal(51_000, 1_500, 250) * 1000
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


def test_busbw_is_read_only_from_the_ranks_collective_rows() -> None:
    # the writer puts collective rows in ranks[].collectives (analyzers/comm.py), never at the
    # top level and always with a size_bucket: other layouts are not guessed at
    s = make_summary([[100]])
    s["collectives"] = [{"collective": "all_gather", "size": 1 << 30, "busbw_gbps": 120.0}]
    row = {"collective": "all_gather", "size_bucket": ">=256MiB", "busbw_gbps": 120.0}
    s["ranks"][0]["collectives"] = [complete(row, CollectiveRow)]  # median_busbw_gbps: null
    m = extract_metrics(s)
    assert [k for k in m if metric_of(k) == "busbw_GBps"] == []


def test_busbw_rows_without_a_bandwidth_are_skipped() -> None:
    s = make_summary([[100], [100]])
    row = {"collective": "all_reduce", "size_bucket": ">=256MiB", "count": 3, "time_ns": 9}
    s["ranks"][0]["collectives"] = [complete({**row, "median_busbw_gbps": None}, CollectiveRow)]
    s["ranks"][1]["collectives"] = [complete({**row, "median_busbw_gbps": 150.5}, CollectiveRow)]
    assert extract_metrics(s)["busbw_GBps[all_reduce >=256MiB]"].value == 150.5


def test_energy_comes_only_from_the_run_sections_nodes(tmp_path: Path) -> None:
    # per-step energy in steps[] and an energy_per_step_mj figure in a rank are not keys the
    # writer writes: the reader drops them, and the gate does not look for them
    s = make_summary([[100, 100, 100], [100, 100, 100]])
    for r, vals in enumerate([[1000, 1100, 900], [500, 400, 600]]):
        for row, v in zip(s["ranks"][r]["steps"], vals, strict=True):
            row["energy_mj"] = v
            row["energy_j"] = v / 1000
        s["ranks"][r]["energy"] = {"energy_per_step_mj": 700.0}
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s))
    read = read_summary(p)
    assert "energy_mj" not in read["ranks"][0]["steps"][0] and "energy" not in read["ranks"][0]
    assert "energy_per_step_mj" not in extract_metrics(read)
    assert "energy_per_step_mj" not in extract_metrics(s)


def test_absent_sections_give_no_metric() -> None:
    m = extract_metrics(make_summary([]))  # no rank: every section absent
    assert m == {}


def test_a_rank_without_steps_kernels_or_comm_gives_only_the_exposed_comm_fallback() -> None:
    # the foundation sections are always there (the reader requires them); empty, they give
    # no series but the documented step-less fallback: the largest overlap.exposed_comm_ns
    m = extract_metrics(make_summary([[]]))
    assert list(m) == ["exposed_comm_ns"] and m["exposed_comm_ns"].value == 0.0


def test_summary_without_ranks_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"schema_version": 1}')
    with pytest.raises(InputError, match="ranks"):  # the reader refuses it before the gate
        read_summary(p)


def test_every_metric_is_documented_with_its_default_threshold() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "gating.md").read_text()
    for name, spec in METRICS.items():
        assert f"`{name}`" in doc, name
        assert spec.warn <= spec.fail
        assert math.isfinite(spec.floor)


def test_energy_from_the_run_sections_nvml_nodes_is_summed() -> None:
    nodes = [{"energy_per_step_mj": 700.0}, {"energy_per_step_mj": 800.5}, {}]
    s = make_summary([[100, 100]], run={"nvml": nodes})  # the third node has no figure (null)
    assert extract_metrics(s)["energy_per_step_mj"].value == 1500.5
