"""Real permission failures on a machine where the tests run as root.

Root writes into a ``chmod 0555`` directory (``CAP_DAC_OVERRIDE``), so a read-only directory
proves nothing there.  :func:`run_unprivileged` runs gpuscope in a child process that keeps
uid 0 but loses the capabilities that bypass file permissions (dropped from its bounding set
before ``exec``, so the new program never has them); as any other user it runs unchanged.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PR_CAPBSET_DROP = 24
DAC_CAPS = (1, 2, 3)
"""CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER (linux/capability.h)."""


def _drop_dac_caps() -> None:  # in the child, before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in DAC_CAPS:
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def read_only_dir(parent: Path, name: str = "ro") -> Path:
    """A directory no one without those capabilities may write into."""
    ro = parent / name
    ro.mkdir()
    ro.chmod(0o555)
    return ro


def run_unprivileged(
    args: Sequence[str | os.PathLike[str]], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m cli.main ARGS`` without the right to ignore file permissions."""
    root = os.geteuid() == 0
    if root and not sys.platform.startswith("linux"):
        pytest.skip("dropping root's file-permission capabilities needs Linux")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *map(str, args)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_drop_dac_caps if root else None,
        )
    except subprocess.SubprocessError as e:  # the capabilities could not be dropped here
        if isinstance(e, subprocess.TimeoutExpired):
            raise
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE here: {e}")
