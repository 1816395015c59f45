"""One forked helper process that hands its result back through a pipe (Linux).

Used by the two-process Kineto read (:mod:`collectors.kineto.parallel`) and by a rank's sections
on two CPUs (:mod:`reports.summary.forked`): :func:`fork_helper` forks a child that runs
``work(write_fd)`` and exits with its return value (3 when it raises), never running the
parent's exit handlers or flushing its buffers; :meth:`Helper.join` reads everything the child
wrote and reaps it (:meth:`Helper.read` then :meth:`Helper.reap_later`: the same without
waiting for the child's exit); :meth:`Helper.stop` kills and reaps a helper that will not be
joined.  The pipe holds 1 MiB where the system allows it (Linux ``F_SETPIPE_SZ``), so that a
result of megabytes passes in a few turns instead of one per 64 KiB.
Standard library only (the read's helper is forked before pandas is imported).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

PIPE_BYTES = 1 << 20
"""The pipe's size asked for (Linux's default limit for an unprivileged process)."""


@dataclass
class Helper:
    """A forked child and the read end of its pipe (-1 once closed)."""

    pid: int
    read_fd: int

    def join(self) -> tuple[bytes, int, resource.struct_rusage]:
        """Everything the child wrote, its exit code and its resource usage (child reaped).

        Raises:
            OSError: the pipe could not be read (the child is then stopped).
        """
        data = self.read()
        _, status, usage = os.wait4(self.pid, 0)
        self.pid = -1
        return data, os.waitstatus_to_exitcode(status), usage

    def read(self) -> bytes:
        """Everything the child wrote (the pipe closed; the child not reaped: :meth:`join`,
        :meth:`reap_later`).

        Raises:
            OSError: the pipe could not be read (the child is then stopped).
        """
        try:
            with os.fdopen(self.read_fd, "rb") as f:
                self.read_fd = -1
                return f.read()
        except BaseException:
            self.stop()
            raise

    def reap_later(self) -> None:
        """Close the pipe and reap the child in a daemon thread: for a caller that has what
        it needs from the child (its whole output, checked) and need not wait while the
        system takes down the child's memory (14 ms for the critical-path helper of the
        300 MB benchmark trace)."""
        if self.read_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.read_fd)
            self.read_fd = -1
        if self.pid > 0:
            pid, self.pid = self.pid, -1
            threading.Thread(target=_reap, args=(pid,), name="gpuscope-reap", daemon=True).start()

    def stop(self) -> None:
        """Close the pipe and kill and reap the child (nothing when already joined)."""
        if self.read_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.read_fd)
            self.read_fd = -1
        if self.pid > 0:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = -1


def _reap(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def fork_helper(work: Callable[[int], int]) -> Helper:
    """Fork a child running ``work(write_fd)`` (module docstring).

    Raises:
        OSError: no pipe or no fork here.
    """
    import fcntl  # POSIX, as fork is

    read_fd, write_fd = os.pipe()
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
    if setsize is not None:
        with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: the default
            fcntl.fcntl(write_fd, setsize, PIPE_BYTES)
    gc.freeze()  # the child then copies fewer of the pages it shares with this process
    try:
        pid = os.fork()
    except OSError:
        gc.unfreeze()
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # pragma: no cover - the child (its work is checked through the parent)
        code = 3
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):  # not the parent's handlers
                signal.signal(sig, signal.SIG_DFL)
            os.close(read_fd)
            code = work(write_fd)
        finally:
            os._exit(code)  # no atexit handlers, no flushing the parent's buffers
    gc.unfreeze()
    os.close(write_fd)
    return Helper(pid, read_fd)
