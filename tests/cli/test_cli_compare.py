"""``gpuscope compare`` in a subprocess: outputs, input kinds, escaping, and bad input (exit 2)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import kineto_json as kj
from tests.support.cli import gpuscope as run_gpuscope
from tests.support.env import SAMPLES, shared_path

PAIR = ("kineto", "hta", "trace_compare")
EVIL = 'evil<script>alert("x")</script>&kernel<float>'


def gpuscope(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_gpuscope(*args, cwd=cwd, timeout=600)


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def closes(view: dict[str, Any]) -> bool:
    return sum(e["delta_ns"] for e in view["entries"]) + view["other_ns"] == view["total_change_ns"]


def test_real_pair_prints_the_comparison_and_writes_json(tmp_path: Path) -> None:
    base, cur = shared_path(*PAIR, "base"), shared_path(*PAIR, "test")
    out = tmp_path / "cmp.json"
    proc = gpuscope("compare", base, cur, "--all-events", "--json", out, "--by", "annotation")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    text = proc.stdout
    assert "ΔT = +0.000 ms" in text
    assert "step times: step times are identical on both sides" in text
    assert "nccl:all_reduce" in text and "-0.067" in text
    assert f"Wrote {out}" in text
    doc = json.loads(out.read_text())
    assert doc["format"] == "gpuscope-compare" and doc["by"] == "annotation"
    assert doc["mode"] == "steps" and doc["rank_pairs"] == [[1, 1]]
    assert set(doc["views"]) == {"kernel", "op", "category", "collective", "annotation", "step"}
    assert all(closes(v) for v in doc["views"].values())
    (ann,) = doc["views"]["annotation"]["entries"]
    assert (ann["base"]["count"], ann["current"]["count"], ann["delta_ns"]) == (2, 1, -67000)


def test_summary_run_directory_and_trace_directory_inputs(tmp_path: Path) -> None:
    src = SAMPLES / "synthetic_2rank"
    summary = tmp_path / "summary.json"
    proc = gpuscope("analyze", src, "--json", summary)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    for f in src.glob("rank-*.json.gz"):
        shutil.copy(f, run / "traces" / f.name)

    out = tmp_path / "a.json"
    proc = gpuscope("compare", summary, run, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "note: BASE is a JSON summary" in proc.stdout.replace("\n", " ")
    doc = json.loads(out.read_text())
    assert doc["mode"] == "window" and doc["base"]["kind"] == "summary"
    assert doc["current"]["kind"] == "trace" and doc["total_change_ns"] == 0
    assert not doc["views"]["op"]["available"]
    assert all(e["delta_ns"] == 0 for e in doc["views"]["kernel"]["entries"])

    # a run directory holding only its summary is read as a summary
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(summary, only / "summary.json")
    proc = gpuscope("compare", only, src, "--json", out, "--by", "step", "--all-events", "--force")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["base"]["kind"] == "summary"
    assert (
        "--all-events does not change BASE: a JSON summary keeps the window it was written "
        "with" in doc["notes"]
    )
    assert "step (by index)" in proc.stdout


def test_different_rank_counts_are_explained_and_compared(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    proc = gpuscope(
        "compare", SAMPLES / "synthetic_2rank", SAMPLES / "synthetic_8rank", "--json", out
    )
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "note: rank sets differ (BASE 2: 0, 1; CURRENT 8: 0–7)" in flat
    doc = json.loads(out.read_text())
    assert doc["rank_pairs"] == [[0, 0], [1, 1]]
    assert all(closes(v) for v in doc["views"].values())


def _evil_doc(dur_us: int) -> dict[str, Any]:
    steps = [kj.event(f"ProfilerStep#{i}", "cpu_op", 100 * i, 100, args={}) for i in (1, 2, 3)]
    kernels = [kj.kernel(EVIL, 100 * i + 10, dur_us, i, device=0) for i in (1, 2, 3)]
    return kj.trace(steps + kernels)


def _evil_trace(path: Path, dur_us: int) -> None:
    kj.write(path, _evil_doc(dur_us))


def test_html_page_escapes_kernel_names_and_embeds_plotly_once(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    _evil_trace(a, 20)
    _evil_trace(b, 30)
    html_out, json_out = tmp_path / "c.html", tmp_path / "c.json"
    proc = gpuscope("compare", a, b, "--all-events", "--html", html_out, "--json", json_out)
    assert proc.returncode == 0, proc.stderr
    page = html_out.read_text()
    assert EVIL not in page and "<script>alert" not in page
    assert "evil&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;kernel&lt;float&gt;" in page
    for sec in ("cmp-overview", "cmp-contributions", "cmp-top-kernels", "cmp-steps-section"):
        assert f'<section id="{sec}"' in page
    # plotly.js inline exactly once, no script from the network
    assert page.count("window.PlotlyConfig") == 1 and 'src="http' not in page
    for div in ("cmp-waterfall", "cmp-kernels", "cmp-steps"):
        assert f'id="{div}"' in page
    m = re.search(r'<script type="application/json" id="gpuscope-data">(.*?)</script>', page, re.S)
    assert m and "<" not in m.group(1)
    assert json.loads(m.group(1)) == json.loads(json_out.read_text())
    # the kernel is 10 µs slower per call, 3 calls: +30 µs of kernel time
    (k,) = json.loads(m.group(1))["views"]["kernel"]["entries"]
    assert k["delta_ns"] == 30_000 and k["key"].startswith("evil<script>")

    proc = gpuscope("compare", a, b, "--html", html_out, "--plotlyjs", "cdn", "--force")
    assert proc.returncode == 0, proc.stderr
    small = html_out.read_text()
    assert "cdn.plot.ly" in small and len(small) < len(page) / 10


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["missing.json.gz", "{sample}"], ["missing.json.gz", "no such file"]),
        (["{sample}", "{sample}", "--by", "module"], ["--by must be one of", "'module'"]),
        (["{sample}", "{sample}", "--plotlyjs", "web"], ["--plotlyjs must be one of"]),
        (["{bad}", "{sample}"], ["bad.json.gz"]),
        (["{summary_v9}", "{sample}"], ["v9.json", "schema_version 1"]),
    ],
    ids=["missing", "bad-view", "bad-plotlyjs", "corrupt-trace", "wrong-summary"],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    v9 = tmp_path / "v9.json"
    v9.write_text('{"schema_version": 9, "ranks": []}')
    subs = {"sample": str(SAMPLES / "synthetic_2rank"), "bad": str(bad), "summary_v9": str(v9)}
    proc = gpuscope("compare", *(a.format(**subs) for a in args), cwd=tmp_path)
    one_line_error(proc, *needles)


def test_help_names_the_views() -> None:
    proc = gpuscope("compare", "--help")
    assert proc.returncode == 0
    for word in ("BASE", "CURRENT", "--json", "--html", "--by", "--all-events"):
        assert word in proc.stdout
