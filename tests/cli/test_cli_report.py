"""``gpuscope report`` and ``gpuscope export --perfetto``: every input kind, the gate banner,
overwrite protection, and bad input as one line with exit 2 (docs/report.md §1, §7)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from cli.report import looks_like_summary
from reports.perfetto import NVML_PID
from reports.summary import write_summary
from tests.support.cli import gpuscope
from tests.support.env import SAMPLES

T0 = 1_700_000_000_000_000_000


def payload(html: Path) -> dict[str, Any]:
    text = html.read_text(encoding="utf-8")
    start = text.index('id="gpuscope-data">') + len('id="gpuscope-data">')
    return json.loads(text[start : text.index("</script>", start)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory as ``gpuscope run`` leaves it, without summary: traces, counters, meta."""
    run = tmp_path_factory.mktemp("run")
    (run / "traces").mkdir()
    for f in sorted((SAMPLES / "synthetic_2rank").glob("rank-*.json.gz")):
        shutil.copy(f, run / "traces" / f.name)
    (run / "counters").mkdir()
    rows = [f"{i},{T0 + i * 10**8},0,power_instant_mw,{300000 + i}\n" for i in range(30)]
    rows += [f"{k},{T0 + k * 10**9},-1,step_begin,{10 + k}\n" for k in range(3)]
    body = "t_mono_ns,t_unix_ns,gpu,field,value\n" + "".join(
        sorted(rows, key=lambda r: int(r.split(",")[1]))
    )
    (run / "counters" / "node7.csv.gz").write_bytes(gzip.compress(body.encode()))
    (run / "meta.json").write_text(
        json.dumps(
            {"command": ["python", "train.py"], "hosts": ["node7"], "git": {"commit": "c0ffee"}}
        )
    )
    return run


@pytest.fixture(scope="module")
def summary_file(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cli.report import summarise

    return write_summary(
        summarise([str(run_dir / "traces")], run_dir=run_dir),
        tmp_path_factory.mktemp("s") / "summary.json",
    )


def test_report_of_a_run_directory_summarises_traces_counters_and_meta(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    assert f"Wrote {out}" in capsys.readouterr().out
    p = payload(out)
    assert p["header"]["ranks"] == 2 and p["header"]["command"] == "python train.py"
    assert p["header"]["git_commit"] == "c0ffee"
    (s,) = p["counters"]["series"]
    assert s["host"] == "node7" and s["value"][:2] == [300000.0, 300001.0]
    assert p["gate"] is None


def test_report_of_a_summary_renders_it_as_is(summary_file: Path, tmp_path: Path) -> None:
    assert looks_like_summary(summary_file)
    out = tmp_path / "r.html"
    assert main(["report", str(summary_file), "-o", str(out), "--plotlyjs", "cdn"]) == 0
    from reports.html_payload import build_payload

    summary = json.loads(summary_file.read_text())
    assert payload(out) == json.loads(json.dumps(build_payload(summary)))
    assert "https://cdn.plot.ly/" in out.read_text()


def test_run_directory_with_summary_and_gate_result_gets_the_banner(
    summary_file: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    (run / "gate").mkdir(parents=True)
    shutil.copy(summary_file, run / "summary.json")
    gate = {
        "schema_version": 1,
        "kind": "gpuscope.gate",
        "name": "nightly",
        "status": "fail",
        "verdicts": [
            {"key": "step_time_ns", "status": "fail", "message": "step time <slower> by 12 %"}
        ],
    }
    (run / "gate" / "result.json").write_text(json.dumps(gate))
    out = tmp_path / "r.html"
    assert main(["report", str(run), "-o", str(out)]) == 0
    assert payload(out)["gate"]["status"] == "fail"
    text = out.read_text()
    assert 'id="gate-banner"' in text and "FAIL" in text
    assert "step time &lt;slower&gt; by 12 %" in text
    # --gate overrides: a passing result
    gate_file = tmp_path / "pass.json"
    gate_file.write_text(json.dumps({**gate, "status": "pass", "verdicts": []}))
    assert main(["report", str(run), "-o", str(out), "--force", "--gate", str(gate_file)]) == 0
    assert payload(out)["gate"]["status"] == "pass"


def test_report_of_trace_files(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    files = sorted((SAMPLES / "synthetic_2rank").glob("rank-*.json.gz"))
    assert main(["report", *map(str, files), "-o", str(out)]) == 0
    p = payload(out)
    assert p["header"]["ranks"] == 2 and p["header"]["sources_total"] == 2
    assert p["counters"] is None


def test_existing_output_needs_force(summary_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("keep me")
    proc = gpuscope("report", summary_file, "-o", out)
    assert proc.returncode == 2 and "--force" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_text() == "keep me"
    assert gpuscope("report", summary_file, "-o", out, "--force").returncode == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"schema_version": 1, "ranks": [', "not valid json"),
        (
            '{"schema_version": 1, "kind": "gpuscope.gate", "status": "pass"}',
            "not a gpuscope json summary",
        ),
    ],
)
def test_bad_summary_is_one_line_exit_2(tmp_path: Path, content: str, problem: str) -> None:
    bad = tmp_path / "summary.json"
    bad.write_text(content)
    proc = gpuscope("report", bad, "-o", tmp_path / "r.html")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and problem in lines[0].lower()
    assert not (tmp_path / "r.html").exists()


def test_bad_options_and_missing_inputs_exit_2(summary_file: Path, tmp_path: Path) -> None:
    proc = gpuscope("report", summary_file, "-o", tmp_path / "r.html", "--plotlyjs", "directory")
    assert proc.returncode == 2 and "--plotlyjs" in proc.stderr
    proc = gpuscope("report", tmp_path / "missing", "-o", tmp_path / "r.html")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    proc = gpuscope("export", "--perfetto", tmp_path / "p.json", tmp_path / "missing")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_export_of_a_run_directory_includes_its_nvml_counters(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "trace.json"
    assert main(["export", "--perfetto", str(out), str(run_dir)]) == 0
    assert "ui.perfetto.dev" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["metadata"]["ranks"] == [0, 1]
    assert doc["metadata"]["nvml_alignment"] == "base_time_ns"  # the sample records one
    power = [e for e in doc["traceEvents"] if e["pid"] == NVML_PID and e["name"] == "gpu0"]
    assert len(power) == 30
    assert main(["export", "--perfetto", str(out), str(run_dir)]) == 2
    files = sorted((SAMPLES / "synthetic_2rank").glob("rank-*.json.gz"))
    assert main(["export", "--perfetto", str(out), "--force", *map(str, files)]) == 0
    assert not [e for e in json.loads(out.read_text())["traceEvents"] if e["pid"] == NVML_PID]


def test_analyze_html_renders_the_summary_it_writes(tmp_path: Path) -> None:
    from reports.html_payload import build_payload

    js, html = tmp_path / "s.json", tmp_path / "r.html"
    proc = gpuscope("analyze", SAMPLES / "synthetic_2rank", "--json", js, "--html", html)
    assert proc.returncode == 0, proc.stderr
    assert f"Wrote {html}" in proc.stdout
    summary = json.loads(js.read_text())
    assert payload(html) == json.loads(json.dumps(build_payload(summary)))
