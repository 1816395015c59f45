"""Reading one large Kineto file with two processes.

Decoding a trace (:mod:`collectors.kineto.stream`) and turning its events into columns
(:mod:`collectors.kineto.rows`) is CPU work that one Python process does serially.  For a
large file on a machine with a spare CPU, :func:`read_rows` forks one helper process and the two
share the chunks: both gunzip the file and cut it into the same chunks, in order; at each chunk a
process claims it unless the other already has (a shared counter of claimed chunks), and decodes
only the chunks it claimed.  The one that runs ahead takes more chunks, so the work balances
itself whatever the cost of each chunk (metadata events decode faster than kernels with their
arguments).  The helper's rows are pickled back through a pipe and merged in chunk order.

The result is exactly the serial reader's:

* a reader that decodes a chunk takes the first cut that decodes, as the serial reader does; one
  that skips a chunk takes the last cut unchecked.  Both report every chunk's end offset; when
  they differ (a ``}, {`` inside a string) the parallel read is abandoned;
* anything unexpected on either side (the fork fails, the helper exits non-zero, a chunk
  needs the whole-text reader, an :class:`InputError`) raises :class:`Fallback`: the caller then
  reads the file serially, which reports errors exactly as before.

Used when :func:`wanted` says so: Linux (``fork``), at least :data:`MIN_TEXT_BYTES` of JSON, two
usable CPUs, and neither ``GPUSCOPE_READ_PROCS=1`` nor :func:`serial_reads` (the many-rank
workers of :mod:`reports.parallel` read serially: they already fill the CPUs).  The helper only
decodes and builds numpy columns (no imports, no output but its pipe; the one lock it takes was
made for it), so forking is safe even when the parent runs other threads (a progress bar).

:func:`start_early` forks the helper before the caller has imported the rest of its work (the
CLI knows its one input file before it imports pandas): the helper claims chunks on the spare CPU
while the caller imports, and the later :func:`read_rows` joins it.  This module imports only
numpy and msgspec (through the chunk reader) for that reason.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.forking import Helper, fork_helper
from collectors.kineto.native import enabled as native_enabled
from collectors.kineto.rows import RowParts, Rows, read_chunks
from collectors.kineto.source import GZIP_MAGIC
from collectors.kineto.stream import Fallback

MIN_TEXT_BYTES = 24 << 20
"""Read in parallel from this much JSON text on.  Serial / parallel read time on the 2-CPU
benchmark machine: 0.84x at 9.8 MB, 0.99x at 15.4 MB, 1.36x at 25.8 MB, 1.23x at 46.9 MB,
1.54x at 86.9 MB (the helper's fixed costs, forking, a second gunzip, merging, outweigh the
split work below about 15 MB)."""
MIN_TEXT_BYTES_NATIVE = 1 << 30
"""With the native scanner (:mod:`collectors.kineto.native`), read in parallel only from this
much JSON text on: below it one process whose scanning thread runs beside its row building
(``lookahead``, :func:`collectors.kineto.stream.stream_chunks`) reads faster than two processes
that both gunzip the file and pickle their rows across (same run, 2 CPUs: 47 MB 0.21 vs 0.31 s,
87 MB 0.30 vs 0.40 s, 300 MB 1.50 vs 2.17 s)."""
ENV = "GPUSCOPE_READ_PROCS"
"""``1``: always read serially; ``2``: in parallel whatever the number of CPUs (still only from
:data:`MIN_TEXT_BYTES` on); unset: in parallel when two CPUs are usable."""

STATS_ENV = "GPUSCOPE_READ_STATS"
"""``1``: the helper measures its private memory (:attr:`HelperStats.private_peak_kib`)."""

_serial_depth = 0
_serial_lock = threading.Lock()


@dataclass
class HelperStats:
    """The last helper process (for benchmarks)."""

    private_peak_kib: int
    """A bound on its peak private resident memory, the pickled rows included
    (:func:`private_peak_kib`; 0 unless ``GPUSCOPE_READ_STATS=1``): what it adds to the
    parent's memory."""
    cpu_s: float
    """CPU seconds it used."""
    maxrss_kib: int
    """Its peak RSS, counting the pages it shares with the parent (``ru_maxrss``)."""
    chunks: int
    """Chunks it decoded."""
    all_chunks: int
    """Chunks in the file."""


last_helper: HelperStats | None = None
"""Stats of the last helper that ran in this process (None before any)."""


@contextlib.contextmanager
def serial_reads() -> Iterator[None]:
    """Within this block, every read in this process is serial (thread-safe: Dask runs tasks
    in threads of one worker process)."""
    global _serial_depth
    with _serial_lock:
        _serial_depth += 1
    try:
        yield
    finally:
        with _serial_lock:
            _serial_depth -= 1


def spare_cpu() -> bool:
    """Whether this process may put a second CPU to work: Linux, two usable CPUs (or
    ``GPUSCOPE_READ_PROCS=2``), neither ``GPUSCOPE_READ_PROCS=1`` nor :func:`serial_reads`."""
    setting = os.environ.get(ENV, "").strip()
    if _serial_depth or setting == "1" or not sys.platform.startswith("linux"):
        return False
    return setting == "2" or usable_cpus() >= 2


def wanted(path: Path) -> bool:
    """Whether reading *path* in parallel should pay off (see the module docstring)."""
    if not spare_cpu():
        return False
    least = MIN_TEXT_BYTES_NATIVE if native_enabled() else MIN_TEXT_BYTES
    try:
        return text_bytes(path) >= least
    except OSError:
        return False  # the serial reader says what is wrong


