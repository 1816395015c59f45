"""The JSON summary and the engine that builds it (docs/scale.md).

``from reports.summary import build_summary, write_summary, SCHEMA_VERSION`` is the public entry.
"""

from __future__ import annotations

from reports.summary.assemble import SCHEMA_VERSION, build_summary, write_summary

__all__ = ["SCHEMA_VERSION", "build_summary", "write_summary"]
