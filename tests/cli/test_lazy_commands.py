"""Subcommands load on demand: the lazy app lists, helps and dispatches exactly as the eager
one, and ``gpuscope analyze`` imports none of the heavy packages other commands need."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from cli.main import COMMAND_MODULES, COMMANDS, build_app
from tests.support.env import REPO, SAMPLES

HEAVY = ("dask", "distributed", "sqlalchemy", "alembic", "plotly", "scipy", "ruptures")
"""Packages `analyze` (without --html, --scheduler or the cache) never needs.  (pyarrow is
imported by pandas itself when installed, pydantic by typer's option parsing.)"""
OTHER_COMMANDS = ("cli.gate", "cli.report", "analyzers.gate", "reports.store", "reports.html")


def _help(app: typer.Typer, args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    command = typer.main.get_command(app)
    command.main(args=[*args, "--help"], prog_name="gpuscope", standalone_mode=False)
    return capsys.readouterr().out


def test_declared_commands_are_exactly_the_registered_ones() -> None:
    eager = typer.main.get_command(build_app(lazy=False))
    lazy = typer.main.get_command(build_app())
    assert isinstance(eager, typer.core.TyperGroup) and isinstance(lazy, typer.core.TyperGroup)
    assert list(eager.commands) == ["version", *(name for name, _ in COMMANDS)]
    assert list(lazy.commands) == list(eager.commands)
    assert set(COMMAND_MODULES) == {module for _, module in COMMANDS}


@pytest.mark.parametrize("command", ["", "version", *(name for name, _ in COMMANDS)])
def test_help_is_identical_to_the_eager_app(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    args = [command] if command else []
    eager = _help(build_app(lazy=False), args, capsys)
    lazy = _help(build_app(), args, capsys)
    assert "Usage: gpuscope" in eager
    assert lazy == eager


def test_unknown_command_still_suggests_the_nearest(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "anlyze", "x"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert proc.returncode == 2
    assert "No such command 'anlyze'. Did you mean 'analyze'?" in proc.stderr


def test_analyze_imports_no_heavy_package(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    code = (
        "import json, sys; from cli.main import main\n"
        f"rc = main(['analyze', {str(trace)!r}, '--json', {str(out)!r}, '--no-cache'])\n"
        "print(json.dumps({'rc': rc, 'modules': sorted(sys.modules)}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0
    assert json.loads(out.read_text())["ranks"], "the analysis ran"
    modules = set(result["modules"])
    top = {m.split(".")[0] for m in modules}
    assert not top & set(HEAVY), sorted(top & set(HEAVY))
    assert not modules & set(OTHER_COMMANDS), sorted(modules & set(OTHER_COMMANDS))
    cache_parts = {"collectors.cache.trace_cache", "collectors.cache.arrow_tables"}
    assert not modules & cache_parts  # --no-cache: the cache's stores are never loaded
