"""``analyze``'s command line read without typer (cli.analyze_args.fast_args): whatever it reads
is exactly what typer passes to the command, on generated command lines; what it does not read
(help, unknown options, odd values) it leaves to typer; the console script takes it."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

import cli.analyze_run
import cli.main
from cli.analyze_args import DEFAULTS, FLAGS, REPEATED, VALUES, fast_args
from cli.exit_codes import ExitCode
from tests.support.env import SAMPLES

ROOT = Path(__file__).resolve().parents[2]
SIGNATURE = inspect.signature(cli.analyze_run.run_analyze)


def _bound(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """run_analyze's arguments by name, defaults filled in."""
    bound = SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def typer_reading(argv: list[str]) -> dict[str, Any] | None:
    """What typer passes to the command for ``analyze ARGV``, or None when it refuses it."""
    got: list[dict[str, Any]] = []
    with mock.patch.object(
        cli.analyze_run, "analyze_command", lambda *a, **k: got.append(_bound(*a, **k))
    ):
        try:
            typer_main(["analyze", *argv])
        except (typer.Exit, typer.Abort, cli.main.ClickException):
            return None
    return got[0] if got else None


def typer_main(args: list[str]) -> Any:
    """The command line run by typer's command, as cli.main ran every command before."""
    command = typer.main.get_command(cli.main.build_app())
    return command.main(args=args, prog_name="gpuscope", standalone_mode=False)


PATHS = st.sampled_from(["a.json", "dir", "-", "x y", "--odd.json"])
VALUE_WORDS = st.sampled_from(
    ["out.json", "0.5", "0.6", "3", "03", "+3", " 3", "-1", "", "tcp://h:1", "--force", "H100"]
)
ODD = st.sampled_from(["", "--", "--help", "-h", "--bogus", "--jso", "--force=1", "--json="])
PIECES = st.one_of(
    PATHS.map(lambda p: [p]),
    st.sampled_from(sorted(FLAGS)).map(lambda f: [f]),
    st.tuples(st.sampled_from(sorted({**VALUES, **REPEATED})), VALUE_WORDS).map(list),
    st.tuples(st.sampled_from(sorted({**VALUES, **REPEATED})), VALUE_WORDS)
    .map("=".join)
    .map(lambda w: [w]),
    ODD.map(lambda w: [w]),
)
ARGVS = st.lists(PIECES, max_size=6).map(lambda pieces: [w for p in pieces for w in p])


@settings(max_examples=500, deadline=None)
@given(ARGVS)
def test_what_it_reads_typer_reads_the_same_way(argv: list[str]) -> None:
    fast = fast_args(argv)
    if fast is not None:
        assert fast == typer_reading(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["a.json"],
        ["dir", "--json", "out.json", "--no-cache", "--force"],
        ["a.json", "b.json", "--json=o.json", "--html", "r.html", "--all-events"],
        ["--hta-version", "0.5", "--include-prelaunched", "a.json", "--gpu", "H100"],
        ["a", "--ncu", "k.csv", "--peaks", "p.toml", "--workers", "2"],
        ["a", "--graph-capture", "g1.json", "--graph-capture=g2.json", "--json", "1", "--json=2"],
        ["a", "--scheduler", "tcp://h:1", "--", "--odd-name.json", "-"],
    ],
)
def test_common_command_lines_are_read_here_as_typer_reads_them(argv: list[str]) -> None:
    fast = fast_args(argv)
    assert fast is not None and fast == typer_reading(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["a", "-h"],
        ["a", "--jso", "x"],
        ["a", "--json"],
        ["a", "--json", "--force"],
        ["a", "--json="],
        ["a", "--force=yes"],
        ["a", "--workers", "+3"],
        ["a", "--workers", "two"],
        [""],
        ["--", ""],
    ],
)
def test_anything_unusual_is_left_to_typer(argv: list[str]) -> None:
    assert fast_args(argv) is None


def test_the_tables_are_the_commands_own_options_and_defaults() -> None:
    command = typer.main.get_group(cli.main.build_app(lazy=False)).commands["analyze"]
    options = [p for p in command.params if p.param_type_name == "option"]
    flags = {o for p in options if getattr(p, "is_flag", False) for o in p.opts} - {"--help"}
    valued = {o for p in options if not getattr(p, "is_flag", False) for o in p.opts}
    multiple = {o for p in options if getattr(p, "multiple", False) for o in p.opts}
    assert flags == set(FLAGS)
    assert valued == set(VALUES) | set(REPEATED) and multiple == set(REPEATED)
    defaults = {k: v.default for k, v in SIGNATURE.parameters.items() if k != "paths"}
    assert defaults == DEFAULTS


def test_the_console_script_runs_the_command_without_building_typers_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_typer(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("typer's command was built")

    monkeypatch.setattr(cli.main, "build_app", no_typer)
    monkeypatch.setenv("GPUSCOPE_MEMORY_SETTINGS", "0")
    out = tmp_path / "s.json"
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    assert cli.main.main(["analyze", str(trace), "--json", str(out), "--no-cache"]) == 0
    assert out.is_file() and f"Wrote {out}" in capsys.readouterr().out
    # an existing output without --force: the command's own refusal, exit 2, one line
    assert cli.main.main(["analyze", str(trace), "--json", str(out), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0]


def test_an_interrupt_and_a_closed_pipe_end_the_command_as_under_typer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    def closed_pipe(*_a: Any, **_k: Any) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli.analyze_run, "analyze_command", interrupted)
    assert cli.main.main(["analyze", "a.json"]) == 130 == typer_main(["analyze", "a.json"])
    monkeypatch.setattr(cli.analyze_run, "analyze_command", closed_pipe)
    for run in (cli.main.main, typer_main):
        stdout, stderr = sys.stdout, sys.stderr
        try:
            with pytest.raises(SystemExit) as ex:
                run(["analyze", "a.json"])
            assert ex.value.code == 1
        finally:
            sys.stdout, sys.stderr = stdout, stderr


def test_the_console_script_analyses_without_importing_typer(tmp_path: Path) -> None:
    trace = SAMPLES / "torch_cpu" / "rank-0.json.gz"
    code = (
        "import sys; from cli.launch import main; code = main(sys.argv[1:]); "
        "print(sorted(m for m in ('typer', 'pydantic') if m in sys.modules)); sys.exit(code)"
    )

    def imported(*args: str) -> tuple[int, str]:
        proc = subprocess.run(
            [sys.executable, "-c", code, "analyze", str(trace), "--no-cache", *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,  # the relative output is written there
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        return proc.returncode, proc.stdout.strip().splitlines()[-1]

    assert imported("--json", str(tmp_path / "a.json")) == (0, "[]")
    assert imported("--json", str(tmp_path / "-abs.json")) == (0, "[]")  # "/" in front
    # left to typer (a value that begins with "-"): typer reads it, its validators import pydantic
    assert imported("--json", "-odd.json") == (0, "['pydantic', 'typer']")
    assert (tmp_path / "-odd.json").is_file()


def test_a_partly_failed_analysis_ends_with_its_code_and_no_more_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def partly_failed(*_a: Any, **_k: Any) -> None:
        raise ExitCode(2)  # as run_analyze does once it has named the inputs it could not read

    monkeypatch.setattr(cli.analyze_run, "analyze_command", partly_failed)
    assert cli.main.main(["analyze", "a.json"]) == 2  # read without typer
    assert cli.main.main(["analyze", "a.json", "--json", "-o.json"]) == 2  # read by typer
    assert capsys.readouterr().err == ""
