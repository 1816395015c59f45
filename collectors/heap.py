"""This process's heap: freed pages handed back to the system.

The analysis commands keep freed blocks below 32 MiB in glibc's heap for the next array
(:mod:`cli.memory_settings`), and the heap is trimmed only once 256 MiB at its top are free.
Where a stage has just freed much of it and the process is about to wait, or to hold its
memory while another process works (a forked helper: the tree's peak is their sum), the pages
are handed back at once."""

from __future__ import annotations

import sys
from typing import Any

_TRIM: list[Any] = []
"""glibc's ``malloc_trim`` once looked up (``[None]`` where there is none)."""


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc ``malloc_trim``; elsewhere a no-op).

    For instance the Kineto reader's rows stage holds each table in many chunk-sized arrays,
    small enough to live in the heap, while a whole column is one large allocation of its own:
    without this, the pages of the freed pieces stay with the process and the model is
    resident about twice over."""
    if not _TRIM:
        trim = None
        if sys.platform.startswith("linux"):
            import ctypes  # looked up on the first call only

            try:
                trim = ctypes.CDLL(None).malloc_trim
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):  # not glibc (musl...)
                trim = None
        _TRIM.append(trim)
    if _TRIM[0] is not None:
        _TRIM[0](0)
