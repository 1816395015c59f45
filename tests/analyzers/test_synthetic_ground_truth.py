"""The analyses reproduce the synthetic samples' ground truth exactly (tests/support/synthetic/).

The generator knows every number by construction (its own arithmetic, no interval code); the
JSON sections of the summary must equal them to the nanosecond, for HTA's default window and
for ``--all-events``, on the committed samples and on freshly generated ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.kernel_summary import kernel_summary
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from collectors.model import Trace
from reports.summary.sections import core as core_sections
from tests.support.env import SAMPLES
from tests.support.synthetic import read_ground_truth, write_samples

WINDOWS = {"default": AnalysisOptions(), "all_events": AnalysisOptions(all_events=True)}


def _stats(trace: Trace, options: AnalysisOptions, kind: str) -> dict[str, dict[str, int]]:
    s = kernel_summary(trace, options, kinds=(kind,))
    return {
        str(r.name): {
            "count": int(r.count),
            "total_ns": int(r.total_ns),
            "min_ns": int(r.min_ns),
            "max_ns": int(r.max_ns),
        }
        for r in s.itertuples(index=False)
    }


def check_folder(folder: Path) -> int:
    """Assert every rank's ground truth; returns the number of (rank, window) pairs checked."""
    traces = {t.rank: t for t in load_traces([folder])}
    truth = read_ground_truth(folder)
    assert sorted(traces) == sorted(gt["rank"] for gt in truth)
    checked = 0
    for gt in truth:
        trace = traces[gt["rank"]]
        assert (
            core_sections.device(trace, AnalysisOptions(), AnalysisInputs())["id"] == gt["device"]
        )
        for wname, expected in gt["windows"].items():
            opts = WINDOWS[wname]
            got: dict[str, Any] = {
                "window": core_sections.window(trace, opts, AnalysisInputs()),
                "temporal": core_sections.temporal(trace, opts, AnalysisInputs()),
                "overlap": core_sections.overlap(trace, opts, AnalysisInputs()),
                "steps": core_sections.steps(trace, opts, AnalysisInputs()),
            }
            where = f"rank {gt['rank']} window {wname}"
            assert got["window"]["steps"] == expected["steps_in_window"], where
            for key in ("temporal", "overlap"):
                sub = {k: got[key][k] for k in expected[key]}
                assert sub == expected[key], f"{where} {key}"
            assert got["steps"] == expected["steps"], where
            assert _stats(trace, opts, "kernel") == expected["kernels"], where
            assert _stats(trace, opts, "memcpy") == expected["memcpy"], where
            checked += 1
    return checked


@pytest.mark.parametrize("sample", ["synthetic_2rank", "synthetic_8rank"])
def test_committed_samples_reproduce_their_ground_truth(sample: str) -> None:
    folder = SAMPLES / sample
    if not folder.exists():
        pytest.skip(f"{folder} not generated yet")
    assert check_folder(folder) == 2 * len(read_ground_truth(folder))


@pytest.mark.parametrize(("seed", "int_us"), [(3, False), (11, True), (42, False)])
def test_fresh_samples_reproduce_their_ground_truth(
    tmp_path: Path, seed: int, int_us: bool
) -> None:
    write_samples(tmp_path, ranks=3, steps=4, seed=seed, int_us=int_us)
    assert check_folder(tmp_path) == 6
