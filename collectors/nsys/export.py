"""``.nsys-rep`` → SQLite with the ``nsys`` command line, when it is installed.

The export is written next to the report (``report.nsys-rep`` → ``report.sqlite``) when that
folder is writable, else into ``$XDG_CACHE_HOME/gpuscope/nsys-export/`` (default
``~/.cache``); an existing export newer than the report is reused.  nsys writes to a temporary
name first, renamed on success, so an interrupted export is never read.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from collectors.errors import InputError, MissingDependencyError


def export_command(rep: Path, output: Path, nsys: str = "nsys") -> list[str]:
    """The ``nsys export`` command line that writes *output* from *rep*."""
    return [
        nsys,
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "--output",
        str(output),
        str(rep),
    ]


def cache_dir() -> Path:
    """Where exports go when the report's own folder is not writable."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuscope" / "nsys-export"


def export_target(rep: Path) -> Path:
    """``<rep without .nsys-rep>.sqlite`` beside it, or a per-report file in :func:`cache_dir`."""
    stem = rep.name[: -len(".nsys-rep")] if rep.name.endswith(".nsys-rep") else rep.stem
    beside = rep.with_name(stem + ".sqlite")
    if os.access(rep.parent, os.W_OK):
        return beside
    key = hashlib.sha256(str(rep.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / f"{stem}-{key}.sqlite"


def export_rep(rep: Path) -> Path:
    """Export *rep* to SQLite (or reuse a fresh export) and return the SQLite path.

    Raises:
        MissingDependencyError: ``nsys`` is not on PATH (the message gives the command to run).
        InputError: the report is missing or ``nsys export`` failed.
    """
    if not rep.is_file():
        raise InputError("no such file", path=rep)
    target = export_target(rep)
    if target.is_file() and target.stat().st_mtime >= rep.stat().st_mtime:
        return target
    exe = shutil.which("nsys")
    if exe is None:
        cmd = shlex.join(export_command(rep, rep.with_name(target.name)))
        raise MissingDependencyError(
            f"reading a .nsys-rep needs Nsight Systems' `nsys` on PATH; export it yourself with "
            f"`{cmd}` and pass the .sqlite file",
            path=rep,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.stem + ".gpuscope-tmp.sqlite")
    tmp.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            export_command(rep, tmp, exe), capture_output=True, text=True, check=False
        )
    except OSError as e:
        raise InputError(f"could not run nsys export: {e}", path=rep) from None
    if proc.returncode != 0 or not tmp.is_file():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()
        why = tail[-1] if tail else f"exit status {proc.returncode}"
        tmp.unlink(missing_ok=True)
        raise InputError(f"nsys export failed: {why}", path=rep)
    os.replace(tmp, target)
    return target