def text_bytes(path: Path) -> int:
    """Size of the file's JSON text: the file's size, or for gzip the size its trailer records
    (modulo 2**32, of the last member: an estimate)."""
    size = path.stat().st_size
    isize = gzip_isize(path)
    return size if isize is None else max(size, isize)


def gzip_isize(path: Path) -> int | None:
    """The uncompressed size a gzip file's trailer records (ISIZE: modulo 2**32, of the last
    member only, so an estimate), or None when *path* is not gzip (or too short to be).

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("rb") as f:
        if f.read(2) != GZIP_MAGIC or f.seek(0, os.SEEK_END) < 18:  # header + trailer
            return None
        f.seek(-4, os.SEEK_END)
        return int.from_bytes(f.read(4), "little")


@dataclass
class _Helper:
    """A forked helper reading (path, include_python), and the chunk counter it shares."""

    process: Helper
    claimed: Any


_early: dict[tuple[str, bool], _Helper] = {}
"""Helpers started by :func:`start_early`, by (resolved path, include_python)."""


def start_early(path: str | Path, include_python: bool = False) -> bool:
    """Fork the helper of *path*'s parallel read now, when :func:`wanted` (True when it did).

    For a caller that knows which file it will read before it has imported what the rest of its
    work needs (the CLI, before pandas): the helper starts claiming chunks while this process
    imports, and :func:`read_rows` of the same file later joins it instead of forking another.
    A helper that is never joined is killed at exit (:func:`cancel_early`).
    """
    p = Path(path)
    try:
        key = (str(p.resolve()), include_python)
        if key in _early or not p.is_file() or not wanted(p):
            return False
        helper = _fork_helper(p, include_python)
    except (Fallback, OSError):
        return False
    if not _early:
        atexit.register(cancel_early)
    _early[key] = helper
    return True


def started_early(path: str | Path, include_python: bool = False) -> bool:
    """Whether :func:`start_early` forked a helper for *path* that no read has joined yet."""
    try:
        return (str(Path(path).resolve()), include_python) in _early
    except OSError:
        return False


def cancel_early(path: str | Path | None = None) -> None:
    """Kill and reap the helpers :func:`start_early` started that no read joined: every one, or
    those of *path*."""
    keys = list(_early)
    if path is not None:
        with contextlib.suppress(OSError):
            keys = [k for k in keys if k[0] == str(Path(path).resolve())]
    for k in keys:
        h = _early.pop(k, None)
        if h is not None:
            h.process.stop()


def _fork_helper(path: Path, include_python: bool) -> _Helper:
    """Fork the helper that reads the chunks of *path* it claims.

    Raises:
        Fallback: no shared counter or no fork here.
    """
    try:
        claimed = multiprocessing.get_context("fork").Value("q", 0)  # shared memory + a lock
    except (OSError, ImportError, ValueError):  # no /dev/shm, no sem_open...
        raise Fallback from None
    try:
        process = fork_helper(lambda fd: _helper(path, include_python, claimed, fd))
    except OSError:
        raise Fallback from None
    return _Helper(process, claimed)


def read_rows(path: Path, include_python: bool) -> RowParts:
    """All rows of *path*, read by this process and a forked helper (the one
    :func:`start_early` started for it, else a new one).

    Raises:
        Fallback: the parallel read did not succeed; read the file serially.
    """
    global last_helper
    early = None
    with contextlib.suppress(OSError):
        early = _early.pop((str(Path(path).resolve()), include_python), None)
    h = early if early is not None else _fork_helper(path, include_python)
    try:
        rows, ends = _read_own(path, include_python, h.claimed)
        data, code, usage = h.process.join()
        if code != 0:
            raise Fallback
        theirs = pickle.loads(data)
        del data
        last_helper = HelperStats(
            theirs["private_peak_kib"],
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss,
            theirs["chunks"],
            len(ends),
        )
        if theirs["ends"] != ends:
            raise Fallback  # the two readers cut the text differently
        rows.merge(theirs["rows"])
    finally:
        h.process.stop()  # nothing when joined
    if rows.top is None:
        raise Fallback
    return rows.parts()


def _read_own(path: Path, include_python: bool, claimed: Any) -> tuple[Rows, list[int]]:
    """The rows of the chunks this process claims (*claimed*: the shared count of chunks
    claimed so far) and the end offset of every chunk.

    Raises:
        Fallback: the text needs the whole-text reader.
    """
    ends: list[int] = []
    return read_chunks(path, include_python, claimed=claimed, ends=ends), ends


def _helper(path: Path, include_python: bool, claimed: Any, fd: int) -> int:
    """The forked helper: decode the chunks of *path* it claims, write them pickled to *fd*."""
    try:
        rows, ends = _read_own(path, include_python, claimed)
    except Fallback:
        return 3
    out = {"rows": rows.state(), "ends": ends, "chunks": rows.chunks}
    out["private_peak_kib"] = 0
    data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    if os.environ.get(STATS_ENV) == "1":  # measured once, at the end (reading smaps costs)
        out["private_peak_kib"] = private_peak_kib()
        del data
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0


def private_peak_kib() -> int:
    """A bound on this forked process's peak private (unshared) resident memory, KiB: its
    private memory now plus what its RSS has dropped from its peak (``VmHWM``).  Pages shared
    with the parent only ever become private, so at the peak the shared part was at least what
    it is now.  0 where ``/proc`` cannot tell."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            fields = dict(line.split()[:2] for line in f if line.endswith("kB\n"))
        with open("/proc/self/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0
    private = int(fields.get("Private_Clean:", 0)) + int(fields.get("Private_Dirty:", 0))
    return private + max(0, hwm - int(fields.get("Rss:", hwm)))


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
