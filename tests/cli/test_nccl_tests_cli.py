"""``gpuscope nccl-tests`` in a subprocess: tables, JSON, and bad input (exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import gpuscope
from tests.support.env import shared_path

ALLREDUCE = ("nccl-tests", "superbench_a100-sxm4-40gb_1node_8gpu_allreduce.log")


def test_peak_table_and_json_of_a_real_log(tmp_path: Path) -> None:
    log = shared_path(*ALLREDUCE)
    out = tmp_path / "nt.json"
    proc = gpuscope("nccl-tests", log, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "every row matches size/time" in proc.stdout
    assert "235.26" in proc.stdout  # MANIFEST: peak busbw 235.26 GB/s at 8 GiB
    assert proc.stderr == ""
    doc = json.loads(out.read_text())
    (entry,) = doc["logs"]
    assert (entry["collective"], entry["nranks"], entry["checked_ok"]) == ("all_reduce", 8, True)
    assert len(entry["rows"]) == 68
    peak = max(doc["peak"], key=lambda p: p["busbw_gbps"])
    assert (peak["busbw_gbps"], peak["size_bytes"]) == (235.26, 8 << 30)
    assert entry["avg_busbw_footer"] == 68.4048


def test_a_log_from_another_tool_exits_2_with_one_line(tmp_path: Path) -> None:
    other = tmp_path / "ncu.csv"
    other.write_text('"ID","Kernel Name","Metric Name","Metric Value"\n"0","k","dram__bytes","1"\n')
    proc = gpuscope("nccl-tests", other)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1].startswith("gpuscope: error:") and str(other) in proc.stderr


def test_good_and_bad_logs_together_give_partial_results_and_exit_2(tmp_path: Path) -> None:
    log = shared_path(*ALLREDUCE)
    cut = tmp_path / "cut_allreduce.log"
    text = log.read_text()
    cut.write_text(text[: text.index("# Using devices")])  # header only, no rows
    out = tmp_path / "partial.json"
    proc = gpuscope("nccl-tests", log, cut, "--json", out)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "1 of 2 logs could not be read" in proc.stderr
    assert len(json.loads(out.read_text())["logs"]) == 1


def test_truncated_row_is_a_warning_not_an_error(tmp_path: Path) -> None:
    text = shared_path(*ALLREDUCE).read_text()
    cut = tmp_path / "allreduce.log"
    cut.write_text(text[: text.rindex("8589934592") + 40])
    proc = gpuscope("nccl-tests", cut)
    assert proc.returncode == 0
    assert "truncated?" in proc.stderr and "Traceback" not in proc.stderr


def test_collective_option_checks_an_unnamed_log(tmp_path: Path) -> None:
    src = shared_path("nccl-tests", "superbench_a100-sxm4-40gb_1node_8gpu_allgather.log")
    anon = tmp_path / "run1.log"
    anon.write_text(src.read_text())
    proc = gpuscope("nccl-tests", anon, "--collective", "all_gather")
    assert proc.returncode == 0 and "all_gather (option)" in proc.stdout
    bad = gpuscope("nccl-tests", anon, "--collective", "allmagic")
    assert bad.returncode == 2 and "unknown collective" in bad.stderr
