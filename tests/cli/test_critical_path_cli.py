"""``gpuscope critical-path``: the console tables, the JSON section, exit codes."""

from __future__ import annotations

import json

import msgspec

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from reports.critical_path_section import critical_path, critical_path_of
from tests.support.cli import gpuscope
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES


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
    assert set(s["measured_ns_by_step"]) == {"10", "11", "12", "13", "14"}


def test_cli_missing_input_and_bad_busbw_exit_2(tmp_path) -> None:
    r = gpuscope("critical-path", tmp_path / "nope.json")
    assert r.returncode == 2 and "nope.json" in r.stderr
    r = gpuscope("critical-path", SAMPLES / "synthetic_2rank", "--busbw", "0")
    assert r.returncode == 2 and "--busbw" in r.stderr


def test_analyze_json_of_eight_ranks_opens_with_the_critical_path_across_ranks(tmp_path) -> None:
    """Through ``gpuscope analyze`` (the many-rank engine: one graph-part table per rank, the
    path and the what-ifs computed in the caller): the section comes first in the JSON and the
    console, equals the in-process section, and its measured step times are the generator's
    ProfilerStep durations (ground_truth.jsonl; all GPU work of a step lies inside it)."""
    out = tmp_path / "s.json"
    r = gpuscope("analyze", SAMPLES / "synthetic_8rank", "--json", out, "--no-cache")
    assert r.returncode == 0, r.stderr
    assert r.stdout.lstrip().startswith("What to fix first")
    assert "[a] " in r.stdout  # each what-if's assumptions, under the table
    assert r.stdout.index("Critical path by cause") < r.stdout.index("GPU time per rank")
    doc = json.loads(out.read_text())
    assert list(doc)[:4] == ["schema_version", "tool", "sources", "critical_path"]
    cp = doc["critical_path"]
    assert cp == critical_path_of(load_traces([SAMPLES / "synthetic_8rank"]))
    truth: dict[int, dict[str, int]] = {}
    for line in (SAMPLES / "synthetic_8rank" / "ground_truth.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for s in rec["windows"]["all_events"]["steps"]:
            truth.setdefault(s["step"], {})[str(rec["rank"])] = s["duration_ns"]
    assert cp["ranks"] == list(range(8)) and cp["matched_collectives"] == 3
    assert cp["measured_ns_by_step"] == {str(k): max(v.values()) for k, v in truth.items()}
    assert cp["replay_exact"] is True
    for step in cp["steps"]:
        assert step["duration_ns_by_rank"] == truth[step["step"]]
        assert step["replayed_ns"] == step["duration_ns"] == max(truth[step["step"]].values())
        assert sum(c["ns"] for c in step["by_cause"]) == step["duration_ns"]
    rec = [w["recovered_ns_per_step"] for w in cp["what_to_fix_first"]]
    assert rec and rec == sorted(rec, reverse=True)
    assert all(w["assumptions"] for w in cp["what_to_fix_first"])
