"""Outputs of ``gpuscope compare``: the JSON document, rich tables, and the HTML page/section.

Everything is rendered from the JSON-ready dict of :func:`comparison_to_dict` (the same numbers
in every output): the document is :mod:`reports.compare_json`, the console tables
:mod:`reports.compare_console`, the HTML :mod:`reports.compare_html`; this module writes the
files.  Times print in ms (ns / 10⁶) or µs (ns / 10³).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reports.compare_console import TOP_ROWS, print_comparison, steps_table, view_table
from reports.compare_html import PLOTLYJS_MODES, render_page, render_section
from reports.compare_json import FORMAT, SCHEMA_VERSION, comparison_to_dict
from reports.output import write_atomic

__all__ = [
    "FORMAT",
    "PLOTLYJS_MODES",
    "SCHEMA_VERSION",
    "TOP_ROWS",
    "comparison_to_dict",
    "print_comparison",
    "render_page",
    "render_section",
    "steps_table",
    "view_table",
    "write_html",
    "write_json",
]


def write_json(doc: Mapping[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Write the document as UTF-8 JSON (no NaN: undefined values are null), atomically
    (:func:`reports.output.write_atomic`).

    Raises:
        UsageError: *path* exists without *force*, or cannot be written.
    """
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    return write_atomic(path, text, force=force, what="comparison")


def write_html(
    doc: Mapping[str, Any],
    path: str | Path,
    by: str = "kernel",
    plotlyjs: str = "inline",
    *,
    force: bool = False,
) -> Path:
    """Write :func:`render_page` to *path* atomically (:func:`reports.output.write_atomic`).

    Raises:
        UsageError: *path* exists without *force*, or cannot be written, or a bad *plotlyjs* /
            view.
    """
    text = render_page(doc, by, plotlyjs)
    return write_atomic(path, text, force=force, what="HTML page")
