"""The summary's ``run`` section (reports/summary/sections/series.py) and the report's counter view:
NVML series, decimation, throttle bands, step marks, energy per step, run metadata, ranges
(docs/report.md §2, §5)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.model import TraceMeta, make_trace
from collectors.nvml import CSV_HEADER, read_counters
from collectors.rundir import read_run_meta
from reports.html_series import counters
from reports.summary.sections.series import MAX_POINTS, decimate, run

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000


def write_counters(path: Path, rows: list[tuple[int, int, str, float]]) -> Path:
    """A counter file as the sampler writes it: (t_unix_ns, gpu, field, value) rows."""
    body = "".join(f"{t - T0},{t},{g},{f},{v}\n" for t, g, f, v in rows)
    path.write_bytes(gzip.compress((CSV_HEADER + body).encode()))
    return path


def trace(rank: int = 0, annotations: dict | None = None):
    return make_trace(
        TraceMeta(rank=rank, source_format="kineto", hostname="n0", world_size=2),
        annotations=annotations,
    )


@pytest.fixture
def node(tmp_path: Path) -> dict:
    rows = []
    masks = [0, 0x4, 0x4 | 0x40, 0, 0x1, 0x8]
    for i, m in enumerate(masks):
        rows.append((T0 + i * S, 0, "clock_event_reasons", float(m)))
        rows.append((T0 + i * S, 0, "power_instant_mw", 300_000.0 + i))
        rows.append((T0 + i * S, 1, "power_instant_mw", 200_000.0))
    for k, t in ((1, 0), (2, 2), (3, 4)):
        rows.append((T0 + t * S, -1, "step_begin", float(k)))
    for t, e0, e1 in ((0, 1000, 0), (2, 1500, 100), (4, 2300, 300)):
        rows.append((T0 + t * S + 10, 0, "energy_mj", float(e0)))
        rows.append((T0 + t * S + 10, 1, "energy_mj", float(e1)))
    rows.sort()
    df = read_counters(write_counters(tmp_path / "n0.csv.gz", rows))
    return run([trace()], AnalysisOptions(), AnalysisInputs(nvml={"n0": df}))


def test_counter_file_gives_series_marks_and_energy_per_step(node: dict) -> None:
    (h,) = node["nvml"]
    assert h["host"] == "n0" and h["t0_unix_ns"] == T0 and h["duration_ns"] == 5 * S
    assert h["devices"] == [0, 1]
    s0 = next(s for s in h["series"] if s["device"] == 0 and s["field"] == "power_instant_mw")
    assert s0["t_ns"] == [i * S for i in range(6)] and not s0["decimated"]
    assert s0["value"] == [300_000.0 + i for i in range(6)]
    assert {s["field"] for s in h["series"]} == {"power_instant_mw"}  # no cumulative counters
    assert h["step_marks"] == [
        {"step": 1, "t_ns": 0},
        {"step": 2, "t_ns": 2 * S},
        {"step": 3, "t_ns": 4 * S},
    ]
    # step 1: 500 + 100 mJ; step 2: 800 + 200 mJ -> lower median 600
    assert [(e["step"], e["device"], e["energy_mj"]) for e in h["energy_steps"]] == [
        (1, 0, 500.0),
        (2, 0, 800.0),
        (1, 1, 100.0),
        (2, 1, 200.0),
    ]
    assert h["energy_per_step_mj"] == 600.0


def test_throttle_bands_follow_the_slowdown_bits_only(node: dict) -> None:
    (h,) = node["nvml"]
    # masks at 0..5 s: 0, power cap, power cap + HW thermal, 0, idle (not throttling), HW slowdown
    assert h["throttle"] == [
        {
            "device": 0,
            "start_ns": 1 * S,
            "end_ns": 3 * S,
            "reasons": ["sw_power_cap", "hw_thermal"],
        },
        {"device": 0, "start_ns": 5 * S, "end_ns": 5 * S, "reasons": ["hw_slowdown"]},
    ]
    assert h["throttle_bands_dropped"] == 0


def test_decimation_keeps_min_and_max_of_each_bucket_of_ten() -> None:
    n = 5000
    ts = np.arange(n, dtype=np.int64) * 1000
    v = np.sin(np.arange(n) / 37.0) + (np.arange(n) % 13) / 100.0
    kept = decimate(ts, v)
    assert len(kept) <= MAX_POINTS
    blocks = v.reshape(500, 10)  # 5000 samples / 500 buckets: exactly ten each
    expect = []
    for j, b in enumerate(blocks):
        expect += sorted({10 * j + int(np.argmin(b)), 10 * j + int(np.argmax(b))})
    assert kept.tolist() == expect
    assert int(np.argmax(v)) in kept and int(np.argmin(v)) in kept
    assert decimate(ts[:999], v[:999]).tolist() == list(range(999))


def test_long_series_arrive_decimated_in_the_summary(tmp_path: Path) -> None:
    rows = [(T0 + i * 100_000_000, 0, "sm_clock_mhz", float(1980 - (i % 50))) for i in range(3000)]
    df = read_counters(write_counters(tmp_path / "n1.csv.gz", rows))
    (s,) = run([trace()], AnalysisOptions(), AnalysisInputs(nvml={"n1": df}))["nvml"][0]["series"]
    assert s["samples"] == 3000 and s["decimated"] and len(s["t_ns"]) <= MAX_POINTS
    assert min(s["value"]) == 1931.0 and max(s["value"]) == 1980.0


def test_run_meta_comes_from_the_run_directory(tmp_path: Path) -> None:
    meta = {
        "command": ["python", "train.py"],
        "host": "n0",
        "hosts": ["n0"],
        "world_size": 2,
        "exit_code": 0,
        "started_unix_ns": 5,
        "ended_unix_ns": 9,
        "git": {"commit": "deadbeef", "dirty": False},
        "ranks": [{"rank": 0, "versions": {"torch": "2.13.0", "python": "3.11.7"}}],
    }
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    out = run([trace()], AnalysisOptions(), AnalysisInputs(run_meta=read_run_meta(tmp_path)))
    assert out["meta"] == {
        "command": ["python", "train.py"],
        "host": "n0",
        "hosts": ["n0"],
        "world_size": 2,
        "exit_code": 0,
        "started_unix_ns": 5,
        "ended_unix_ns": 9,
        "git_commit": "deadbeef",
        "versions": {"torch": "2.13.0", "python": "3.11.7"},
    }
    assert run([trace()], AnalysisOptions(), AnalysisInputs())["meta"] is None
    (tmp_path / "meta.json").write_text("{not json")
    assert read_run_meta(tmp_path) is None
    assert run([trace()], AnalysisOptions(), AnalysisInputs(run_meta=None))["meta"] is None


def test_ranges_group_nvtx_and_user_annotations_by_kind_and_name() -> None:
    ann = {
        "name": ["fwd", "fwd", "bwd", "ProfilerStep#1", "fwd"],
        "kind": ["nvtx", "nvtx", "user", "step", "user"],
        "start_ns": [0, 100, 0, 0, 0],
        "end_ns": [30, 150, 500, 1000, 5],
        "step": [-1, -1, -1, 1, -1],
    }
    (r,) = run([trace(annotations=ann)], AnalysisOptions(), AnalysisInputs())["ranks"]
    assert r["hostname"] == "n0" and r["source_format"] == "kineto" and r["world_size"] == 2
    assert r["ranges"] == [
        {"kind": "user", "name": "bwd", "count": 1, "total_ns": 500, "max_ns": 500},
        {"kind": "nvtx", "name": "fwd", "count": 2, "total_ns": 80, "max_ns": 50},
        {"kind": "user", "name": "fwd", "count": 1, "total_ns": 5, "max_ns": 5},
    ]


def test_report_places_nodes_on_one_time_axis() -> None:
    def host(name: str, t0: int) -> dict:
        return {
            "host": name,
            "t0_unix_ns": t0,
            "series": [
                {
                    "device": 0,
                    "field": "gpu_util_pct",
                    "samples": 2,
                    "decimated": False,
                    "t_ns": [0, S],
                    "value": [1.0, 2.0],
                }
            ],
            "step_marks": [{"step": 7, "t_ns": S // 2}],
            "throttle": [{"device": 0, "start_ns": 0, "end_ns": S, "reasons": ["sw_thermal"]}],
        }

    c = counters({"ranks": [], "run": {"nvml": [host("a", T0 + 2 * S), host("b", T0)]}})
    assert c["t0_unix_ns"] == T0
    a = next(s for s in c["series"] if s["host"] == "a")
    assert a["t_ns"] == [2 * S, 3 * S]
    assert c["step_marks"] == [{"t_ns": S // 2, "step": 7}, {"t_ns": 2 * S + S // 2, "step": 7}]
    assert sorted(b["start_ns"] for b in c["throttle"]) == [0, 2 * S]
    assert not c["decimated"]
    assert counters({"ranks": [], "run": {"nvml": []}}) is None
    assert math.isclose(c["series"][0]["value"][1], 2.0)


def test_report_decimates_again_when_all_series_exceed_the_point_budget() -> None:
    from reports.html_series import MAX_COUNTER_POINTS

    n = 1000
    series = [
        {
            "device": d,
            "field": f"f{k}",
            "samples": n,
            "decimated": False,
            "t_ns": list(range(0, n * 10, 10)),
            "value": [float(i % 97) for i in range(n)],
        }
        for d in range(8)
        for k in range(10)
    ]  # 80 series × 1000 points
    c = counters(
        {"ranks": [], "run": {"nvml": [{"host": "a", "t0_unix_ns": T0, "series": series}]}}
    )
    share = MAX_COUNTER_POINTS // 80  # 500 points each: 250 buckets of four samples
    for s in c["series"]:
        assert s["decimated"] and len(s["t_ns"]) <= share
        assert max(s["value"]) == 96.0 and min(s["value"]) == 0.0
        assert s["t_ns"] == sorted(s["t_ns"])
    assert sum(len(s["t_ns"]) for s in c["series"]) <= MAX_COUNTER_POINTS
