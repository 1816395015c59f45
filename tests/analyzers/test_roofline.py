"""Roofline from Nsight Compute exports: formulas of reference/ncu.md §2 evaluated independently
on the raw metric strings of the real exports, ceilings, bound, ranking and partial results."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from analyzers.gpu_peaks import peaks_named
from analyzers.roofline import ncu_roofline
from collectors.errors import InputError
from collectors.ncu import read_ncu_csv
from collectors.peaks import load_peaks
from tests.support.env import SHARED_DATA, shared_path

LEARNING = sorted(p.name for p in (SHARED_DATA / "ncu").glob("LearningNote4Dev__*.csv"))
PROFILER = sorted(p.name for p in (SHARED_DATA / "ncu").glob("GPU-Roofline-Profiler__*_ncu_*.csv"))

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value"'
)


def _raw(path: Path) -> dict[int, dict[str, float]]:
    """Independent parse: launch id -> metric -> float of the raw string (commas removed)."""
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for r in csv.DictReader(lines[start:]):
        out[int(r["ID"])][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return out


def _write(tmp_path: Path, rows: list[tuple[int, str, str, str]], name: str = "k") -> Path:
    p = tmp_path / "fixture.csv"
    body = [HEADER] + [
        f'"{i}","1","app","host","{name}{i}","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0",'
        f'"Command line profiler metrics","{m}","{u}","{v}"'
        for i, m, u, v in rows
    ]
    p.write_text("\n".join(body) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("name", LEARNING)
def test_flops_and_dram_bandwidth_equal_the_ncu_formulas(name: str) -> None:
    path = shared_path("ncu", name)
    raw = _raw(path)
    roof = ncu_roofline(read_ncu_csv(path))
    assert len(roof.points) == len(raw) == 3
    for p in roof.points:
        m = raw[int(p.key)]
        s = "smsp__sass_thread_inst_executed_op_"
        t = m["smsp__cycles_elapsed.avg"] / m["smsp__cycles_elapsed.avg.per_second"]
        fp32 = m[s + "fadd_pred_on.sum"] + m[s + "fmul_pred_on.sum"] + 2 * m[s + "ffma_pred_on.sum"]
        fp64 = m[s + "dadd_pred_on.sum"] + m[s + "dmul_pred_on.sum"] + 2 * m[s + "dfma_pred_on.sum"]
        fp16 = (
            2 * m[s + "hadd_pred_on.sum"]
            + 2 * m[s + "hmul_pred_on.sum"]
            + 4 * m[s + "hfma_pred_on.sum"]
        )
        assert p.time_ns == pytest.approx(t * 1e9, rel=1e-12)
        assert p.flops_per_s["fp32"] == pytest.approx(fp32 / t, rel=1e-12)
        assert p.flops_per_s["fp64"] == pytest.approx(fp64 / t, rel=1e-12)
        assert p.flops_per_s["fp16"] == pytest.approx(fp16 / t, rel=1e-12)
        assert p.flops_per_s_total == pytest.approx((fp32 + fp64 + fp16) / t, rel=1e-12)
        assert p.bandwidth["dram"] == pytest.approx(m["dram__bytes.sum"] / t, rel=1e-12)
        assert p.bandwidth["l2"] == pytest.approx(m["lts__t_bytes.sum"] / t, rel=1e-12)
        assert p.bandwidth["l1"] == pytest.approx(m["l1tex__t_bytes.sum"] / t, rel=1e-12)
        total = fp32 + fp64 + fp16
        assert p.intensity["dram"] == pytest.approx(total / m["dram__bytes.sum"], rel=1e-12)
        assert p.tensor_instructions == m["smsp__inst_executed_pipe_tensor.sum"]
        assert "tensor" not in p.flop  # instruction counts are not FLOP (ncu.md §2.1)


@pytest.mark.parametrize("name", PROFILER)
def test_bandwidth_only_exports_give_partial_points(name: str) -> None:
    path = shared_path("ncu", name)
    raw = _raw(path)[0]
    roof = ncu_roofline(read_ncu_csv(path))
    (p,) = roof.points
    t = raw["gpu__time_duration.sum"] * 1e-9
    dram = raw["dram__bytes_op_read.sum"] + raw["dram__bytes_op_write.sum"]
    assert p.bandwidth["dram"] == pytest.approx(dram / t, rel=1e-12)
    assert p.flops_per_s_total is None and p.bound is None
    assert any("FLOP counters" in m for m in roof.missing)
    achieved = raw["sm__warps_active.avg.pct_of_peak_sustained_active"]
    assert p.achieved_occupancy_pct == achieved


def test_saxpy_dram_bandwidth_against_the_rtx5070_table_peak() -> None:
    path = shared_path("ncu", "GPU-Roofline-Profiler__results_sample_run_ncu_saxpy.csv")
    raw = _raw(path)[0]
    p = ncu_roofline(read_ncu_csv(path), peaks_named(load_peaks(), "RTX 5070")).points[0]
    bw = (raw["dram__bytes_op_read.sum"] + raw["dram__bytes_op_write.sum"]) / (
        raw["gpu__time_duration.sum"] * 1e-9
    )
    assert p.pct_of_peak_bandwidth == pytest.approx(100 * bw / 672.048e9, rel=1e-12)
    # a streaming kernel near the expected 85-92 % of theoretical bandwidth (gpus.md)
    assert 80 < p.pct_of_peak_bandwidth < 95


def test_bound_and_percent_of_attainable_with_table_ceilings() -> None:
    path = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv")
    raw = _raw(path)
    a100 = peaks_named(load_peaks(), "A100-SXM4-40GB")
    roof = ncu_roofline(read_ncu_csv(path), a100)
    peak_fp32, peak_bw = 19.5e12, 1555e9
    ridge = peak_fp32 / peak_bw
    for p in roof.points:
        m = raw[int(p.key)]
        s = "smsp__sass_thread_inst_executed_op_"
        t = m["smsp__cycles_elapsed.avg"] / m["smsp__cycles_elapsed.avg.per_second"]
        flop = sum(
            w * m[s + op + "_pred_on.sum"]
            for op, w in (
                ("fadd", 1),
                ("fmul", 1),
                ("ffma", 2),
                ("dadd", 1),
                ("dmul", 1),
                ("dfma", 2),
                ("hadd", 2),
                ("hmul", 2),
                ("hfma", 4),
            )
        )
        ai = flop / m["dram__bytes.sum"]
        attainable = min(peak_fp32, ai * peak_bw)
        assert p.dominant_precision == "fp32"
        assert p.ridge == pytest.approx(ridge)
        assert p.bound == ("memory" if ai < ridge else "compute")
        assert p.pct_of_attainable == pytest.approx(100 * flop / t / attainable, rel=1e-12)
        assert p.headroom_ns == pytest.approx(t * 1e9 * (1 - flop / t / attainable), rel=1e-9)
    # ranked by headroom: the naive GEMM (73 % of the time, ~10 % of its roof) comes first
    assert roof.points[0].name.startswith("void gemm_v0")
    heads = [p.headroom_ns for p in roof.points]
    assert heads == sorted(heads, reverse=True)
    assert sum(p.time_share for p in roof.points) == pytest.approx(1.0)


def test_ceilings_from_the_same_file_take_precedence(tmp_path: Path) -> None:
    s = "sm__sass_thread_inst_executed_op_"
    path = _write(
        tmp_path,
        [
            (0, "gpu__time_duration.sum", "ns", "1,000"),
            (0, s + "fadd_pred_on.sum", "inst", "0"),
            (0, s + "fmul_pred_on.sum", "inst", "0"),
            (0, s + "ffma_pred_on.sum", "inst", "500"),
            (0, s + "ffma_pred_on.sum.peak_sustained", "inst/cycle", "64"),
            (0, "sm__cycles_elapsed.avg.per_second", "cycle/second", "2,000,000,000"),
            (0, "dram__bytes.sum", "byte", "4,000"),
            (0, "dram__bytes.sum.peak_sustained", "byte/cycle", "10"),
            (0, "dram__cycles_elapsed.avg.per_second", "cycle/second", "1,000,000,000"),
        ],
    )
    p = ncu_roofline(read_ncu_csv(path), peaks_named(load_peaks(), "H100 SXM5 80 GB")).points[0]
    # hand: FLOP = 2*500 = 1000 in 1 us = 1e9 FLOP/s; peak fp32 = 64*2*2e9 = 2.56e11;
    # peak DRAM = 10*1e9 = 1e10 B/s; AI = 1000/4000 = 0.25 < ridge 25.6 -> memory bound,
    # attainable = 0.25*1e10 = 2.5e9 -> 40 %
    assert p.flops_per_s_total == pytest.approx(1e9)
    assert p.ceilings.flops["fp32"] == pytest.approx(2.56e11)
    assert p.ceilings.bandwidth["dram"] == pytest.approx(1e10)
    assert p.ceilings.source["fp32"] == "ncu file"
    assert p.ceilings.source["fp64"].startswith("table: H100")
    assert p.bound == "memory"
    assert p.pct_of_attainable == pytest.approx(40.0)


def test_tensor_flops_count_the_most_specific_types_only(tmp_path: Path) -> None:
    t = "sm__ops_path_tensor_src_"
    path = _write(
        tmp_path,
        [
            (0, "gpu__time_duration.sum", "ns", "2,000"),
            (0, t + "fp16.sum", "", "3,000"),  # aggregate of the two below
            (0, t + "fp16_dst_fp32.sum", "", "2,000"),
            (0, t + "fp16_dst_fp16.sum", "", "1,000"),
            (0, "dram__bytes.sum", "byte", "100"),
        ],
    )
    p = ncu_roofline(read_ncu_csv(path)).points[0]
    assert p.flop["tensor"] == 3000.0
    assert p.flops_per_s["tensor"] == pytest.approx(3000 / 2e-6)
    assert p.tensor_precision == "fp16_tensor"


def test_export_without_roofline_metrics_is_an_input_error_naming_what_is_needed(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, [(0, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "22.30")])
    with pytest.raises(InputError) as ei:
        ncu_roofline(read_ncu_csv(path))
    msg = str(ei.value)
    assert str(path) in msg and "gpu__time_duration.sum" in msg and "dram__bytes.sum" in msg


def test_incomplete_precision_counters_are_not_guessed(tmp_path: Path) -> None:
    s = "smsp__sass_thread_inst_executed_op_"
    path = _write(
        tmp_path,
        [
            (0, "gpu__time_duration.sum", "ns", "1,000"),
            (0, s + "ffma_pred_on.sum", "inst", "500"),  # fadd, fmul absent
            (0, "dram__bytes.sum", "byte", "4,000"),
        ],
    )
    p = ncu_roofline(read_ncu_csv(path)).points[0]
    assert "fp32" not in p.flop
    assert any(m.startswith("fp32: not all") for m in p.missing)
    assert p.bandwidth["dram"] == pytest.approx(4e9)


def test_points_are_json_ready() -> None:
    import json

    path = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_sgemm.csv")
    d = ncu_roofline(read_ncu_csv(path), peaks_named(load_peaks(), "A100 SXM4 40 GB")).to_dict()
    text = json.dumps(d, allow_nan=False)
    assert '"bound"' in text and len(d["kernels"]) == 3
