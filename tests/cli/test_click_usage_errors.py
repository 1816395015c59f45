"""Click's usage errors are one line naming the problem (exit 2), like every other error.

Before, Click printed four lines (usage, a hint, a blank line, the error).  The reference: the
exact messages Click gives for each mistake, on one ``gpuscope: error:`` line with where help is.
"""

from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["run", "--step", "2:4", "--", "true"],
            "No such option: --step (Possible options: --help, --steps); see 'gpuscope run --help'",
        ),
        (["analyze"], "Missing argument 'PATH'; see 'gpuscope analyze --help'"),
        (["no-such-command"], "No such command 'no-such-command'; see 'gpuscope --help'"),
        (
            ["gate", "x.json", "--strict=maybe"],
            "Option '--strict' does not take a value.",  # Click gives no context here
        ),
    ],
    ids=["unknown option", "missing argument", "unknown command", "flag with a value"],
)
def test_usage_error_is_one_line_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"gpuscope: error: {line}"]
    assert captured.out == ""


def test_a_bad_value_names_the_option_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "x", "--workers", "many"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("gpuscope: error: Invalid value for '--workers':")
    assert line.endswith("; see 'gpuscope analyze --help'")


def test_a_bare_command_still_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2  # Click's status for help shown instead of running
    captured = capsys.readouterr()
    assert "Usage: gpuscope" in captured.out + captured.err
    assert "analyze" in captured.out + captured.err
