"""The cache's own exceptions (internal: callers turn them into a rebuild, never an exit)."""

from __future__ import annotations


class CacheCorruptError(Exception):
    """An entry failed a check (internal: the entry is removed and rebuilt, never raised out)."""


class UnencodableError(Exception):
    """A value cannot be stored exactly; the input is not cached."""
