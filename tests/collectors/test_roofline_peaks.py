"""GPU peak table: equal to reference/gpus.md cell by cell, [u] marks kept, user overrides."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from analyzers.gpu_peaks import find_peaks, peaks_named
from collectors.errors import InputError, UsageError
from collectors.peaks import load_peaks
from tests.support.env import SHARED

GPUS_MD = SHARED / "reference" / "gpus.md"

COLUMNS = (
    ("sm_count",),
    ("boost_clock_mhz",),
    ("fp64_tflops", "fp64_tensor_tflops"),
    ("fp32_tflops",),
    ("tf32_tensor_tflops",),
    ("fp16_tensor_tflops",),
    ("fp8_tensor_tflops",),
    ("memory",),
    ("mem_bw_gbs",),
    ("l2",),
    ("nvlink_gbs",),
)
"""Keys of each column of the gpus.md peak table after the GPU name."""


def _md_rows() -> list[list[str]]:
    if not GPUS_MD.exists():
        pytest.skip(f"reference not present: {GPUS_MD}")
    lines = GPUS_MD.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| GPU | SMs"))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


def _number(part: str) -> float | None:
    m = re.search(r"\d[\d,]*(?:\.\d+)?", part)
    return float(m.group(0).replace(",", "")) if m else None


def test_built_in_table_equals_gpus_md_cell_by_cell_with_unverified_marks() -> None:
    table = load_peaks()
    rows = _md_rows()
    assert len(rows) == 9
    for row in rows:
        gpu = next((g for g in table.gpus if g.name == row[0]), None)
        assert gpu is not None, f"{row[0]} missing from gpu_peaks.toml"
        assert gpu.origin == "built-in" and gpu.text["source"]
        for cell, keys in zip(row[1:], COLUMNS, strict=True):
            bare = re.sub(r"\([^)]*\)", "", cell)  # notes in parentheses do not mark the value
            unverified = "[u" in bare
            parts = bare.split("/") if len(keys) == 2 else [bare]
            for key, part in zip(keys, parts, strict=True):
                if key in ("memory", "l2"):
                    assert (key in gpu.text) or cell in ("–", "-"), (row[0], key)
                    present = key in gpu.text
                else:
                    value = _number(part)
                    assert gpu.values.get(key) == value, (row[0], key, cell)
                    present = value is not None
                if present:
                    assert gpu.is_unverified(key) == unverified, (row[0], key, cell)


def test_rtx5070_row_is_the_gpus_md_derivation_and_the_sample_theoretical_peaks() -> None:
    g = peaks_named(load_peaks(), "RTX 5070")
    assert g.values["fp32_tflops"] == pytest.approx(48 * 128 * 2 * 2.625e9 / 1e12)
    p = SHARED / "data" / "ncu" / "GPU-Roofline-Profiler__results_sample_run_peaks.csv"
    if p.exists():
        with p.open(newline="") as f:
            theo = next(r for r in csv.DictReader(f) if r["label"] == "theoretical")
        assert g.peak_flops("fp32") == pytest.approx(float(theo["peak_flops"]))
        assert g.mem_bw_bytes_per_s == pytest.approx(float(theo["peak_bandwidth"]))
    assert g.is_unverified("mem_bw_gbs")


@pytest.mark.parametrize(
    ("device", "entry"),
    [
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40 GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80 GB"),
        ("Tesla V100-SXM2-32GB", "V100 SXM2 16/32 GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80 GB"),
        ("NVIDIA H200", "H200 SXM 141 GB"),
        ("NVIDIA GeForce RTX 3090", None),
        ("A100-PG509-200", None),
        (None, None),
    ],
)
def test_traced_device_names_find_their_entry(device: str | None, entry: str | None) -> None:
    g = find_peaks(load_peaks(), device)
    assert (g.name if g else None) == entry


def test_unknown_gpu_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown GPU 'MI999X'"):
        peaks_named(load_peaks(), "MI999X")  # not MI300X: the table has AMD Instinct rows


def test_user_file_overrides_keys_clears_their_marks_and_adds_gpus(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(
        '[[gpu]]\nname = "H100 PCIe 80 GB"\nmem_bw_gbs = 2039.0\n\n'
        '[[gpu]]\nname = "MI300X"\nmatch = ["MI300X"]\nfp32_tflops = 163.4\n'
        'mem_bw_gbs = 5300\nunverified = ["fp32_tflops"]\n',
        encoding="utf-8",
    )
    t = load_peaks(f)
    h = peaks_named(t, "H100 PCIe 80 GB")
    assert h.values["mem_bw_gbs"] == 2039.0 and not h.is_unverified("mem_bw_gbs")
    assert h.values["fp32_tflops"] == 51.0  # untouched keys stay
    assert "overridden" in h.origin
    m = peaks_named(t, "AMD Instinct MI300X")
    assert m.peak_flops("fp32") == pytest.approx(163.4e12) and m.is_unverified("fp32_tflops")
    assert m.origin == str(f)
    assert len(t.gpus) == len(load_peaks().gpus) + 1


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[gpu]]\nname = "X"\nfp32 = 1\n', "unknown key"),
        ('[[gpu]]\nname = "X"\nfp32_tflops = -1\n', "positive number"),
        ("[[gpu]]\nfp32_tflops = 1\n", "no name"),
        ("gpu = 3\n", r"expected \[\[gpu\]\]"),
        ("[[gpu]\n", "not valid TOML"),
    ],
)
def test_bad_user_peak_file_is_an_input_error(tmp_path: Path, text: str, words: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=words) as ei:
        load_peaks(f)
    assert str(f) in str(ei.value)
