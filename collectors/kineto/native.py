"""The native scanner of the Kineto reader: one chunk of ``traceEvents`` into columns in C.

:func:`scan` runs the compiled scanner (``collectors/kineto/_scan.c``) over a chunk's text and
returns a :class:`NativeChunk`: the candidate activity rows as numpy columns (read from the
scanner's buffers without a copy), the distinct strings they reference, the collective
metadata records and the kept metadata events.  The scanner declines (None) whatever it does not
take on, and the chunk is then decoded by msgspec as before (:mod:`collectors.kineto.stream`);
:mod:`collectors.kineto.native_rows` turns a :class:`NativeChunk` into exactly the rows the
msgspec path makes of the same text (``tests/collectors/kineto/test_kineto_native.py``).

Where the extension was not built (no C compiler at install time), or with
``GPUSCOPE_NATIVE_SCAN=0``, every chunk takes the msgspec path.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from collectors.kineto.decode import KinetoFile


def _load() -> ModuleType | None:
    try:
        return importlib.import_module("collectors.kineto._scan")
    except ImportError:  # pragma: no cover - a build without the extension
        return None


_scan = _load()

ENV = "GPUSCOPE_NATIVE_SCAN"
"""``0``: never use the native scanner (every chunk through msgspec)."""

_INT32: tuple[str, ...] = ("name", "cat", "kind", "kernel")
_INT32 += ("input_dims", "input_types", "concrete_inputs", "input_strides")
_UINT8 = ("ts_bad", "dur_bad", "comm_hit", "mem_ts_bad", "mem_label")
_FLOAT = ("occupancy", "blocks_per_sm", "warps_per_sm", "mem_value")
DTYPES: dict[str, type] = {
    **dict.fromkeys(_INT32, np.int32),
    **dict.fromkeys(_UINT8, np.uint8),
    **dict.fromkeys(_FLOAT, np.float64),
}
"""dtype of each column the scanner returns (the others are int64)."""


def available() -> bool:
    """Whether the compiled scanner is importable."""
    return _scan is not None


def enabled() -> bool:
    """Whether chunks go through the native scanner (:data:`ENV`)."""
    return _scan is not None and os.environ.get(ENV, "").strip() != "0"


@dataclass
class NativeChunk:
    """One chunk as the native scanner read it (see ``_scan.c`` for each field).

    Columns hold one value per *candidate* (an ``X`` event whose ``cat`` is a string other than
    ``Trace``); string columns hold ids into :attr:`names` (names, ``args.kernel``),
    :attr:`cats` or :attr:`kinds`, -1 where the value is not a string; the four argument columns
    ids into :attr:`raws` (-1: absent).  The ``mem_*`` columns hold one value per sample of the
    ``[memory]`` instant events (``mem_label``: 0 Total Allocated, 1 Total Reserved).
    """

    n_events: int
    """Events in the chunk, every phase."""
    end: int
    """Offset just after the array's closing ``]`` (tail chunks)."""
    names: list[str]
    cats: list[str]
    kinds: list[str]
    raws: list[bytes]
    cols: dict[str, np.ndarray]
    comms: list[tuple[int, int, bytes]]
    """(candidate, index in ``decode.COMM_KEYS``, raw value) for each such top-level key."""
    metas: list[tuple[str, Any, Any, bytes]]
    """(name, pid, tid, raw args) of the last ``M`` event of each kept (name, pid, tid), in
    order of first appearance."""
    top: KinetoFile | None = None
    """The file's top-level keys, on the last chunk."""

    def __len__(self) -> int:
        return len(self.cols["ts"])


def scan(text: Any, start: int, stop: int, *, tail: bool = False) -> NativeChunk | None:
    """The chunk ``text[start:stop]`` (comma-separated events; *tail*: up to the array's ``]``),
    or None when the scanner declines it (or is not enabled)."""
    if _scan is None or not enabled():
        return None
    out = _scan.scan(text, start, stop, tail)
    if out is None:
        return None
    n_events, end, names, cats, kinds, raws, cols, comms, metas = out
    arrays: dict[str, np.ndarray] = {
        k: np.frombuffer(v, dtype=DTYPES.get(k, np.int64)) for k, v in cols.items()
    }
    return NativeChunk(n_events, end, names, cats, kinds, raws, arrays, comms, metas)
