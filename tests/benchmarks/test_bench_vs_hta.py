"""The whole-process comparison's bookkeeping (``benchmarks/bench_vs_hta.py``): timed runs
interleaved and unsampled, then ``--memory-runs`` sampled runs of each tool whose median is
the peak reported and each of which is printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.env import REPO
from tests.support.scripts import load_script

SCRIPT = REPO / "benchmarks" / "bench_vs_hta.py"


def _fake_runs(peaks: dict[str, list[int]]) -> tuple[list[tuple[str, bool]], Any]:
    calls: list[tuple[str, bool]] = []

    def run_measured(cmd, env, limit_bytes=None, timeout=None, sample=True):
        tool = "gpuscope" if "analyze" in cmd else "hta"
        calls.append((tool, sample))
        if tool == "gpuscope":
            out = Path(cmd[cmd.index("--json") + 1])
            doc = {"ranks": [{"temporal": {"idle_pct": 40.0, "compute_pct": 55.0}}]}
            out.write_text(json.dumps(doc))
        peak = peaks[tool].pop(0) if sample else 0
        line = json.dumps({"idle_pct": 40.0, "compute_pct": 55.0})
        return {"wall_s": 1.0, "peak_kib": peak, "rc": 0, "stdout": line, "stderr": ""}

    return calls, run_measured


def test_the_peak_is_the_median_of_the_sampled_runs_each_printed(
    monkeypatch, tmp_path, capsys
) -> None:
    bench = load_script(SCRIPT)
    calls, fake = _fake_runs(
        {"gpuscope": [700 << 10, 640 << 10, 650 << 10], "hta": [1820 << 10, 1800 << 10, 1790 << 10]}
    )
    monkeypatch.setattr(bench, "run_measured", fake)
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    runs = bench.whole_process(trace, Path("python"), 2, {}, memory_runs=3)
    assert calls[:4] == [("gpuscope", False), ("hta", False)] * 2  # timed: interleaved, unsampled
    assert calls[4:] == [("gpuscope", True), ("hta", True)] * 3
    assert [r["peak_kib"] for r in runs["gpuscope"]] == [650 << 10] * 2
    assert [r["peak_kib"] for r in runs["hta"]] == [1800 << 10] * 2
    bench.print_whole([("x", trace, runs)])
    printed = capsys.readouterr().out
    assert (
        "x: peak MiB of each sampled run, gpuscope 700, 640, 650; HTA 1820, 1800, 1790" in printed
    )
    row = next(line for line in printed.splitlines() if line.startswith("x "))
    assert row.split()[5:8] == ["650", "1800", "0.36x"]  # gpuscope MiB, HTA MiB, g/H
