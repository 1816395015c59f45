"""A task spills a rank's columns to the Arrow cache when its analysis would not fit, says so in
one note, and gives the summary it gives in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.cache import spill as spill_mod
from collectors.kineto import read_kineto
from collectors.model import Trace
from reports.summary import planning
from reports.summary.engine import analyze_paths
from reports.summary.planning import Unit
from reports.summary.tasks import spill

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"
RANK0 = SAMPLES / "synthetic_2rank" / "rank-0.json.gz"


def test_short_memory_spills_and_notes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 1000)
    traces = [read_kineto(RANK0)]
    before = traces[0]
    notes: list[str] = []
    spill(traces, Unit("kineto", (RANK0,)), str(tmp_path), notes)
    assert traces[0] is not before
    assert not traces[0].host["start_ns"].to_numpy().flags.writeable
    numeric = sum(
        int(df[c].memory_usage(index=False))
        for df in (before.gpu, before.host, before.annotations, before.counters)
        for c in df.columns
        if df[c].dtype.kind in "iuf" and len(df)
    )
    assert notes == [
        f"{RANK0}: rank 0: {numeric / 2**20:.1f} MiB of columns memory-mapped from "
        f"{tmp_path / 'spill'} ({before.nbytes / 2**20:.1f} MiB model, 0.0 MiB of memory "
        "available)"
    ]


def test_enough_memory_keeps_the_tables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 1 << 40)
    traces = [read_kineto(RANK0)]
    before = traces[0]
    notes: list[str] = []
    spill(traces, Unit("kineto", (RANK0,)), str(tmp_path), notes)
    assert traces[0] is before and notes == []
    assert not (tmp_path / "spill").exists()


def test_never_keeps_the_tables_whatever_the_memory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(spill_mod.SPILL_ENV, "never")
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 0)
    traces = [read_kineto(RANK0)]
    before = traces[0]
    spill(traces, Unit("kineto", (RANK0,)), str(tmp_path), [])
    assert traces[0] is before


def test_a_spill_that_cannot_be_written_is_noted_and_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(spill_mod.SPILL_ENV, "always")
    root = tmp_path / "a-file"
    root.write_text("")
    traces = [read_kineto(RANK0)]
    before = traces[0]
    notes: list[str] = []
    spill(traces, Unit("kineto", (RANK0,)), str(root), notes)
    assert traces[0] is before
    assert len(notes) == 1 and "could not be spilled" in notes[0]


def test_a_spill_directory_in_memory_is_noted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(spill_mod.SPILL_ENV, "always")
    monkeypatch.setattr(spill_mod, "file_system_type", lambda p: "tmpfs")
    traces = [read_kineto(RANK0)]
    notes: list[str] = []
    spill(traces, Unit("kineto", (RANK0,)), str(tmp_path), notes)
    assert len(notes) == 1 and "is held in memory" in notes[0]


def test_a_spilled_run_gives_the_in_memory_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [str(SAMPLES / "synthetic_2rank")]
    options, inputs = AnalysisOptions(), AnalysisInputs()
    monkeypatch.setenv(spill_mod.SPILL_ENV, "never")
    kept = analyze_paths(paths, options, inputs, use_cache=False)
    monkeypatch.setenv(spill_mod.SPILL_ENV, "auto")
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 0)
    spilled = analyze_paths(paths, options, inputs, use_cache=False)
    assert spilled.summary == kept.summary
    assert kept.cache_notes == []
    assert [n.split(": rank ")[1][:1] for n in spilled.cache_notes] == ["0", "1"]


def test_a_task_in_this_process_says_its_spill_before_the_sections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run killed for memory in its sections has already told the user it spilled."""
    from reports.summary import tasks

    events: list[str] = []
    sections = tasks.entry_and_digest

    def traced(trace: Trace, *args: object) -> object:
        events.append(f"sections of rank {trace.rank}")
        return sections(trace, *args)

    monkeypatch.setattr(tasks, "entry_and_digest", traced)
    monkeypatch.setenv(spill_mod.SPILL_ENV, "always")
    paths = [str(RANK0)]
    result = analyze_paths(paths, use_cache=False, say=lambda line: events.append(line))
    assert len(events) == 2
    assert "memory-mapped from" in events[0] and events[1] == "sections of rank 0"
    assert result.cache_notes == []  # said, not repeated


def test_a_bad_spill_setting_is_one_usage_error_before_any_input_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collectors.errors import UsageError
    from reports.summary import tasks

    monkeypatch.setenv(spill_mod.SPILL_ENV, "sometimes")
    monkeypatch.setattr(tasks, "read_unit", lambda *a: pytest.fail("an input was read"))
    with pytest.raises(UsageError, match=r"^GPUSCOPE_SPILL must be one of auto, always, never"):
        analyze_paths([str(SAMPLES / "synthetic_2rank")], use_cache=False)
