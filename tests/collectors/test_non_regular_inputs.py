"""Inputs that are not regular files (docs/reliability.md): every reader refuses a FIFO, a
shell pipe, a socket or a device at once with one line naming it, found by ``stat`` alone —
nothing blocks, and no byte of a pipe is consumed; an empty path is a usage error, not ``.``;
a symbolic link loop and a dangling link are named as such.

The FIFO cases run in this process under a per-test timeout (pytest-timeout's SIGALRM
interrupts a blocking ``open``), so a regression fails fast instead of hanging the suite.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.files import input_stat
from tests.support.cli_run import check_contract, run_cli
from tests.support.env import SAMPLES

TRACE = SAMPLES / "torch_cpu" / "rank-0.json.gz"


def _fill(arg: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        arg = arg.replace(k, v)
    return arg


def _fifo(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    os.mkfifo(p)
    return p


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["analyze", "{p}"], "t.json"),
        (["analyze", "{p}"], "t.json.gz"),
        (["analyze", "{p}"], "t.sqlite"),
        (["analyze", "{p}"], "t"),
        (["analyze", str(TRACE), "--ncu", "{p}"], "k.csv"),
        (["nccl-tests", "{p}"], "all_reduce.log"),
        (["critical-path", "{p}"], "t.json"),
        (["analyze", str(TRACE), "--peaks", "{p}", "--no-cache"], "p.toml"),
        (["gate", "{s}", "--baseline", "{s}", "--rules", "{p}"], "r.toml"),
        (["report", "{s}", "-o", "{out}", "--gate", "{p}"], "g.json"),
    ],
    ids=[
        "kineto",
        "kineto-gz",
        "nsys",
        "no-suffix",
        "ncu",
        "nccl-tests",
        "critical-path",
        "peaks",
        "gate-rules",
        "report-gate",
    ],
)
def test_a_fifo_without_a_writer_is_refused_at_once(
    tmp_path: Path, argv: list[str], name: str
) -> None:
    p = _fifo(tmp_path, name)
    fill = {"{p}": str(p), "{out}": str(tmp_path / "r.html")}
    if any("{s}" in a for a in argv):
        fill["{s}"] = str(tmp_path / "s.json")
        assert run_cli(["analyze", str(TRACE), "--json", fill["{s}"], "--no-cache"]).rc == 0
    res = run_cli([_fill(a, fill) for a in argv])
    check_contract(res, [p])
    assert res.rc == 2 and "FIFO or pipe" in res.err


@pytest.mark.timeout(20)
@pytest.mark.parametrize("command", ["analyze", "nccl-tests"])
def test_a_pipe_with_a_writer_is_refused_and_keeps_its_bytes(tmp_path: Path, command: str) -> None:
    data = TRACE.read_bytes()[:4096]
    r, w = os.pipe()
    try:
        os.write(w, data)
        res = run_cli([command, f"/dev/fd/{r}"])
        check_contract(res, [f"/dev/fd/{r}"])
        assert res.rc == 2 and "not a regular file" in res.err
        assert os.read(r, len(data) + 1) == data  # no probe took the first bytes
    finally:
        os.close(r)
        os.close(w)


def test_a_device_is_refused(tmp_path: Path) -> None:
    res = run_cli(["analyze", "/dev/zero"])  # would read forever
    check_contract(res, ["/dev/zero"])
    assert "a device" in res.err


def test_a_socket_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(p))
        with pytest.raises(InputError, match="a socket"):
            input_stat(p)


def test_an_empty_path_is_a_usage_error_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(TRACE.parent)  # "." would hold a trace
    for argv in (["analyze", ""], ["nccl-tests", ""], ["critical-path", ""]):
        res = run_cli(argv)
        assert res.rc == 2, argv
        assert len(res.err_lines) == 1 and "empty string is not an input path" in res.err, argv
    # an option typed as a Path reaches the reader as "." (Click converts it): still refused
    res = run_cli(["analyze", str(TRACE), "--ncu", ""])
    assert res.rc == 2 and len(res.err_lines) == 1 and "is a directory" in res.err


def test_a_symlink_loop_says_so(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    res = run_cli(["analyze", a])
    check_contract(res, [a])
    assert "symbolic link loop" in res.err and "no such file" not in res.err


def test_a_dangling_symlink_names_its_target(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.symlink_to(tmp_path / "gone.json")
    res = run_cli(["analyze", a])
    check_contract(res, [a])
    assert "dangling symbolic link" in res.err and "gone.json" in res.err


def test_a_fifo_inside_a_folder_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "rank-0.json.gz").write_bytes(TRACE.read_bytes())
    _fifo(tmp_path, "rank-1.json")
    res = run_cli(["analyze", tmp_path, "--no-cache"])
    check_contract(res, [tmp_path])
    assert res.rc == 0
