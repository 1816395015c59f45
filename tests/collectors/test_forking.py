"""One forked helper (collectors.forking): what the child writes comes back whole, through a
pipe of 1 MiB where the system allows it; a child is reaped whether joined, reaped later or
stopped."""

from __future__ import annotations

import fcntl
import os
import time

import pytest

from collectors.forking import PIPE_BYTES, fork_helper

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def _write(data: bytes):
    def work(fd: int) -> int:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return 7

    return work


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether *pid* has been reaped (by someone else) within *within_s*."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


def test_a_joined_helper_gives_its_output_exit_code_and_is_reaped() -> None:
    data = os.urandom(3 << 20)
    helper = fork_helper(_write(data))
    pid = helper.pid
    out, code, _ = helper.join()
    assert out == data and code == 7
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_helper_read_then_reaped_later_gives_its_whole_output_and_leaves_no_zombie() -> None:
    data = os.urandom(9 << 20)  # a critical-path part table's size
    helper = fork_helper(_write(data))
    pid = helper.pid
    assert helper.read() == data
    helper.reap_later()
    assert helper.pid == -1 and helper.read_fd == -1
    assert _gone(pid)  # reaped by the thread: no zombie left (kill(pid, 0) fails)


def test_the_pipe_holds_a_mebibyte_where_the_system_allows_it() -> None:
    getsize = getattr(fcntl, "F_GETPIPE_SZ", None)
    if getsize is None:
        pytest.skip("no F_GETPIPE_SZ on this platform (not Linux)")
    with open("/proc/sys/fs/pipe-max-size") as f:
        allowed = int(f.read())
    helper = fork_helper(_write(b"x"))
    try:
        size = fcntl.fcntl(helper.read_fd, getsize)
    finally:
        helper.join()
    assert size == (PIPE_BYTES if allowed >= PIPE_BYTES else 65536)
