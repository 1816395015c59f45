"""``gpuscope analyze`` in a subprocess: bad input exits 2 with one line, JSON keys, help text."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from tests.support import kineto_json as kj
from tests.support.cli import gpuscope
from tests.support.env import shared_path

TRACE_FILTER = ("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")


def assert_one_line_error(proc: subprocess.CompletedProcess[str], path: Path, problem: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in lines[0]
    assert problem in lines[0].lower()


def small_trace(rank: int, name: str = "k") -> dict[str, object]:
    return kj.trace([kj.kernel(name, 1, 2, 1)], rank=rank)


def test_missing_file_exits_2_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "nothere.json"
    assert_one_line_error(gpuscope("analyze", p), p, "no such file")


def test_truncated_gzip_exits_2_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "cut.json.gz"
    p.write_bytes(shared_path(*TRACE_FILTER).read_bytes()[:3000])
    assert_one_line_error(gpuscope("analyze", p), p, "truncated")


def test_corrupt_gzip_exits_2_naming_it(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(kj.dumps(small_trace(0))))
    data[-8] ^= 1  # break the CRC
    p = tmp_path / "crc.json.gz"
    p.write_bytes(bytes(data))
    assert_one_line_error(gpuscope("analyze", p), p, "corrupt")


def test_invalid_json_exits_2_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [', encoding="utf-8")
    assert_one_line_error(gpuscope("analyze", p), p, "json")


def test_json_that_is_not_a_trace_exits_2_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "et.json"
    p.write_text('{"schema": "1.0.1", "nodes": []}', encoding="utf-8")
    assert_one_line_error(gpuscope("analyze", p), p, "not a kineto trace")


def test_empty_trace_exits_2_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "empty.json"
    p.write_text('{"traceEvents": []}', encoding="utf-8")
    assert_one_line_error(gpuscope("analyze", p), p, "no events")


def test_two_files_claiming_one_rank_exit_2_naming_both(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        kj.write(tmp_path / name, small_trace(3))
    proc = gpuscope("analyze", tmp_path)
    assert_one_line_error(proc, tmp_path / "b.json", "rank 3")
    assert str(tmp_path / "a.json") in proc.stderr


def test_unknown_hta_version_exits_2(tmp_path: Path) -> None:
    proc = gpuscope("analyze", shared_path(*TRACE_FILTER), "--hta-version", "0.4")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "--hta-version" in proc.stderr and "Traceback" not in proc.stderr


def test_unwritable_json_path_exits_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    out = blocker / "summary.json"  # a path under a regular file cannot be created
    proc = gpuscope("analyze", shared_path(*TRACE_FILTER), "--json", out)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


RANK_KEYS = ["rank", "device", "window", "kernel_summary", "temporal", "overlap", "steps"]
KERNEL_KEYS = [
    "name",
    "type",
    "count",
    "total_ns",
    "avg_ns",
    "median_ns",
    "min_ns",
    "max_ns",
    "stddev_ns",
    "time_pct",
]
TEMPORAL_KEYS = [
    "span_ns",
    "idle_ns",
    "compute_ns",
    "non_compute_ns",
    "idle_pct",
    "compute_pct",
    "non_compute_pct",
]
OVERLAP_KEYS = ["comm_ns", "compute_ns", "overlap_ns", "exposed_comm_ns", "overlap_pct"]
STEP_KEYS = [
    "step",
    "start_ns",
    "end_ns",
    "duration_ns",
    "gpu_start_ns",
    "gpu_end_ns",
    "gpu_duration_ns",
    "compute_ns",
    "exposed_comm_ns",
    "idle_ns",
    "work_events",
    "work_ns",
    "launch_lag_ns",
    "steps_behind",
]


def test_json_summary_has_exactly_the_schema_1_keys_and_integer_times(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    proc = gpuscope("analyze", shared_path(*TRACE_FILTER), "--json", out)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(out.read_text(encoding="utf-8"))
    assert s["schema_version"] == 1 and s["tool"]["name"] == "gpuscope"
    (r,) = s["ranks"]
    assert list(r)[: len(RANK_KEYS)] == RANK_KEYS
    assert list(r["window"]) == ["start_ns", "end_ns", "steps"]
    assert r["window"]["steps"] == [551]  # two steps (551, 552): the last one is dropped
    assert all(list(k) == KERNEL_KEYS for k in r["kernel_summary"])
    assert list(r["temporal"]) == TEMPORAL_KEYS
    assert list(r["overlap"]) == OVERLAP_KEYS
    assert all(list(st) == STEP_KEYS for st in r["steps"])
    ints = [r["window"]["start_ns"], r["window"]["end_ns"]]
    ints += [v for k, v in r["temporal"].items() if k.endswith("_ns")]
    ints += [v for k, v in r["overlap"].items() if k.endswith("_ns")]
    ints += [v for st in r["steps"] for k, v in st.items() if k.endswith("_ns")]
    ints += [v for k in r["kernel_summary"] for n, v in k.items() if n.endswith("_ns")]
    assert all(type(v) is int for v in ints)
    # the numbers are the analyzers' (HTA golden values of metrics.md §9.0, exact ns)
    assert r["temporal"]["span_ns"] == 600_058_000
    assert r["overlap"]["overlap_pct"] == pytest.approx(11.81, abs=0.005)
    totals = [k["total_ns"] for k in r["kernel_summary"]]
    assert totals == sorted(totals, reverse=True)
    assert "Wrote" in proc.stdout and "kernels by total time" in proc.stdout


def test_all_events_analyses_both_steps(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    proc = gpuscope("analyze", shared_path(*TRACE_FILTER), "--all-events", "--json", out)
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(out.read_text(encoding="utf-8"))["ranks"]
    assert r["window"]["steps"] == [551, 552]
    assert [s["step"] for s in r["steps"]] == [551, 552]
    assert r["overlap"]["overlap_pct"] == pytest.approx(14.95, abs=0.005)  # metrics.md §9.1


def test_rank_without_communication_writes_null_overlap_pct(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    amd = shared_path("kineto", "hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert gpuscope("analyze", amd, "--json", out).returncode == 0
    (r,) = json.loads(out.read_text(encoding="utf-8"))["ranks"]
    assert r["overlap"]["overlap_pct"] is None and r["overlap"]["exposed_comm_ns"] == 0


def test_kernel_names_are_printed_as_text_not_markup(tmp_path: Path) -> None:
    p = kj.write(tmp_path / "t.json", small_trace(0, name="[bold]k[/bold]<script>"))
    proc = gpuscope("analyze", p)
    assert proc.returncode == 0, proc.stderr
    assert "[bold]k[/bold]" in proc.stdout


def test_ncu_report_is_read_and_a_missing_one_exits_2(tmp_path: Path) -> None:
    trace = shared_path(*TRACE_FILTER)
    missing = tmp_path / "missing.csv"
    assert_one_line_error(gpuscope("analyze", trace, "--ncu", missing), missing, "no such file")
    csv = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv")
    out = tmp_path / "s.json"
    proc = gpuscope("analyze", trace, "--ncu", csv, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert str(csv) in out.read_text(encoding="utf-8")  # the report reached the sections


HELP_OPTIONS = [
    "--json",
    "--all-events",
    "--hta-version",
    "--ncu",
    "--html",
    "--gpu",
    "--peaks",
    "--scheduler",
    "--workers",
    "--no-cache",
]


def test_analyze_help_explains_every_option() -> None:
    proc = gpuscope("analyze", "--help")
    assert proc.returncode == 0
    text = proc.stdout
    for opt in HELP_OPTIONS:
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(opt))
        assert len(line.strip()) > len(opt) + 10, f"{opt} has no help text"
    assert "PATH" in text


def test_top_level_help_lists_analyze() -> None:
    proc = gpuscope("--help")
    assert proc.returncode == 0
    assert any(
        ln.strip().startswith("analyze") and len(ln.split()) > 2 for ln in proc.stdout.splitlines()
    )


def test_gpu_option_takes_ncu_ceilings_from_the_named_gpu(tmp_path: Path) -> None:
    trace = shared_path(*TRACE_FILTER)
    csv = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv")
    out = tmp_path / "s.json"
    proc = gpuscope("analyze", trace, "--ncu", csv, "--gpu", "A100 SXM4 80GB", "--json", out)
    assert proc.returncode == 0, proc.stderr
    ncu = json.loads(out.read_text(encoding="utf-8"))["ranks"][0]["roofline"]["ncu"]
    assert ncu["gpu_peaks"].startswith("A100 SXM4 80")
    # gpus.md: A100 SXM4 80 GB, FP32 19.5 TFLOP/s, HBM 2,039 GB/s
    ceilings = ncu["kernels"][0]["ceilings"]
    assert ceilings["flops_per_s"]["fp32"] == 19.5e12
    assert ceilings["bytes_per_s"]["dram"] == 2039e9


def test_bad_peaks_file_exits_2_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "peaks.toml"
    bad.write_text("this is = = not toml\n", encoding="utf-8")
    proc = gpuscope("analyze", shared_path(*TRACE_FILTER), "--peaks", bad)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert str(bad) in proc.stderr


def test_one_corrupt_file_among_ranks_is_named_and_the_rest_analysed(tmp_path: Path) -> None:
    for r in range(3):
        kj.write(tmp_path / f"rank-{r}.json", small_trace(r))
    bad = tmp_path / "rank-1.json"
    bad.write_text("{not json", encoding="utf-8")
    out = tmp_path / "s.json"
    proc = gpuscope("analyze", tmp_path, "--json", out, "--workers", "2")
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and str(bad) in proc.stderr
    assert [r["rank"] for r in json.loads(out.read_text(encoding="utf-8"))["ranks"]] == [0, 2]
