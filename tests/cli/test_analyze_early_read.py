"""``analyze`` with one Kineto file, or two large ones read here one after the other, starts the
(first) file's parallel read helper before the heavy imports
(collectors.kineto.parallel.start_early) and stops one the analysis did not join; with small
files among several, more than two files, a Dask scheduler or a worker count it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli import analyze
from collectors.kineto import parallel as kineto_parallel
from tests.support.env import SAMPLES


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    monkeypatch.setattr(kineto_parallel, "start_early", lambda p, *a: calls.append(Path(p)))
    return calls


def test_one_file_is_started_early_and_the_summary_is_unchanged(
    started: list[Path], tmp_path: Path
) -> None:
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    summary = analyze.run_analyze([str(trace)], no_cache=True)
    assert started == [trace]
    assert summary["ranks"][0]["rank"] == 0


def test_a_directory_of_one_trace_is_started_early(started: list[Path]) -> None:
    analyze.run_analyze([str(SAMPLES / "torch_cpu")], no_cache=True)
    assert [p.name for p in started] == ["rank-0.json.gz"]


@pytest.mark.parametrize(
    "extra", [{}, {"workers": 1}, {"scheduler": "sync"}], ids=["two-files", "workers", "scheduler"]
)
def test_several_files_or_an_explicit_pool_start_nothing(started: list[Path], extra) -> None:
    paths = [str(SAMPLES / "synthetic_2rank")] if not extra else [str(SAMPLES / "torch_cpu")]
    analyze.run_analyze(paths, no_cache=True, **extra)
    assert started == []


def test_two_large_files_start_the_first_one_early(
    started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kineto_parallel, "wanted", lambda p: True)  # as for two 47 MB ranks
    analyze.run_analyze([str(SAMPLES / "synthetic_2rank")], no_cache=True)
    assert [p.name for p in started] == ["rank-0.json.gz"]


def test_three_files_start_nothing_even_when_large(
    started: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    monkeypatch.setattr(kineto_parallel, "wanted", lambda p: True)
    for r in range(3):  # three ranks: a pool may be spawned, which would not join the helper
        shutil.copy(SAMPLES / "torch_cpu" / "rank-0.json.gz", tmp_path / f"rank-{r}.json.gz")
    analyze._start_read_early([str(tmp_path)])
    assert started == []


def test_an_unjoined_helper_is_stopped_after_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[int] = []
    monkeypatch.setattr(kineto_parallel, "cancel_early", lambda: stopped.append(1))
    analyze.run_analyze([str(SAMPLES / "torch_cpu")], no_cache=True)
    assert stopped == [1]
