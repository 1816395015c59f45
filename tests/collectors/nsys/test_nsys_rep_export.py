""".nsys-rep input: exported with `nsys` when it is on PATH, else a clear MissingDependencyError.

The export step is proven with a fake `nsys` that writes a copy of the shared SQLite export the
shared .nsys-rep was exported from, and logs its arguments.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.errors import InputError, MissingDependencyError
from collectors.nsys import read_nsys
from tests.support.env import REPO, shared_path

REP = "nsys2023.1.2.43__recon-stream__report13.nsys-rep"
SQLITE = "nsys2023.1.2.43__recon-stream__report13.sqlite"

FAKE_NSYS = """#!{python}
import shutil, sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if {fail!r}:
    sys.stderr.write("nsys: could not open the report\\n")
    sys.exit(1)
out = sys.argv[sys.argv.index("--output") + 1]
shutil.copyfile({src!r}, out)
"""


@pytest.fixture
def rep(tmp_path: Path) -> Path:
    dst = tmp_path / "data" / "report13.nsys-rep"
    dst.parent.mkdir()
    shutil.copyfile(shared_path("nsys", REP), dst)
    return dst


def _fake_nsys(tmp_path: Path, *, fail: bool = False) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "nsys.log"
    script = bindir / "nsys"
    script.write_text(
        FAKE_NSYS.format(
            python=sys.executable, log=str(log), fail=fail, src=str(shared_path("nsys", SQLITE))
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


def test_rep_without_nsys_on_path_names_the_export_command(
    rep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MissingDependencyError) as info:
        read_nsys(rep)
    msg = str(info.value)
    want = f"nsys export --type sqlite --force-overwrite true --output {rep.parent}/report13.sqlite"
    assert want in msg and str(rep) in msg
    assert info.value.exit_code == 2
    assert not (rep.parent / "report13.sqlite").exists()


def test_cli_analyze_rep_without_nsys_exits_2_with_the_command(rep: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    r = subprocess.run(
        [sys.executable, "-m", "cli.main", "analyze", str(rep)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "nsys export --type sqlite" in r.stderr


def test_rep_is_exported_by_nsys_on_path_and_read(
    rep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _fake_nsys(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    traces = read_nsys(rep)
    exported = rep.parent / "report13.sqlite"
    assert exported.is_file()
    args = log.read_text().split()
    assert args[:5] == ["export", "--type", "sqlite", "--force-overwrite", "true"]
    assert args[-1] == str(rep)
    (direct,) = read_nsys(shared_path("nsys", SQLITE))
    (t,) = traces
    assert t.meta.source_path == str(exported)
    assert t.gpu.astype(str).equals(direct.gpu.astype(str))
    assert t.host.astype(str).equals(direct.host.astype(str))
    # a fresh export is reused: nsys is not run again
    read_nsys(rep)
    assert len(log.read_text().splitlines()) == 1


def test_rep_export_goes_to_the_cache_when_the_folder_is_read_only(
    rep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    import collectors.nsys.export as export

    monkeypatch.setattr(export.os, "access", lambda p, mode: Path(p) != rep.parent)
    (t,) = read_nsys(rep)
    out = Path(t.meta.source_path or "")
    assert out.parent == tmp_path / "cache" / "gpuscope" / "nsys-export"
    assert out.name.startswith("report13-") and out.suffix == ".sqlite"
    assert not (rep.parent / "report13.sqlite").exists()


def test_failing_nsys_export_is_an_input_error(
    rep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys(tmp_path, fail=True)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(InputError) as info:
        read_nsys(rep)
    assert "nsys export failed: nsys: could not open the report" in str(info.value)
    assert not list(rep.parent.glob("*.sqlite"))
