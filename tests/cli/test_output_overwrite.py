"""Every output option refuses an existing file unless ``--force``, and a failed write is one
line naming the file (exit 2), never a half file or an internal error (issue 19).

The commands run in-process (``cli.main.main``) on the bundled two-rank sample; the references
are the bytes of the file before the command (kept unless ``--force``) and the exact one-line
message.  Read-only directories are real (an unprivileged user, ``tests/support/unprivileged``);
a read-only file system and a full disk are simulated (patched ``os.replace`` / ``os.unlink``)
or real where the kernel offers one (``/dev/full``, a file-size limit).
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from tests.support.env import REPO, SAMPLES
from tests.support.unprivileged import read_only_dir, run_unprivileged

SAMPLE = SAMPLES / "synthetic_2rank"
OLD = "existing output\n"
# a 2-row nccl-tests log of the 2017 layout (8 ranks: busbw = algbw × 2·7/8)
NCCL_LOG = """\
# Using devices
#   Rank  0 on  sm-1 device  0 [0x02] Tesla P100-SXM2-16GB
#   Rank  7 on  sm-1 device  7 [0x8a] Tesla P100-SXM2-16GB
#                                                 out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
     1000000        250000   float     sum    0.105   9.52  16.67    5e-07    0.105   9.52  16.67    5e-07
    10000000       2500000   float     sum    0.961  10.41  18.21    5e-07    0.961  10.41  18.21    5e-07
"""  # noqa: E501

# (name, argv with {out}, {summary}, {log}, {store} filled in); every output option of the CLI
CASES = [
    ("analyze --json", ["analyze", str(SAMPLE), "--no-cache", "--json", "{out}"]),
    ("analyze --html", ["analyze", str(SAMPLE), "--no-cache", "--html", "{out}"]),
    ("compare --json", ["compare", "{summary}", "{summary}", "--json", "{out}"]),
    ("compare --html", ["compare", "{summary}", "{summary}", "--html", "{out}"]),
    ("gate --json", ["gate", "{summary}", "--baseline", "{summary}", "--json", "{out}"]),
    ("gate --junit", ["gate", "{summary}", "--baseline", "{summary}", "--junit", "{out}"]),
    ("gate --markdown", ["gate", "{summary}", "--baseline", "{summary}", "--markdown", "{out}"]),
    ("history -o", ["history", "--store", "{store}", "-o", "{out}"]),
    ("nccl-tests --json", ["nccl-tests", "{log}", "--json", "{out}"]),
    ("critical-path --json", ["critical-path", str(SAMPLE), "--json", "{out}"]),
    ("report -o", ["report", "{summary}", "-o", "{out}"]),
    ("export --perfetto", ["export", str(SAMPLE), "--perfetto", "{out}"]),
]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("inputs")
    summary = d / "summary.json"
    assert main(["analyze", str(SAMPLE), "--no-cache", "--json", str(summary)]) == 0
    log = d / "all_reduce_perf.log"
    log.write_text(NCCL_LOG)
    store = d / "history.db"
    assert main(["record", str(summary), "--store", str(store), "--name", "sample"]) == 0
    return {"summary": str(summary), "log": str(log), "store": str(store)}


def _argv(template: list[str], inputs: dict[str, str], out: Path) -> list[str]:
    return [a.format(out=out, **inputs) for a in template]


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("name", "template"), CASES, ids=[c[0] for c in CASES])
def test_existing_output_is_refused_without_force_then_replaced_with_it(
    name: str,
    template: list[str],
    inputs: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out" / "existing.file"
    out.parent.mkdir()
    out.write_text(OLD)
    capsys.readouterr()
    assert main(_argv(template, inputs, out)) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"gpuscope: error: {out}: output exists; pass --force to replace it"
    assert out.read_text() == OLD

    assert main([*_argv(template, inputs, out), "--force"]) == 0
    capsys.readouterr()
    new = out.read_bytes()
    assert new and new != OLD.encode()
    assert sorted(p.name for p in out.parent.iterdir()) == ["existing.file"]  # no temp left


def test_every_output_option_has_the_one_force_flag() -> None:
    """The same flag and help text on every command that writes a file (run included)."""
    from typer.main import get_command

    from cli.main import build_app
    from cli.outputs import FORCE_HELP

    group = get_command(build_app())
    writers = {c[1][0] for c in CASES} | {"run", "commbench", "calibrate"}
    for name in sorted(writers):
        cmd = group.commands[name]  # type: ignore[attr-defined]
        (force,) = [p for p in cmd.params if "--force" in p.opts]
        assert force.help == FORCE_HELP and force.default is False, name


def test_one_file_named_for_two_outputs_is_refused_before_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both"
    argv = ["analyze", str(SAMPLE), "--no-cache", "--json", str(both), "--html", str(both)]
    assert main(argv) == 2
    assert "given for two outputs" in _one_error_line(capsys.readouterr().err)
    assert not both.exists()


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["analyze", str(SAMPLE), "--no-cache", "--html", "{out}", "--force"], "HTML report"),
        (["export", str(SAMPLE), "--perfetto", "{out}", "--force"], "Perfetto trace"),
        (["analyze", str(SAMPLE), "--no-cache", "--json", "{out}", "--force"], "JSON summary"),
    ],
    ids=["analyze --html", "export --perfetto", "analyze --json"],
)
def test_read_only_file_system_is_one_line_and_keeps_the_old_file(
    argv: list[str],
    what: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The rename and the clean-up both fail with EROFS (a mount gone read-only): before, the
    clean-up's ``unlink`` escaped as an internal error (exit 70)."""
    out = tmp_path / "out.file"
    out.write_text(OLD)
    argv = [a.format(out=out) for a in argv]
    real_replace = os.replace

    def erofs(src: object, dst: object) -> None:
        if Path(str(dst)) == out:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        real_replace(src, dst)  # type: ignore[arg-type]

    def erofs_unlink(path: object, *a: object, **k: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "replace", erofs)
    monkeypatch.setattr(os, "unlink", erofs_unlink)
    capsys.readouterr()
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"gpuscope: error: {out}: cannot write the {what}: Read-only file system"
    assert out.read_text() == OLD


