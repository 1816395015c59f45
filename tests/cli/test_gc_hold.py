"""``gpuscope analyze`` holds the garbage collector off while it imports (cli.gc_hold): the
command restarts it, with the imports' objects frozen, before its work; the console script
restarts it too where the command stops first; every other command leaves it alone."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import gc_hold, launch
from tests.support.env import REPO, SAMPLES


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    yield
    gc_hold.release()
    gc.enable()


def test_hold_then_release_stops_and_restarts_collections_with_the_objects_frozen() -> None:
    frozen = gc.get_freeze_count()
    gc_hold.hold()
    assert not gc.isenabled() and gc_hold.held()
    made = [[] for _ in range(1000)]
    gc_hold.release()
    assert gc.isenabled() and not gc_hold.held()
    assert gc.get_freeze_count() >= frozen + len(made)
    gc.unfreeze()


def test_release_does_nothing_unless_hold_stopped_the_collector() -> None:
    gc.disable()  # someone else's choice
    gc_hold.hold()
    gc_hold.release()
    assert not gc.isenabled()
    gc.enable()
    frozen = gc.get_freeze_count()
    gc_hold.release()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_console_script_restarts_the_collector_when_analyze_stops_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cli.main

    seen: list[bool] = []

    def command(args: list[str]) -> int:
        seen.append(gc.isenabled())
        raise SystemExit(2)  # a usage error before the work

    monkeypatch.setattr(cli.main, "typer_main", command)  # launch leaves it to typer
    monkeypatch.setenv("GPUSCOPE_MEMORY_SETTINGS", "0")
    with pytest.raises(SystemExit):
        launch.main(["analyze", "--no-such-option"])
    assert seen == [False] and gc.isenabled()
    gc.unfreeze()


def test_other_commands_run_with_the_collector_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.main

    seen: list[bool] = []
    monkeypatch.setattr(cli.main, "main", lambda args: seen.append(gc.isenabled()) or 0)
    assert launch.main(["report", "x"]) == 0
    assert seen == [True]


def test_analyze_runs_its_work_with_the_collector_on(tmp_path: Path) -> None:
    """A fresh process as a user runs it: the sections run with collections on."""
    out = tmp_path / "s.json"
    probe = (
        "import gc, sys\n"
        "import reports.summary.engine as e\n"
        "orig = e.analyze_paths\n"
        "def ap(*a, **k):\n"
        "    sys.stderr.write(f'GC-ON {gc.isenabled()} FROZEN {gc.get_freeze_count() > 0}\\n')\n"
        "    return orig(*a, **k)\n"
        "e.analyze_paths = ap\n"
        "sys.argv = ['gpuscope', 'analyze', sys.argv[1], '--json', sys.argv[2], '--no-cache']\n"
        "from cli.launch import run\n"
        "run()\n"
    )
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    p = subprocess.run(
        [sys.executable, "-c", probe, str(trace), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "GC-ON True FROZEN True" in p.stderr
    assert json.loads(out.read_text())["ranks"]
