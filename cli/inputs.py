"""What a command-line input path is: shared by ``compare`` and ``report``."""

from __future__ import annotations

from pathlib import Path


def looks_like_summary(path: Path) -> bool:
    """A plain ``.json`` file whose first key is ``schema_version`` (Kineto uses camelCase)."""
    if not path.is_file() or not path.name.endswith(".json"):
        return False
    try:
        with path.open("rb") as f:
            head = f.read(256).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and head[1:].lstrip().startswith(b'"schema_version"')
