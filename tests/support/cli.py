"""The ``gpuscope`` console script run in a fresh interpreter, as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def gpuscope(
    *args: str | Path, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the console script's entry point in a fresh interpreter (no PATH dependence)."""
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
    )
