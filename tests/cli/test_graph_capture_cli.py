"""Capture traces on the command line (cli/captures.py): ``--graph-capture FILE``, TraceLens's
``capture_traces/`` layout beside a trace or inside a directory, a capture trace named beside
its execution trace, and one named alone; ``compare --by category``; exit codes."""

from __future__ import annotations

import shutil

import msgspec
import pytest

from cli.analyze_run import run_analyze
from cli.captures import MAX_SCREENED, split_graph_captures
from cli.report import run_report
from collectors.errors import InputError
from collectors.kineto import read_kineto
from collectors.load import expand_inputs
from tests.support.cli import gpuscope
from tests.support.serving_data import CAPTURED, SERVING, inference


def _paths(key: str):
    return tuple(inference(p) for p in CAPTURED[key])


def test_a_directory_reads_its_execution_trace_and_takes_the_listed_capture():
    ex, cap = _paths("vllm")
    kineto, _, _ = expand_inputs([ex.parent])
    assert kineto == [ex]  # neither the capture trace nor execution_details.json
    keep, caps, notes = split_graph_captures([str(ex.parent)])
    assert keep == [str(ex.parent)]
    ((rank, (c,)),) = caps.items()
    assert rank == 0 and (c.batch_size, c.mode) == (8192, "PIECEWISE")
    assert len(c.trace.gpu) == len(read_kineto(cap).gpu)
    assert notes and "beside graph_execution.json.gz" in notes[0]


def test_a_capture_named_beside_its_execution_trace_is_its_capture(tmp_path):
    ex, cap = _paths("sglang_decode")
    alone = tmp_path / "my_capture.json.gz"  # outside TraceLens's layout: found by its content
    shutil.copy(cap, alone)
    keep, caps, notes = split_graph_captures([str(ex), str(alone)])
    assert keep == [str(ex)]
    assert sorted(caps[0], key=lambda c: c.batch_size or 0)[1].batch_size == 32
    assert [c.batch_size for c in caps[0]].count(None) == 1  # named, and the listed one
    assert any("named beside the traces" in n for n in notes)


def test_a_capture_trace_given_alone_is_analysed_as_a_trace(tmp_path):
    _, cap = _paths("vllm")
    keep, caps, _ = split_graph_captures([str(cap)])
    assert keep == [str(cap)] and caps == {}
    summary = run_analyze([str(cap)], no_cache=True)
    s = summary["ranks"][0]["serving"]
    assert s["capture_trace"] is True and s["capture"]["graphs"] == 25
    assert any(n.startswith("capture trace: 25 graphs captured") for n in s["notes"])


def test_graph_capture_option_that_is_no_capture_trace_is_bad_input():
    with pytest.raises(InputError) as e:
        split_graph_captures(
            [str(inference(SERVING["sglang_decode"]))], [inference(SERVING["sglang_prefilldecode"])]
        )
    assert "records no stream capture" in e.value.message
    assert e.value.path == str(inference(SERVING["sglang_prefilldecode"]))


def test_analyze_attributes_the_replays_through_the_named_capture(tmp_path):
    ex, cap = _paths("vllm")
    trace = tmp_path / "exec.json.gz"  # nothing beside it
    shutil.copy(ex, trace)
    out = tmp_path / "s.json"
    r = gpuscope("analyze", trace, "--graph-capture", cap, "--json", out, "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "graph capture trace" in r.stderr and "--graph-capture" in r.stderr
    assert "model FLOPs utilisation" in " ".join(r.stdout.split())
    doc = msgspec.json.decode(out.read_bytes())
    assert doc["sources"] == [str(trace)]
    s = doc["ranks"][0]["serving"]
    assert s["graphs"]["method"] == "capture" and s["graphs"]["coverage"] == 1.0
    assert (s["mfu"]["peak"], s["mfu"]["dtype"]) == ("MI300X OAM 192 GB", "fp16_tensor")


def test_bad_graph_capture_exits_2_with_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "nope.json.gz"
    r = gpuscope("analyze", inference(SERVING["sglang_decode"]), "--graph-capture", bad)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]


def test_compare_by_category_finds_the_captures_beside_both_sides(tmp_path):
    out = tmp_path / "c.json"
    base, cur = inference(SERVING["sglang_decode"]), inference(SERVING["vllm"])
    r = gpuscope("compare", base, cur, "--by", "category", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "of other: GPU work in no category entry +0.000 ms" in r.stdout
    doc = msgspec.json.decode(out.read_bytes())
    cat = doc["views"]["category"]
    assert cat["available"] and cat["unattributed_ns"] == 0
    assert {e["key"] for e in cat["entries"]} >= {"GEMM", "MoE", "attention"}
    op = doc["views"]["op"]
    assert abs(op["unattributed_ns"]) < 0.05 * abs(doc["total_change_ns"])


def test_report_shows_the_serving_section_with_the_capture(tmp_path):
    ex, cap = _paths("sglang_decode")
    trace = tmp_path / "exec.json.gz"
    shutil.copy(ex, trace)
    out = run_report([str(trace)], tmp_path / "r.html", graph_capture=[cap])
    html = out.read_text()
    assert 'id="serving"' in html
    assert "attributed to capture ops: 100.0 % of the replayed GPU time" in html
    assert "% of MI300X OAM 192 GB fp16_tensor" in html


def test_many_named_files_are_not_screened_byte_by_byte(tmp_path, monkeypatch):
    import collectors.graph_capture as gc

    ex, cap = _paths("sglang_decode")
    files = [tmp_path / f"r{i}.json.gz" for i in range(MAX_SCREENED)]
    for f in files:
        shutil.copy(ex, f)
    shutil.copy(cap, files[-1])
    seen = []
    real = gc.records_stream_capture
    monkeypatch.setattr(gc, "records_stream_capture", lambda p: seen.append(p) or real(p))
    keep, _, _ = split_graph_captures([str(f) for f in files])
    assert keep == [str(f) for f in files[:-1]] and len(seen) == MAX_SCREENED
    more = tmp_path / "extra.json.gz"
    shutil.copy(ex, more)
    seen.clear()
    keep, _, _ = split_graph_captures([*map(str, files), str(more)])
    assert len(keep) == MAX_SCREENED + 1 and seen == []  # too many: named with --graph-capture
