"""``gpuscope run`` when the program cannot be started or the run directory cannot be made.

References: the statuses a POSIX shell gives (127: the program or its ``#!`` interpreter does
not exist; 126: it cannot be executed), checked against ``sh`` itself; and the one-line error
(exit 2) for a run directory in a directory the user may not write (a real one: the command
runs without root's file-permission capabilities, ``tests/support/unprivileged``).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from tests.support.unprivileged import read_only_dir, run_unprivileged

REPO = Path(__file__).resolve().parents[2]
GPUSCOPE = [sys.executable, "-m", "cli.main"]


def gpuscope(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GPUSCOPE, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _shell_status(program: Path) -> int:
    return subprocess.run(["sh", "-c", f"'{program}'"], capture_output=True).returncode


def test_a_missing_interpreter_is_recorded_and_exits_127_like_a_shell(tmp_path: Path) -> None:
    script = _script(tmp_path / "train.py", "#!/nonexistent/python3\nprint('never')\n")
    assert _shell_status(script) == 127
    run = tmp_path / "run"
    r = gpuscope("run", "-o", run, "--", script, cwd=tmp_path)
    assert r.returncode == 127, r.stderr
    assert "Traceback" not in r.stderr
    line = f"gpuscope: error: cannot start {script}: No such file or directory"
    assert f"{line} (its interpreter /nonexistent/python3 does not exist)" in r.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["exit_code"] == 127  # before: null
    assert meta["notes"] == [f"{line.removeprefix('gpuscope: error: ')} (its interpreter "
                             "/nonexistent/python3 does not exist)"]  # fmt: skip

    # the run directory is reused like any other: refused without --force, replaced with it
    again = gpuscope("run", "-o", run, "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert again.returncode == 2 and "pass --force" in again.stderr
    forced = gpuscope("run", "-o", run, "--force", "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads((run / "meta.json").read_text())["exit_code"] == 0


def test_a_program_that_cannot_be_executed_exits_126(tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"\x7fELF\x00garbage")  # executable bit, not an executable format
    blob.chmod(0o755)
    assert _shell_status(blob) == 126
    run = tmp_path / "run"
    r = gpuscope("run", "-o", run, "--", blob, cwd=tmp_path)
    assert r.returncode == 126, r.stderr
    assert f"gpuscope: error: cannot start {blob}: Exec format error" in r.stderr
    assert json.loads((run / "meta.json").read_text())["exit_code"] == 126


def test_a_run_directory_in_a_read_only_directory_is_one_line(tmp_path: Path) -> None:
    run = read_only_dir(tmp_path) / "run"
    r = run_unprivileged(["run", "-o", run, "--", sys.executable, "-c", "pass"], cwd=tmp_path)
    assert r.returncode == 2, r.stderr  # before: an internal error (PermissionError)
    assert r.stderr.splitlines() == [
        f"gpuscope: error: {run}: cannot create the run directory: Permission denied"
    ]
    assert not run.exists()


def test_a_run_directory_on_a_read_only_file_system_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def erofs(self: Path, *a: object, **k: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(Path, "mkdir", erofs)
    run = tmp_path / "run"
    marker = tmp_path / "started"
    code = f"open({str(marker)!r}, 'w').close()"
    assert main(["run", "-o", str(run), "--", sys.executable, "-c", code]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"gpuscope: error: {run}: cannot create the run directory: Read-only file system"
    ]
    assert not marker.exists()  # nothing was started
