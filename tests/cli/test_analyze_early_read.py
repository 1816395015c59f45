"""``analyze`` with one Kineto file, or two large ones read here one after the other, begins the
(first) file's read before the heavy imports (collectors.kineto.early.start: cli.launch before
typer, run_analyze otherwise) and stops a read the analysis did not take; with small files among
several, more than two files, a Dask scheduler or a worker count it does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli import analyze_run, early_read, launch
from collectors.kineto import early
from collectors.kineto import parallel as kineto_parallel
from tests.support.env import SAMPLES


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files whose read is begun before the imports (the engine's reads of the next file,
    begun beside the analysis of the one before, are left out: :func:`beside`)."""
    calls: list[Path] = []
    monkeypatch.setattr(
        early, "start", lambda p, *a, beside_work=False: beside_work or calls.append(Path(p))
    )
    return calls


@pytest.fixture
def beside(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files whose read the engine begins beside the analysis of the file before."""
    calls: list[Path] = []
    monkeypatch.setattr(
        early, "start", lambda p, *a, beside_work=False: beside_work and calls.append(Path(p))
    )
    return calls


def test_one_file_is_started_early_and_the_summary_is_unchanged(started: list[Path]) -> None:
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    summary = analyze_run.run_analyze([str(trace)], no_cache=True)
    assert started == [trace]
    assert summary["ranks"][0]["rank"] == 0


def test_a_directory_of_one_trace_is_started_early(started: list[Path]) -> None:
    analyze_run.run_analyze([str(SAMPLES / "torch_cpu")], no_cache=True)
    assert [p.name for p in started] == ["rank-0.json.gz"]


@pytest.mark.parametrize(
    "extra", [{}, {"workers": 1}, {"scheduler": "sync"}], ids=["two-files", "workers", "scheduler"]
)
def test_several_files_or_an_explicit_pool_start_nothing(
    started: list[Path], extra: dict[str, Any]
) -> None:
    paths = [str(SAMPLES / "synthetic_2rank")] if not extra else [str(SAMPLES / "torch_cpu")]
    analyze_run.run_analyze(paths, no_cache=True, **extra)
    assert started == []


def test_two_large_files_start_the_first_one_early(
    started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)  # as for two 47 MB ranks
    analyze_run.run_analyze([str(SAMPLES / "synthetic_2rank")], no_cache=True)
    assert [p.name for p in started] == ["rank-0.json.gz"]


def test_three_files_start_nothing_even_when_large(
    started: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    for r in range(3):  # three ranks: a pool may be spawned, which would not take the read
        shutil.copy(SAMPLES / "torch_cpu" / "rank-0.json.gz", tmp_path / f"rank-{r}.json.gz")
    early_read.start_read_early([str(tmp_path)])
    assert started == []


def test_an_untaken_read_is_stopped_after_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[int] = []
    monkeypatch.setattr(early, "cancel", lambda path=None: stopped.append(1))
    analyze_run.run_analyze([str(SAMPLES / "torch_cpu")], no_cache=True)
    assert stopped == [1]


@pytest.mark.parametrize(
    ("args", "paths"),
    [
        (["a.json", "--json", "out.json", "b"], ["a.json", "b"]),
        (["--json=out.json", "--no-cache", "a"], ["a"]),
        (["--graph-capture", "c.json", "--force", "a", "--all-events"], ["a"]),
        (["--hta-version", "0.5", "--", "--odd-name.json"], ["--odd-name.json"]),
        (["a", "--workers", "2"], None),
        (["--scheduler=tcp://h:1", "a"], None),
        (["--help"], None),
        ([], []),
    ],
)
def test_the_inputs_are_found_before_typer_parses(args: list[str], paths: Any) -> None:
    assert early_read.analyze_inputs(args) == paths


def test_the_options_that_take_a_value_are_the_commands_own() -> None:
    import typer

    from cli.main import build_app

    command = typer.main.get_group(build_app(lazy=False)).commands["analyze"]
    options = [p for p in command.params if p.param_type_name == "option"]
    valued = {name for p in options if not getattr(p, "is_flag", False) for name in p.opts}
    assert valued == early_read.VALUE_OPTIONS


def test_the_console_script_begins_the_read_then_runs_the_command(
    started: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import cli.main

    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    ran: list[list[str]] = []
    analysed: list[dict[str, Any]] = []
    monkeypatch.setattr(cli.main, "main", lambda args: ran.append(list(args)) or 0)
    monkeypatch.setattr(cli.main, "typer_main", lambda args: ran.append(list(args)) or 0)
    monkeypatch.setattr(analyze_run, "analyze_command", lambda **k: analysed.append(k))
    monkeypatch.setenv("GPUSCOPE_MEMORY_SETTINGS", "0")
    args = ["analyze", str(trace), "--json", "x.json"]
    assert launch.main(args) == 0  # run without typer (cli.analyze_args)
    assert started == [trace] and ran == [] and analysed[0]["paths"] == [str(trace)]
    assert launch.main([*args, "--html", "-r.html"]) == 0  # left to typer (cli.main)
    assert started == [trace, trace] and ran == [[*args, "--html", "-r.html"]]
    assert launch.main(["report", str(trace)]) == 0
    assert started == [trace, trace] and len(ran) == 2  # another command: nothing begun


def test_each_next_file_is_begun_beside_the_analysis_of_the_one_before(
    beside: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ranks analysed here one after the other: the read of each rank but the first is begun
    as the rank before it is analysed (the first one's by the launcher); with every result
    cached, none is."""
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    monkeypatch.setattr("reports.summary.engine.here_on_two_cpus", lambda *a: True)
    monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path))
    analyze_run.run_analyze([str(SAMPLES / "synthetic_2rank")])
    assert [p.name for p in beside] == ["rank-1.json.gz"]
    analyze_run.run_analyze([str(SAMPLES / "synthetic_2rank")])  # every rank's results cached
    assert [p.name for p in beside] == ["rank-1.json.gz"]
