"""Two files that claim one rank make the input set wrong: ``gpuscope analyze`` prints no
analysis at all, only the one-line error naming both files (exit 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import gpuscope
from tests.support.env import SAMPLES


def test_two_files_claiming_one_rank_fail_before_any_analysis_output(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("a.json.gz", "b.json.gz"):  # two copies of one rank-0 trace
        shutil.copy(SAMPLES / "synthetic_2rank" / "rank-0.json.gz", run / name)
    out = tmp_path / "summary.json"
    proc = gpuscope("analyze", run, "--json", out, "--no-cache")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "claims rank 0" in lines[0], proc.stderr
    assert str(run / "a.json.gz") in lines[0] and str(run / "b.json.gz") in lines[0]
    assert proc.stdout.strip() == ""  # not one table of the other file's analysis
    assert not out.exists()
