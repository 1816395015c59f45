"""The JSON summary (schema_version 1): a public interface.

The keys of the foundation issue (``ranks[].rank``, ``device``, ``window``, ``kernel_summary``,
``temporal``, ``overlap``, ``steps``) are stable; later features only *add* keys, each through
one entry in :data:`RANK_SECTIONS` (per rank) or :data:`RUN_SECTIONS` (top level).  Times are
integer nanoseconds in keys ending ``_ns``.

Sections are function references in :mod:`reports.summary.registry`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from analyzers.options import AnalysisOptions
from collectors.model import Trace
from reports.summary.registry import ALWAYS_WRITTEN, RANK_SECTIONS, RUN_SECTIONS

SCHEMA_VERSION = 1


def tool_version() -> str:
    """gpuscope's installed version (``0+unknown`` when run from a bare checkout)."""
    try:
        return version("gpuscope")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout without install
        return "0+unknown"


def build_summary(
    traces: Sequence[Trace],
    options: AnalysisOptions | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every registered section over *traces* and return the summary dict."""
    options = options or AnalysisOptions()
    extras = dict(extras or {})
    ranks = []
    for trace in traces:
        entry: dict[str, Any] = {"rank": trace.rank}
        for key, fn in RANK_SECTIONS:
            value = fn(trace, options, extras)
            if value is not None or key in ALWAYS_WRITTEN:
                entry[key] = value
        ranks.append(entry)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpuscope", "version": tool_version()},
        "sources": sorted({t.meta.source_path for t in traces if t.meta.source_path}),
        "ranks": ranks,
    }
    for key, run_fn in RUN_SECTIONS:
        value = run_fn(traces, options, extras)
        if value is not None:
            summary[key] = value
    return summary


def write_summary(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Write the summary as UTF-8 JSON (NaN is never written: sections emit ``null``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(summary, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return p
