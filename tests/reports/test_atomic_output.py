"""Output files are written atomically and never replaced unasked (reports/output.py).

Failures are simulated here (``os.replace`` / ``os.open`` / ``os.unlink`` / ``os.fsync``
patched to raise the errno a read-only or full file system gives); the real ones (a read-only
directory, ``/dev/full``, a file-size limit) are in ``tests/cli/test_output_overwrite.py``.
The reference in every case: the target holds its old bytes (or does not exist), no temporary
file is left beside it, and the error is one :class:`UsageError` naming the target.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

import pytest

from collectors.errors import UsageError
from reports import output
from reports.output import check_outputs, write_atomic

OLD = "old content\n"


def _raise(code: int):
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    return fail


def _only(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_new_file_is_written_with_its_parent_directories(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.json"
    assert write_atomic(target, "{}\n") == target
    assert target.read_text() == "{}\n"
    assert _only(target.parent) == ["out.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # as any new file


def test_existing_file_is_refused_without_force_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    target.write_text(OLD)
    with pytest.raises(UsageError) as e:
        write_atomic(target, "new")
    assert str(e.value) == f"{target}: output exists; pass --force to replace it"
    assert target.read_text() == OLD and _only(tmp_path) == ["out.html"]


def test_force_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text(OLD)
    target.chmod(0o640)
    write_atomic(target, b"new bytes", force=True)
    assert target.read_bytes() == b"new bytes"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _only(tmp_path) == ["out.json"]


def test_a_directory_is_refused_even_with_force(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="output is a directory"):
        write_atomic(tmp_path, "x", force=True)


def test_a_file_that_appears_during_the_write_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "out.json"

    def writer(f: BinaryIO) -> None:
        f.write(b"ours")
        target.write_text("another process's")  # created after the check, before the rename

    with pytest.raises(UsageError, match="output exists"):
        write_atomic(target, writer)
    assert target.read_text() == "another process's"
    assert _only(tmp_path) == ["out.json"]


def test_a_symbolic_link_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.html"
    real.write_text(OLD)
    link = tmp_path / "link.html"
    link.symlink_to(real)
    with pytest.raises(UsageError, match="output exists"):
        write_atomic(link, "new")
    write_atomic(link, "new", force=True)
    assert link.is_symlink() and real.read_text() == "new"


def test_devices_are_written_through_without_force() -> None:
    assert write_atomic("/dev/null", "anything") == Path("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # not replaced by a regular file


def test_read_only_file_system_on_rename_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.json"
    target.write_text(OLD)
    monkeypatch.setattr(output.os, "replace", _raise(errno.EROFS))
    with pytest.raises(UsageError) as e:
        write_atomic(target, "new", force=True, what="JSON summary")
    assert str(e.value) == f"{target}: cannot write the JSON summary: Read-only file system"
    assert target.read_text() == OLD and _only(tmp_path) == ["out.json"]


def test_read_only_file_system_where_the_clean_up_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount turned read-only under the write: the rename fails with EROFS, and so does the
    ``unlink`` of the temporary file — that must not become an internal error."""
    target = tmp_path / "r.html"
    target.write_text(OLD)
    monkeypatch.setattr(output.os, "replace", _raise(errno.EROFS))
    monkeypatch.setattr(output.os, "unlink", _raise(errno.EROFS))
    with pytest.raises(UsageError, match="cannot write the HTML report: Read-only file system"):
        write_atomic(target, "x", force=True, what="HTML report")
    assert target.read_text() == OLD


def test_read_only_file_system_at_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output.os, "open", _raise(errno.EROFS))
    monkeypatch.setattr(output.os, "unlink", _raise(errno.EROFS))
    with pytest.raises(UsageError, match="cannot write the Perfetto trace: Read-only file system"):
        write_atomic(tmp_path / "t.json", "x", what="Perfetto trace")
    assert _only(tmp_path) == []


def test_disk_full_while_writing_leaves_no_half_file(tmp_path: Path) -> None:
    target = tmp_path / "trace.json"
    target.write_text(OLD)

    def writer(f: BinaryIO) -> None:
        f.write(b'{"traceEvents": [')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(UsageError, match="No space left on device"):
        write_atomic(target, writer, force=True)
    assert target.read_text() == OLD and _only(tmp_path) == ["trace.json"]


def test_disk_full_reported_by_fsync_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output.os, "fsync", _raise(errno.ENOSPC))
    with pytest.raises(UsageError, match="No space left on device"):
        write_atomic(tmp_path / "new.json", "x" * 100_000)
    assert _only(tmp_path) == []


def test_one_file_for_two_outputs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="given for two outputs"):
        check_outputs([tmp_path / "x", None, tmp_path / "." / "x"], force=True)
    check_outputs([tmp_path / "x", None, tmp_path / "y"], force=False)
