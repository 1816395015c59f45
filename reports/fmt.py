"""Number and name formatting shared by the console tables (``–`` for a missing value).

Names come from traces and are untrusted: :func:`name_text` returns :class:`rich.text.Text`,
which rich never parses as markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

MISSING = "–"


def ms(ns: float | None) -> str:
    """Nanoseconds as milliseconds, 3 decimals with thousands separators."""
    return MISSING if ns is None else f"{ns / 1e6:,.3f}"


def us(ns: float | None) -> str:
    """Nanoseconds as microseconds, 1 decimal with thousands separators."""
    return MISSING if ns is None else f"{ns / 1e3:,.1f}"


def pct(p: float | None, digits: int = 2) -> str:
    """A percentage already in 0–100, *digits* decimals."""
    return MISSING if p is None else f"{p:.{digits}f}"


def name_text(s: Any, width: int, *, overflow: str | None = None) -> Text:
    """*s* (None → ``–``) cut to *width* characters with a trailing ``…``, as plain Text."""
    s = MISSING if s is None else str(s)
    cut = s if len(s) <= width else s[: width - 1] + "…"
    return Text(cut) if overflow is None else Text(cut, overflow=overflow)
