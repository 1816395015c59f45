"""`gpuscope occupancy`, `roofline`, `calibrate` and the summary sections, end to end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from cli.main import main
from collectors.model import DeviceInfo, TraceMeta, make_trace
from collectors.ncu import read_ncu_csv
from reports.summary.sections.efficiency import occupancy as occupancy_section
from reports.summary.sections.efficiency import roofline as roofline_section
from tests.support.env import require_service, shared_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_occupancy_command_prints_the_best_practices_example(capsys) -> None:
    rc, out, _ = run(capsys, "occupancy", "--arch", "sm_70", "--threads", "128", "--regs", "37")
    assert rc == 0
    assert "active blocks/SM  12" in out and "75.00 %" in out and "registers" in out
    assert "to raise occupancy:" in out


def test_occupancy_json_has_result_limits_and_what_if(capsys) -> None:
    rc, out, _ = run(
        capsys, "occupancy", "--arch", "sm_90", "--threads", "256", "--regs", "64", "--json"
    )
    d = json.loads(out)
    assert rc == 0
    assert (d["active_blocks_per_sm"], d["occupancy_pct"], d["limiters"]) == (
        4,
        50.0,
        ["registers"],
    )
    assert d["limits"]["shared_memory"] == 228 and d["limiter_mask"] == "0x02"
    s = d["what_if"]["suggestions"][0]
    assert (s["change"], s["to"], s["occupancy_pct"]) == ("registers_per_thread", 48, 62.5)
    curves = d["what_if"]["curves"]
    assert curves["threads_per_block"]["values"][0] == 32
    assert len(curves["registers_per_thread"]["values"]) == 255


def test_occupancy_reference_vector_with_shared_memory_via_cli(capsys) -> None:
    # vector: sm_80, 256 threads, 32 regs, 48 KiB dynamic -> 3 blocks, 37.50 %, shared memory
    rc, out, _ = run(
        capsys,
        *("occupancy", "--arch", "sm_80", "--threads", "256", "--regs", "32"),
        *("--dyn-smem", "49152", "--json"),
    )
    d = json.loads(out)
    assert rc == 0
    assert (d["active_blocks_per_sm"], d["occupancy_pct"], d["limiters"]) == (
        3,
        37.5,
        ["shared_memory"],
    )
    assert d["alloc_smem_per_block"] == 50176


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--arch", "sm_99", "--threads", "128"), "unknown architecture 'sm_99'"),
        (("--arch", "sm_90", "--threads", "1025"), "impossible block size 1025"),
        (("--arch", "sm_90", "--threads", "128", "--regs", "256"), "impossible register count"),
    ],
)
def test_impossible_occupancy_input_is_one_line_and_exit_2(capsys, args, words) -> None:
    rc, out, err = run(capsys, "occupancy", *args)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("gpuscope: error:") and words in err
    assert "Traceback" not in err


def test_roofline_json_equals_the_formula_on_raw_values(capsys) -> None:
    path = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv")
    rc, out, _ = run(capsys, "roofline", str(path), "--gpu", "A100-SXM4-40GB", "--json")
    assert rc == 0
    d = json.loads(out)
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    raw: dict[str, dict[str, float]] = {}
    for r in csv.DictReader(
        lines[next(i for i, ln in enumerate(lines) if ln.startswith('"ID"')) :]
    ):
        raw.setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    for k in d["kernels"]:
        m = raw[k["key"]]
        t = m["smsp__cycles_elapsed.avg"] / m["smsp__cycles_elapsed.avg.per_second"]
        assert k["bytes_per_s"]["dram"] == pytest.approx(m["dram__bytes.sum"] / t, rel=1e-12)
        assert k["bound"] in ("memory", "compute")
    assert d["gpu_peaks"] == "A100 SXM4 40 GB"


def test_roofline_text_lists_kernels_and_partial_notes(capsys) -> None:
    path = shared_path("ncu", "GPU-Roofline-Profiler__results_sample_run_ncu_transpose_naive.csv")
    rc, out, err = run(capsys, "roofline", str(path), "--gpu", "RTX 5070")
    assert rc == 0
    assert "transpose_naive_kernel" in out and "[u] unverified: dram" in out
    assert "FLOP counters" in err


def test_roofline_with_missing_metrics_is_exit_2(capsys, tmp_path: Path) -> None:
    p = tmp_path / "thin.csv"
    p.write_text(
        '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","k","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","22.3"\n',
        encoding="utf-8",
    )
    rc, out, err = run(capsys, "roofline", str(p))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert str(p) in err and "no roofline metrics" in err


@pytest.mark.parametrize("content", [b"", b"not,a,ncu\n1,2,3\n", b"\x00\x01binary"])
def test_roofline_on_non_ncu_file_is_exit_2(capsys, tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "x.csv"
    p.write_bytes(content)
    rc, _, err = run(capsys, "roofline", str(p))
    assert rc == 2 and "not an Nsight Compute CSV" in err


def test_roofline_needs_a_file_or_list(capsys) -> None:
    rc, _, err = run(capsys, "roofline")
    assert rc == 2 and "needs an Nsight Compute CSV" in err
    rc, _, err = run(capsys, "roofline", "x.csv", "--gpu", "NoSuchGPU")
    assert rc == 2


def test_list_gpus_keeps_unverified_marks(capsys) -> None:
    rc, out, _ = run(capsys, "roofline", "--list-gpus")
    assert rc == 0
    h100pcie = next(ln for ln in out.splitlines() if ln.startswith("H100 PCIe"))
    assert "2000 [u]" in h100pcie
    b200 = next(ln for ln in out.splitlines() if ln.startswith("B200"))
    assert "75 [u]" in b200 and "2250" in b200.split()
    rc, out, _ = run(capsys, "roofline", "--list-gpus", "--json")
    gpus = {g["name"]: g for g in json.loads(out)["gpus"]}
    assert gpus["H200 SXM 141 GB"]["unverified"] == ["l2"]


def test_calibrate_without_a_gpu_says_so_and_exits_2(capsys) -> None:
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a CUDA GPU is present: calibrate would measure it")
    except ImportError:
        pass
    rc, out, err = run(capsys, "calibrate")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "no CUDA GPU" in err or "needs torch" in err


@pytest.mark.torch
def test_calibration_arithmetic_on_the_cpu_device() -> None:
    try:
        import torch
    except ImportError:
        torch = None
    require_service("torch", torch is not None, "pip install torch==2.13.0 (CPU build)")
    from profiler.backends.calibrate import Calibration, measure_bandwidth, measure_matmul

    dev = torch.device("cpu")
    bw = measure_bandwidth(dev, size_bytes=4_000_000, warmup=1, repeats=3)
    fl = measure_matmul(dev, "float32", n=128, warmup=1, repeats=3)
    assert bw > 0 and fl > 0
    toml = Calibration("My GPU", 2.0e12, {"fp32": 5e13, "fp16_tensor": 2e14}).to_toml()
    import tomllib

    entry = tomllib.loads(toml)["gpu"][0]
    assert entry == {
        "name": "My GPU",
        "match": ["My GPU"],
        "mem_bw_gbs": 2000.0,
        "fp32_tflops": 50.0,
        "fp16_tensor_tflops": 200.0,
        "source": "gpuscope calibrate",
    }


# --- summary sections --------------------------------------------------------------------------


def test_sections_on_a_real_trace_with_an_ncu_report_are_json_ready() -> None:
    from collectors.load import load_traces

    (t,) = load_traces(
        [shared_path("kineto", "hta", "negative_queue_length_values_check", "rank0.json.gz")]
    )
    ncu = read_ncu_csv(shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv"))
    inputs = AnalysisInputs(ncu=ncu)
    occ = occupancy_section(t, AnalysisOptions(), inputs)
    roof = roofline_section(t, AnalysisOptions(), inputs)
    assert occ is not None and roof is not None
    json.dumps({"occupancy": occ, "roofline": roof}, allow_nan=False)
    assert occ["arch"] == "sm_80" and occ["kernels_with_config"] == 6080
    assert occ["by_kernel"][0]["time_ns"] >= occ["by_kernel"][-1]["time_ns"]
    assert roof["ops"]["gpu_peaks"] == "A100 SXM4 80 GB"
    assert 0 < roof["ops"]["modelled_gpu_time_share"] <= 1
    assert len(roof["ncu"]["kernels"]) == 3


def test_sections_are_absent_for_a_trace_without_kernels() -> None:
    t = make_trace(TraceMeta(rank=0, source_format="synthetic", devices=[DeviceInfo(id=0)]))
    assert occupancy_section(t, AnalysisOptions(), AnalysisInputs()) is None
    assert roofline_section(t, AnalysisOptions(), AnalysisInputs()) is None


def test_summary_registry_lists_the_two_sections() -> None:
    from reports.summary.registry import RANK_SECTIONS

    specs = dict(RANK_SECTIONS)
    assert specs["occupancy"] is occupancy_section
    assert specs["roofline"] is roofline_section
