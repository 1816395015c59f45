"""Bounds every reader applies to what it reads (docs/reliability.md).

* :data:`TIME_LIMIT_NS`: times are kept when they lie in [0, 2**62] ns (0 to about 146 years),
  so that every time, and every difference of two times, fits int64;
* :data:`MAX_NESTING`: values kept whole from a file (Kineto collective metadata and
  ``distributedInfo``, nsys NVTX JSON payloads) may nest lists/objects this deep; deeper ones
  are dropped with a note, since a later stage (the cache's JSON codec, pickling for the worker
  pool) would run out of stack on them.
"""

from __future__ import annotations

from typing import Any

TIME_LIMIT_NS = 2**62
"""The largest time (and duration) in ns a reader keeps."""

MAX_NESTING = 32
"""How deep kept JSON values may nest."""


def nested_deeper(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether *value* (decoded JSON) has lists/objects nested more than *limit* deep
    (breadth-first: no recursion, whatever the depth)."""
    level = [value]
    for _ in range(limit + 1):
        nxt: list[Any] = []
        for v in level:
            if v.__class__ is dict:
                nxt.extend(v.values())
            elif v.__class__ is list:
                nxt.extend(v)
        if not nxt:
            return False
        level = nxt
    return True
