"""The ``gpuscope`` console script run in a fresh interpreter, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def gpuscope(
    *args: str | Path,
    cwd: Path | None = None,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the console script's entry point in a fresh interpreter (no PATH dependence);
    *env*: variables set for it, beside this process's."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from cli.main import main; sys.exit(main())",
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
