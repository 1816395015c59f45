"""Side inputs are loaded once, before any section runs: the older ``extras`` mapping is turned
into an :class:`AnalysisInputs` of parsed objects (sections never see a path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzers.inputs import AnalysisInputs
from collectors.errors import UsageError
from collectors.peaks import PeakTable, load_peaks
from reports.summary.inputs import inputs_from_extras


def test_paths_in_extras_are_read_into_objects(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(json.dumps({"host": "n0", "exit_code": 0}))
    peaks = tmp_path / "peaks.toml"
    peaks.write_text('[[gpu]]\nname = "Lab GPU"\nmatch = ["LabGPU"]\nfp32_tflops = 10.0\n')
    got = inputs_from_extras({"run_dir": str(tmp_path), "gpu_peaks": str(peaks), "nvml": None})
    assert got.run_meta == {"host": "n0", "exit_code": 0}
    assert isinstance(got.gpu_peaks, PeakTable) and "Lab GPU" in got.gpu_peaks.names()
    assert got.nvml == {} and got.ncu is None and got.ncu_peaks is None


def test_a_loaded_peak_table_is_kept_and_an_empty_mapping_is_no_input() -> None:
    table = load_peaks(None)
    assert inputs_from_extras({"gpu_peaks": table}).gpu_peaks is table
    assert inputs_from_extras({}) == AnalysisInputs()


def test_the_ncu_gpu_is_resolved_only_with_an_ncu_report() -> None:
    assert inputs_from_extras({"ncu_gpu": "NoSuchGPU"}).ncu_peaks is None
    with pytest.raises(UsageError, match="NoSuchGPU"):
        inputs_from_extras({"ncu": object(), "ncu_gpu": "NoSuchGPU"})
    got = inputs_from_extras({"ncu": object(), "ncu_gpu": "A100 SXM4 80GB"})
    assert got.ncu_peaks is not None and got.ncu_peaks.name == "A100 SXM4 80 GB"


def test_an_unknown_key_is_refused_rather_than_ignored() -> None:
    with pytest.raises(ValueError, match="callback"):
        inputs_from_extras({"callback": print})


def test_a_run_directory_without_a_readable_meta_json_gives_no_run_facts(tmp_path: Path) -> None:
    assert inputs_from_extras({"run_dir": str(tmp_path)}).run_meta is None
    (tmp_path / "meta.json").write_text("[1, 2]")
    assert inputs_from_extras({"run_dir": str(tmp_path)}).run_meta is None
