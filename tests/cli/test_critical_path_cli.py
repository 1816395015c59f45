"""``gpuscope critical-path``: the console tables, the JSON section, exit codes."""

from __future__ import annotations

import msgspec
from conftest import SAMPLES, gpuscope

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from reports.critical_path_section import critical_path
from tests.support.critical_path_traces import training_run


def test_section_ranks_fixes_by_recovered_time_and_replays_exactly() -> None:
    s = critical_path(training_run(late_rank=1, delay=150_000), AnalysisOptions(), AnalysisInputs())
    assert s is not None and s["replay_exact"] is True
    rec = [w["recovered_ns_per_step"] for w in s["what_to_fix_first"]]
    assert rec == sorted(rec, reverse=True)
    late = next(w for w in s["what_to_fix_first"] if w["kind"] == "rank_on_time")
    assert late["rank"] == 1 and abs(late["recovered_ns_per_step"] - 150_000) <= 1_500
    msgspec.json.encode(s)  # JSON-ready


def test_section_absent_without_profiler_steps() -> None:
    t = load_traces([SAMPLES / "real" / "trace_compare_base"])
    assert critical_path([], AnalysisOptions(), AnalysisInputs()) is None
    assert critical_path(t, AnalysisOptions(), AnalysisInputs()) is not None  # has 2 ProfilerSteps


def test_cli_prints_fix_first_and_writes_json(tmp_path) -> None:
    out = tmp_path / "cp.json"
    r = gpuscope("critical-path", SAMPLES / "synthetic_2rank", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "What to fix first" in r.stdout
    assert "equals the measured step times" in r.stdout
    s = msgspec.json.decode(out.read_bytes())
    assert s["ranks"] == [0, 1] and s["matched_collectives"] == 5
    assert set(s["measured_step_ns"]) == {"10", "11", "12", "13", "14"}


def test_cli_missing_input_and_bad_busbw_exit_2(tmp_path) -> None:
    r = gpuscope("critical-path", tmp_path / "nope.json")
    assert r.returncode == 2 and "nope.json" in r.stderr
    r = gpuscope("critical-path", SAMPLES / "synthetic_2rank", "--busbw", "0")
    assert r.returncode == 2 and "--busbw" in r.stderr
