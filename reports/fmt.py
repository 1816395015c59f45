"""Number and name formatting shared by the console tables (``–`` for a missing value).

Names come from traces and are untrusted: :func:`name_text` returns :class:`rich.text.Text`,
which rich never parses as markup.
"""

from __future__ import annotations

import hashlib
from typing import Any

from rich.console import OverflowMethod
from rich.text import Text

MISSING = "–"
TAG_MIN_WIDTH = 16
"""Below this width a cut name keeps only its head (no room for a tail and a tag)."""


def ms(ns: float | None) -> str:
    """Nanoseconds as milliseconds, 3 decimals with thousands separators."""
    return MISSING if ns is None else f"{ns / 1e6:,.3f}"


def us(ns: float | None) -> str:
    """Nanoseconds as microseconds, 1 decimal with thousands separators."""
    return MISSING if ns is None else f"{ns / 1e3:,.1f}"


def pct(p: float | None, digits: int = 2) -> str:
    """A percentage already in 0–100, *digits* decimals."""
    return MISSING if p is None else f"{p:.{digits}f}"


def name_tag(s: str) -> str:
    """4 hex digits identifying *s* (BLAKE2b of its UTF-8 bytes): stable across runs."""
    return hashlib.blake2b(s.encode("utf-8"), digest_size=2).hexdigest()


def cut_name(s: str, width: int) -> str:
    """*s* when it fits in *width* characters; else its head, ``…``, its tail and ``#`` with
    :func:`name_tag`, so names that differ anywhere (often only in the middle: Tensile
    ``Cijk_…`` GEMM names) stay distinguishable.  Below :data:`TAG_MIN_WIDTH`: head + ``…``."""
    if len(s) <= width:
        return s
    if width < TAG_MIN_WIDTH:
        return s[: width - 1] + "…"
    room = width - 1 - 6  # "…" and " #abcd"
    tail = room // 3
    return f"{s[: room - tail]}…{s[len(s) - tail :]} #{name_tag(s)}"


def name_text(s: Any, width: int, *, overflow: OverflowMethod | None = None) -> Text:
    """*s* (None → ``–``) cut to *width* characters by :func:`cut_name`, as plain Text."""
    s = MISSING if s is None else str(s)
    cut = cut_name(s, width)
    return Text(cut) if overflow is None else Text(cut, overflow=overflow)
