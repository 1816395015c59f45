"""The JSON summary is a public interface: every ``*_ns`` is an integer, nothing is NaN,
and the foundation keys of schema_version 1 are present, on every kind of input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from reports.summary import build_summary
from tests.support.env import SAMPLES, shared_path

CORE_RANK_KEYS = {"rank", "device", "window", "kernel_summary", "temporal", "overlap", "steps"}


def _walk(x: Any, path: str, problems: list[str]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            here = f"{path}.{k}"
            if k.endswith("_ns") and v is not None and not isinstance(v, int):
                problems.append(f"{here} = {v!r} is not an integer")
            _walk(v, here, problems)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _walk(v, f"{path}[{i}]", problems)
    elif isinstance(x, float) and not math.isfinite(x):
        problems.append(f"{path} = {x!r} is not finite")


def _check(summary: dict[str, Any]) -> None:
    problems: list[str] = []
    _walk(summary, "$", problems)
    assert not problems, "\n".join(problems[:20])
    json.dumps(summary, allow_nan=False)
    assert summary["schema_version"] == 1
    for r in summary["ranks"]:
        assert set(r) >= CORE_RANK_KEYS


INPUTS = [
    ("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz"),
    ("kineto", "hta", "negative_queue_length_values_check", "rank0.json.gz"),
    ("kineto", "hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
    ("kineto", "hta", "cpu_only", "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
    ("nsys", "nsys2024.6.2.25__Fuser__report2.sqlite"),
    ("nsys", "nsys2022.2.1.31__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"),
]


@pytest.mark.parametrize("parts", INPUTS, ids=[p[-1] for p in INPUTS])
def test_summary_of_real_trace_keeps_the_public_contract(parts: tuple[str, ...]) -> None:
    traces = load_traces([shared_path(*parts)])
    _check(build_summary(traces, AnalysisOptions()))


def test_summary_of_synthetic_multi_rank_sample_keeps_the_public_contract() -> None:
    traces = load_traces([SAMPLES / "synthetic_2rank"])
    for options in (AnalysisOptions(), AnalysisOptions(all_events=True)):
        summary = build_summary(traces, options)
        _check(summary)
        assert [r["rank"] for r in summary["ranks"]] == [0, 1]


def test_summary_with_ncu_report_keeps_integer_times(tmp_path: Path) -> None:
    from collectors.ncu import read_ncu_csv

    traces = load_traces([shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")])
    ncu = read_ncu_csv(shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv"))
    _check(build_summary(traces, AnalysisOptions(), AnalysisInputs(ncu=ncu)))
