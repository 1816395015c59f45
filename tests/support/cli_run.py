"""Run the ``gpuscope`` command in this process and check the input contract of issue 19.

:func:`run_cli` calls :func:`cli.main.main` with stdout and stderr captured (no subprocess: a
few ms per call instead of a second).  :func:`check_contract` asserts what every command owes
any input (docs/reliability.md): exit 0, or exit 2 with one line on stderr naming the file;
never a traceback, an internal error or a Python warning; and a JSON summary, when written, that
the validating reader accepts (:func:`collectors.summary.reader.read_summary`: no negative
duration or count, percentages and shares in range, every number finite and within int64).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CliResult:
    rc: int
    out: str
    err: str
    warnings: list[str]

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def run_cli(argv: Sequence[str | Path]) -> CliResult:
    """``gpuscope ARGV`` in this process: exit code, stdout, stderr, warnings raised."""
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    env = os.environ.pop("GPUSCOPE_DEBUG", None)  # internal errors as one line, not raised
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            warnings.simplefilter("always")
            rc = main([str(a) for a in argv])
    finally:
        if env is not None:
            os.environ["GPUSCOPE_DEBUG"] = env
    return CliResult(rc, out.getvalue(), err.getvalue(), [str(w.message) for w in caught])


def check_contract(res: CliResult, names: list[str | Path], summary: Path | None = None) -> Any:
    """Assert the contract for one command run on inputs *names*; return the validated summary
    (when *summary* was written), else None."""
    text = res.out + res.err
    assert "Traceback" not in text, text
    assert "internal error" not in text, text
    assert not res.warnings, res.warnings
    assert res.rc in (0, 2), (res.rc, text)
    if res.rc == 2:
        lines = res.err_lines
        assert len(lines) == 1, res.err
        assert any(str(n) in lines[0] for n in names), (lines[0], names)
        return None
    if summary is not None and summary.exists():
        from collectors.summary.reader import read_summary

        return read_summary(summary)
    return None


def rank_notes(summary: Any) -> list[str]:
    """Every rank's notes of a summary, in order."""
    return [n for r in summary["ranks"] for n in r.get("notes") or []]
