"""Raw-file facts that HTA's critical-path output is keyed by, for comparing with it.

HTA numbers events by their position in ``traceEvents``; :func:`raw_events` reads the raw file
(test side only, with the stdlib ``json`` module) so that a test can name an event by that
position and check the trace model's ``event_index`` against it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def raw_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as f:
        return list(json.load(f)["traceEvents"])
