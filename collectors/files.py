"""What every reader accepts as an input path (docs/reliability.md, "Inputs that are not files").

One policy for all readers: an input is a regular file (or, where a reader takes folders, a
directory); anything else — a FIFO, a shell pipe such as ``<(zcat t.json.gz)``, a socket, a
device — is refused at once with one line, found by ``stat`` alone (nothing is opened, so nothing
blocks and no byte of a pipe is consumed).  The readers need a file: the Kineto reader reads
byte ranges in parallel and may read twice, the SQLite reader needs random access, and the cache
keys a file by its content and identity.  An empty path is a usage error (``Path("")`` would
be the current directory), and a symbolic link loop is named as one.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from collectors.errors import InputError, UsageError

NOT_A_FILE = "give a file: save the stream first (e.g. `zcat t.json.gz > t.json`)"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO or pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file or directory"


IS_A_DIRECTORY = "is a directory, expected a file"


def input_stat(
    raw: str | Path, *, directories: bool = False, directory: str = IS_A_DIRECTORY
) -> os.stat_result:
    """``stat`` of an input path, which must be a regular file (or a directory when
    *directories*).

    Raises:
        UsageError: *raw* is the empty string.
        InputError: missing, a symbolic link loop, not searchable, a directory (unless
            *directories*; the message is *directory*), a FIFO, pipe, socket or device.
    """
    if str(raw) == "":
        raise UsageError("an empty string is not an input path (give a file or directory)")
    p = Path(raw)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        what = "no such file or directory"
        if p.is_symlink():
            what = f"dangling symbolic link (to {os.readlink(p)})"
        raise InputError(what, path=p) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError("symbolic link loop (too many levels of links)", path=p) from None
        if e.errno == errno.ENOTDIR:
            raise InputError("no such file (a folder on its path is a file)", path=p) from None
        raise InputError(f"cannot read: {e.strerror or e}", path=p) from None
    if stat.S_ISREG(st.st_mode):
        return st
    if stat.S_ISDIR(st.st_mode):
        if directories:
            return st
        raise InputError(directory, path=p)
    raise InputError(f"not a regular file ({_kind(st.st_mode)}); {NOT_A_FILE}", path=p)


def regular_file(raw: str | Path, *, directory: str = IS_A_DIRECTORY) -> Path:
    """*raw* as a Path after :func:`input_stat` (a regular file; never opened here)."""
    input_stat(raw, directory=directory)
    return Path(raw)
