"""Writing output files: never replace one unasked, never leave half of one.

Every file gpuscope writes (the JSON summary, HTML pages, the Perfetto trace, gate JSON /
JUnit / Markdown, the history page, nccl-tests and critical-path JSON, a run's ``meta.json``)
goes through :func:`write_atomic`:

1. An existing output is refused unless ``force`` (the CLI's ``--force``); a directory is
   always refused.  Devices and FIFOs (``/dev/null``, ``/dev/stdout``, a named pipe) are not
   files to lose: they are written straight through, without ``--force``.
2. The bytes go to a temporary file beside the target (``.NAME.<random>.tmp``, same
   directory, so the same file system), are flushed to disk (``fsync``), and the temporary
   file is then renamed over the target (``os.replace``; without ``force``, ``os.link``, so
   that a file which appeared meanwhile is not replaced either).  The directory is fsynced
   after the rename, so that the new name survives a crash.
3. Any ``OSError`` on the way (read-only file system, no space left, no permission) removes the
   temporary file where it can and raises :class:`~collectors.errors.UsageError` naming the
   target (exit 2, one line): the target is then the old file, or absent — never a part.

A symbolic link as the target is followed: the file it names is replaced, the link stays.
Standard library only (the training process imports it through :mod:`profiler`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from collectors.errors import UsageError

Writer = Callable[[BinaryIO], None]
"""Writes the content to the (binary) file it is given; for outputs too large for one string."""

Data = str | bytes | Writer

_TEMP_ATTEMPTS = 16


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _kind(path: Path) -> int | None:
    """``st_mode`` of what *path* names (symbolic links followed), None when nothing."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG):
            raise UsageError(f"cannot write here: {_reason(e)}", path=path) from e
        return None  # e.g. EACCES on a parent: the write itself will say what is wrong


def check_output(path: str | os.PathLike[str], *, force: bool) -> Path:
    """Refuse *path* as an output unless it can be written: an existing file without *force*,
    or a directory (exit 2 naming it).  Returns it as a :class:`~pathlib.Path`.

    Raises:
        UsageError: *path* exists (and not *force*), or is a directory.
    """
    p = Path(path)
    mode = _kind(p)
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError("output is a directory; give a file name", path=p)
    if not force and (
        (mode is not None and stat.S_ISREG(mode)) or (mode is None and p.is_symlink())
    ):
        raise UsageError("output exists; pass --force to replace it", path=p)
    return p


def check_outputs(paths: Iterable[str | os.PathLike[str] | None], *, force: bool) -> None:
    """:func:`check_output` for each given path (None: that output was not asked for), and no
    file named for two outputs.  Commands call it before their work, so that a refusal comes
    at once, not after the analysis.

    Raises:
        UsageError: a path is refused, or given twice.
    """
    seen: set[str] = set()
    for raw in paths:
        if raw is None:
            continue
        p = check_output(raw, force=force)
        key = os.path.realpath(p)
        if key in seen:
            raise UsageError("given for two outputs; name each output differently", path=p)
        seen.add(key)


def _write_content(f: BinaryIO, data: Data) -> None:
    if isinstance(data, str):
        f.write(data.encode("utf-8"))
    elif isinstance(data, bytes | bytearray | memoryview):
        f.write(data)
    else:
        data(f)


def _temp_beside(target: Path) -> tuple[int, Path]:
    """A new, exclusively created temporary file in *target*'s directory (mode 0666 less the
    umask, as any new file; the target's mode when it exists)."""
    for _ in range(_TEMP_ATTEMPTS):
        tmp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target))


def _discard(tmp: Path) -> None:
    # on a read-only or failing file system the clean-up fails as well: nothing more to do
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _fsync_dir(directory: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    with contextlib.suppress(OSError):
        fd = os.open(directory, flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _publish(tmp: Path, target: Path, force: bool) -> None:
    """Give the finished temporary file *target*'s name."""
    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if target exists: no file is replaced unasked
    except FileExistsError:
        raise UsageError("output exists; pass --force to replace it", path=target) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        os.replace(tmp, target)  # a file system without hard links
        return
    _discard(tmp)


def write_atomic(
    path: str | os.PathLike[str], data: Data, *, force: bool = False, what: str = "output"
) -> Path:
    """Write *data* (text as UTF-8, bytes, or a :data:`Writer`) to *path* atomically (see the
    module docstring); returns *path*.  *what* names the output in error messages ("the HTML
    report").

    Raises:
        UsageError: *path* exists without *force*, is a directory, or cannot be written (the
            reason from the OS: read-only file system, no space left on device, ...).
    """
    p = check_output(path, force=force)
    mode = _kind(p)
    if mode is not None and not stat.S_ISREG(mode):
        return _write_stream(p, data, what)
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temp_beside(target)
        with open(fd, "wb") as f:
            _write_content(f, data)
            f.flush()
            os.fsync(f.fileno())
        _publish(tmp, target, force)
        tmp = None
        _fsync_dir(target.parent)
    except OSError as e:
        raise UsageError(f"cannot write the {what}: {_reason(e)}", path=p) from e
    finally:
        if tmp is not None:
            _discard(tmp)
    return p


def _write_stream(p: Path, data: Data, what: str) -> Path:
    """Write to a device or FIFO as it is (no rename is possible, nothing is lost)."""
    try:
        with open(p, "wb") as f:
            _write_content(f, data)
    except OSError as e:
        raise UsageError(f"cannot write the {what}: {_reason(e)}", path=p) from e
    return p