def test_no_space_left_on_device_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``/dev/full`` fails every write with ENOSPC; it is a device, written through (no
    ``--force`` needed, never replaced by a file)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert main(["analyze", str(SAMPLE), "--no-cache", "--html", "/dev/full"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == (
        "gpuscope: error: /dev/full: cannot write the HTML report: No space left on device"
    )
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_device_is_written_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(SAMPLE), "--no-cache", "--json", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def _limit_file_size() -> None:  # in the child: writes past 4 KiB fail with EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_write_cut_short_leaves_the_old_summary_whole(tmp_path: Path) -> None:
    """A real failure half way through the file (the file-size limit, like a disk filling up):
    before, the summary was written in place and left cut at 4 KiB."""
    out = tmp_path / "summary.json"
    out.write_text(OLD)
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "analyze", str(SAMPLE), "--no-cache", "--json",
         str(out), "--force"],
        cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=_limit_file_size,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert line == f"gpuscope: error: {out}: cannot write the JSON summary: File too large"
    assert out.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["analyze", str(SAMPLE), "--no-cache", "--html", "{out}"], "HTML report"),
        (["export", str(SAMPLE), "--perfetto", "{out}"], "Perfetto trace"),
    ],
    ids=["analyze --html", "export --perfetto"],
)
def test_read_only_directory_for_an_unprivileged_user(
    argv: list[str], what: str, tmp_path: Path
) -> None:
    out = read_only_dir(tmp_path) / "out.file"
    proc = run_unprivileged([a.format(out=out) for a in argv], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert line == f"gpuscope: error: {out}: cannot write the {what}: Permission denied"
    assert sorted(p.name for p in out.parent.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["calibrate", "-o", "{out}"], ["commbench", "--sizes", "1K:2K", "--json", "{out}"]],
    ids=["calibrate -o", "commbench --json"],
)
def test_gpu_commands_refuse_an_existing_output_before_measuring(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No GPU, torch.distributed or torchrun is needed to learn that the file exists."""
    out = tmp_path / "existing.file"
    out.write_text(OLD)
    assert main([a.format(out=out) for a in argv]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"gpuscope: error: {out}: output exists; pass --force to replace it"
    assert out.read_text() == OLD
