"""``meta.json`` of a ``gpuscope run`` directory, read for the summary (fields in
docs/capture.md; the profiler writes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

META = "meta.json"


def read_run_meta(run_dir: str | Path | None) -> dict[str, Any] | None:
    """The parsed ``RUN/meta.json``; None when *run_dir* is None or the file is absent,
    unreadable, not JSON or not an object (the summary then has no run facts)."""
    if not run_dir:
        return None
    try:
        meta = json.loads(Path(run_dir, META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None
