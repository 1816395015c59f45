"""`gpuscope record / gate / history`: exit codes, outputs, and bad input as one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from reports.store import open_store
from tests.support.cli import gpuscope
from tests.support.summaries import make_summary, sim_summary
from tests.support.validators import JUNIT_XSD as XSD
from tests.support.validators import xmlschema_module as _xmlschema

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, summary: dict) -> str:
    path.write_text(json.dumps(summary))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    rng = np.random.default_rng(42)
    out = {
        "base": _write(tmp_path / "base.json", sim_summary(rng)),
        "same": _write(tmp_path / "same.json", sim_summary(rng)),
        "slow": _write(tmp_path / "slow.json", sim_summary(rng, 1.06)),
        "short": _write(tmp_path / "short.json", sim_summary(rng, n=5)),
        "short_base": _write(tmp_path / "short_base.json", sim_summary(rng, n=5)),
    }
    v2 = sim_summary(rng)
    v2["schema_version"] = 2
    out["v2"] = _write(tmp_path / "v2.json", v2)
    (tmp_path / "unknown.toml").write_text("[metrics.step_time]\nfail = 5\n")
    out["bad_rules"] = str(tmp_path / "unknown.toml")
    (tmp_path / "loose.toml").write_text("[metrics.step_time_ns]\nfail = 10.0\nwarn = 4.0\n")
    out["loose_rules"] = str(tmp_path / "loose.toml")
    return out


def test_same_distribution_passes_and_writes_every_output(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, md, js = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "g.json"
    code, out, _ = _run(
        capsys,
        "gate",
        files["same"],
        "--baseline",
        files["base"],
        "--junit",
        str(junit),
        "--markdown",
        str(md),
        "--json",
        str(js),
    )
    assert code == 0
    assert "gate PASS" in out and "step_time_ns" in out
    doc = json.loads(js.read_text())
    assert doc["status"] == "pass" and doc["exit_code"] == 0
    assert "| step\\_time\\_ns |" in md.read_text()
    xmlschema = _xmlschema()
    xmlschema.XMLSchema(XSD).validate(str(junit))


def test_regression_exits_1_and_annotates_under_github_actions(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = _run(capsys, "gate", files["slow"], "--baseline", files["base"])
    assert code == 1
    assert "::error title=perf regression%3A step_time_ns::step_time_ns +" in out
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    code, out, _ = _run(capsys, "gate", files["slow"], "--baseline", files["base"])
    assert code == 1 and "::error" not in out


def test_rules_file_thresholds_apply(files: dict[str, str], capsys) -> None:
    code, out, _ = _run(
        capsys, "gate", files["slow"], "--baseline", files["base"], "--rules", files["loose_rules"]
    )
    assert code == 0 and "WARN" in out


def test_insufficient_data_exits_0_or_3_with_strict(files: dict[str, str], capsys) -> None:
    args = ["gate", files["short"], "--baseline", files["short_base"]]
    code, out, _ = _run(capsys, *args)
    assert code == 0 and "insufficient" in out
    code, _, _ = _run(capsys, *args, "--strict")
    assert code == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["gate", "{v2}", "--baseline", "{base}"],
            "v2.json: summary schema_version 2 is not "
            "supported (this gpuscope reads schema_version 1)",
        ),
        (["gate", "{same}", "--baseline", "{tmp}/missing.json"], "missing.json: no such file"),
        (
            ["gate", "{same}", "--baseline", "{base}", "--rules", "{bad_rules}"],
            "unknown.toml: unknown metric 'step_time' in [metrics]",
        ),
        (
            ["gate", "{same}", "--store", "postgresql+psycopg://ci:pw@127.0.0.1:1/perf"],
            "postgresql+psycopg://ci:***@127.0.0.1:1/perf: cannot open the store",
        ),
        (["gate", "{same}"], "give exactly one of --baseline BASE.json or --store URL"),
        (["gate", "{same}", "--baseline", "{base}", "--store", "{tmp}/h.db"], "exactly one of"),
        (
            ["gate", "{same}", "--store", "{tmp}/h.db", "--name", "llama"],
            "no baseline: no run of 'llama' on branch 'main'",
        ),
        (["gate", "{tmp}", "--baseline", "{base}"], "is a directory"),
        (["record", "{v2}", "--store", "{tmp}/h.db", "--name", "x"], "schema_version 2"),
        (
            ["record", "{same}", "--store", "{tmp}/h.db", "--name", "x", "--env", "oops"],
            "--env 'oops': expected KEY=VALUE",
        ),
        (["history", "--store", "{tmp}/h.db", "-o", "{tmp}/t.html"], "no recorded run"),
        (
            ["history", "--store", "{tmp}/h.db", "--metric", "speed", "-o", "{tmp}/t.html"],
            "--metric 'speed': unknown metric",
        ),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(
    args: list[str], message: str, files: dict[str, str], tmp_path: Path, capsys
) -> None:
    argv = [a.format(tmp=tmp_path, **files) for a in args]
    code, out, err = _run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscope: error: "), err
    assert message in lines[0]
    assert "Traceback" not in out + err


def test_process_exit_codes_and_no_traceback(files: dict[str, str], tmp_path: Path) -> None:
    bad = gpuscope("gate", files["v2"], "--baseline", files["base"], cwd=REPO)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1
    assert gpuscope("gate", files["slow"], "--baseline", files["base"], cwd=REPO).returncode == 1


def test_failed_record_leaves_the_store_untouched(
    files: dict[str, str], tmp_path: Path, capsys
) -> None:
    fresh = tmp_path / "never.db"
    assert _run(capsys, "record", files["v2"], "--store", str(fresh), "--name", "x")[0] == 2
    assert not fresh.exists()  # the input is checked before the store is touched
    db = str(tmp_path / "h.db")
    assert _run(capsys, "record", files["base"], "--store", db, "--name", "x")[0] == 0
    assert _run(capsys, "record", files["v2"], "--store", db, "--name", "x")[0] == 2
    with open_store(db) as st:
        assert st.run_count() == 1


def test_record_gate_and_history_against_a_store(
    store_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = np.random.default_rng(7)
    for i in range(6):
        s = sim_summary(rng)
        s["ranks"][0]["overlap"]["overlap_pct"] = 60.0 + 0.2 * i
        path = _write(tmp_path / f"main{i}.json", s)
        code, out, _ = _run(
            capsys,
            "record",
            path,
            "--store",
            store_url,
            "--name",
            "llama",
            "--branch",
            "main",
            "--commit",
            f"c{i}",
            "--env",
            "driver=550.54",
        )
        assert code == 0 and f"Recorded run {i + 1} of llama" in out
    slow = sim_summary(rng, 1.06)
    slow["ranks"][0]["overlap"]["overlap_pct"] = 40.0
    ok = sim_summary(rng)
    ok["ranks"][0]["overlap"]["overlap_pct"] = 60.5
    slow_p, ok_p = _write(tmp_path / "slow.json", slow), _write(tmp_path / "ok.json", ok)
    common = ["--store", store_url, "--branch", "main", "--env", "driver=550.54"]

    code, out, _ = _run(capsys, "gate", ok_p, *common, "--commit", "pr-ok")
    assert code == 0, out
    js = tmp_path / "g.json"
    code, out, _ = _run(capsys, "gate", slow_p, *common, "--commit", "pr-slow", "--json", str(js))
    assert code == 1
    doc = json.loads(js.read_text())
    status = {v["key"]: v["status"] for v in doc["verdicts"]}
    assert status == {"step_time_ns": "fail", "overlap_pct": "fail", "exposed_comm_ns": "pass"}
    assert doc["baseline"]["commits"] == [f"c{i}" for i in reversed(range(6))]
    tests = {v["key"]: v["test"] for v in doc["verdicts"]}
    assert tests["step_time_ns"] == "mann-whitney" and tests["overlap_pct"] == "prediction-t"

    # another driver: not comparable with main's latest segment
    code, out, _ = _run(
        capsys,
        "gate",
        ok_p,
        "--store",
        store_url,
        "--env",
        "driver=555.42",
        "--strict",
        "--no-save-verdicts",
    )
    assert code == 3
    assert "driver: 555.42 → 550.54" in out and "no baseline run in the candidate's" in out

    html = tmp_path / "trend.html"
    code, out, _ = _run(
        capsys,
        "history",
        "--store",
        store_url,
        "--name",
        "llama",
        "--metric",
        "step_time_ns",
        "-o",
        str(html),
    )
    assert code == 0 and f"Wrote {html}" in out
    page = html.read_text()
    assert "llama · step_time_ns" in page and "Plotly.newPlot" in page
    with open_store(store_url) as st:
        v = st.verdicts("llama")
    assert set(v["commit_sha"]) == {"pr-ok", "pr-slow"}  # the --no-save-verdicts run left none


def test_store_with_several_benchmarks_needs_a_name(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "h.db")
    summary = _write(tmp_path / "s.json", make_summary([[100] * 12]))
    for name in ("a", "b"):
        assert (
            _run(capsys, "record", summary, "--store", db, "--name", name, "--branch", "main")[0]
            == 0
        )
    code, _, err = _run(capsys, "gate", summary, "--store", db)
    assert code == 2 and "pass --name: the store holds 2 benchmarks on branch 'main' (a, b)" in err
