"""Column conversions of the Kineto reader's rows stage (:mod:`collectors.kineto.rows`).

Values as msgspec decodes them (``Any``: their type differs between producers) become numpy
columns: exact integer nanoseconds from microseconds (:func:`us_to_ns`), int64 / float64 columns
with a sentinel for anything else, ``[x, y, z]`` triples, and :class:`Activities`, the columns
every table takes from one chunk's activity rows.  numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors.errors import InputError
from collectors.kineto.decode import I_TYPES, CEvent, XEvent

EXACT_FLOAT_LIMIT_US = 2.0**43
"""Below this magnitude a double resolves 2**-10 µs, so a decimal with at most 3 decimals is
recovered exactly by :func:`us_to_ns`'s float path."""


class InexactTimes(Exception):
    """Float microsecond values too large for the float path to recover their decimal text."""


def us_to_ns(values: list[Any], path: Path, what: str) -> NDArray[np.int64]:
    """Exact integer nanoseconds from Kineto microsecond values (as decoded by msgspec).

    Integers are multiplied by 1000 exactly.  Floats are split into their integer part
    (``np.floor``; the subtraction ``x - floor(x)`` is exact in binary floating point) and the
    fraction, which is rounded to the nearest nanosecond.  This reproduces the decimal text
    exactly whenever it has at most 3 decimals and ``|x| < 2**43`` µs (about 102 days; Kineto's
    ns-resolution traces use a clock that starts at boot).  Larger non-integral floats (epoch
    microseconds with decimals) raise :class:`InexactTimes`; the caller then re-reads the
    values as exact decimals (:meth:`collectors.kineto.stream.Chunk.exact_values`).

    Raises:
        InputError: a value is not a number.
        InexactTimes: see above.
    """
    if not values:
        return np.empty(0, dtype=np.int64)
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        arr = np.asarray(values, dtype=object)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64) * 1000
    if arr.dtype.kind == "f":
        whole = np.floor(arr)
        if not np.isfinite(arr).all():
            raise InputError(f"event '{what}' holds a non-finite number", path=path)
        if np.abs(arr).max() >= EXACT_FLOAT_LIMIT_US and (arr != whole).any():
            raise InexactTimes(what)
        frac_ns = np.rint((arr - whole) * 1000.0).astype(np.int64)
        return whole.astype(np.int64) * 1000 + frac_ns
    bad = next((v for v in values if type(v) not in (int, float)), None)
    raise InputError(f"event '{what}' holds a non-numeric value {bad!r}", path=path)


def decimal_us_to_ns(values: Sequence[Decimal]) -> NDArray[np.int64]:
    """Nanoseconds from exact decimal microseconds, rounded half-even to 1 ns."""
    return np.array([int(v.scaleb(3).to_integral_value()) for v in values], dtype=np.int64)


EMPTY_INTS = np.zeros(0, dtype=np.int64)


class Activities:
    """One chunk's activity rows and the columns every table takes from them."""

    def __init__(
        self,
        acts: list[XEvent],
        args: list[Any],
        name: np.ndarray,
        cat: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        stream: np.ndarray,
        comms: dict[int, dict[str, Any]],
        position: np.ndarray,
    ) -> None:
        self.acts = acts
        self.position = position
        """Each row's position among its chunk's events."""
        self.args = args
        self.name = name
        self.cat = cat
        self.start = start
        self.end = end
        self.stream = stream
        self.comms = comms
        self.pid = ints([e.pid for e in acts])
        self.tid = ints([e.tid for e in acts])
        self.correlation = ints([a.correlation for a in args])
        self.external_id = external_ids(args)

    def rows(self, idx: np.ndarray) -> tuple[list[XEvent], list[Any]]:
        """The events and ``args`` at *idx*."""
        return pick(self.acts, idx), pick(self.args, idx)

    def args_at(self, idx: np.ndarray) -> list[Any]:
        """The ``args`` at *idx*."""
        return pick(self.args, idx)

    def comm(self, idx: np.ndarray) -> list[dict[str, Any] | None]:
        """``comm_args`` of the rows at *idx* (sorted positions)."""
        out: list[dict[str, Any] | None] = [None] * len(idx)
        if self.comms:
            hits = np.fromiter(self.comms, np.int64, len(self.comms))
            at = np.searchsorted(idx, hits)
            for i, j in zip(hits.tolist(), at.tolist(), strict=True):
                if j < len(idx) and idx[j] == i:
                    out[j] = self.comms[i]
        return out


def gpu_user_part(cols: Activities, idx: np.ndarray) -> dict[str, Any]:
    """The ``gpu_user`` part of the rows at *idx* (their stream, else their thread)."""
    tid = cols.tid[idx]
    stream = cols.stream[idx]
    return {
        "name": cols.name[idx],
        "start_ns": cols.start[idx],
        "end_ns": cols.end[idx],
        "pid": cols.pid[idx],
        "tid": tid,
        "stream": np.where(stream != -1, stream, tid),
    }


def pick(values: list[Any], idx: np.ndarray) -> list[Any]:
    if len(idx) < 2:
        return [values[i] for i in idx.tolist()]
    return list(itemgetter(*idx.tolist())(values))


def ints(values: list[Any]) -> np.ndarray:
    """int64 column: integers kept (uint64 beyond int64 → -1), anything else → -1."""
    arr = np.array(values) if values else np.empty(0, dtype=np.int64)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    out = [v if v.__class__ is int and -(2**63) <= v < 2**63 else -1 for v in values]
    return np.array(out, dtype=np.int64)


def floats(values: list[Any]) -> np.ndarray:
    """float64 column: numbers kept, anything else → NaN."""
    arr = np.array(values) if values else np.empty(0, dtype=np.float64)
    if arr.dtype.kind in "if":
        return arr.astype(np.float64, copy=False)
    out = [v if v.__class__ in (int, float) else np.nan for v in values]
    return np.array(out, dtype=np.float64)


def triples(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) int64 columns from ``[x, y, z]`` lists; anything else → -1."""
    out = np.full((len(values), 3), -1, dtype=np.int64)
    has = [i for i, v in enumerate(values) if v.__class__ is list]
    if has:
        try:
            arr = np.array([values[i] for i in has])
        except ValueError:
            arr = np.empty(0)
        if arr.dtype.kind == "i" and arr.ndim == 2 and arr.shape[1] == 3:
            out[has] = arr
        else:
            for i in has:
                v = values[i]
                if len(v) == 3 and all(x.__class__ is int for x in v):
                    out[i] = v
    return out[:, 0], out[:, 1], out[:, 2]


def external_ids(args: list[Any]) -> np.ndarray:
    """``External id`` (2022 traces: ``external id``), -1 when absent."""
    ext = ints([a.external_id for a in args])
    if (ext == -1).any():
        old = ints([a.external_id_2022 for a in args])
        ext = np.where(ext == -1, old, ext)
    return ext


CounterRows = tuple[list[str], list[Any], list[float], list[int]]
"""Counter rows before their times are converted: names, events (for ``ts``), values,
devices."""


def counter_rows(others: list[Any]) -> tuple[CounterRows, CounterRows]:
    """``ph == "C"`` counter series and the ``[memory]`` instant events of ``profile_memory``.

    A ``C`` event yields one row per numeric ``args`` entry, named after the event when it
    has one entry and ``"<event>.<key>"`` otherwise (device -1).  A ``[memory]`` event yields
    ``Total Allocated`` and ``Total Reserved`` rows on its ``Device Id`` (-1 = CPU).

    Returns:
        The counter rows and the ``[memory]`` rows.
    """
    names: list[str] = []
    at: list[Any] = []
    values: list[float] = []
    devices: list[int] = []
    for e in others:
        if e.__class__ is not CEvent or not isinstance(e.args, dict):
            continue
        nums = {k: v for k, v in e.args.items() if v.__class__ in (int, float)}
        base = e.name if e.name.__class__ is str else "counter"
        for k, v in nums.items():
            names.append(base if len(nums) == 1 else f"{base}.{k}")
            at.append(e)
            values.append(float(v))
            devices.append(-1)
    counters = (names, at, values, devices)
    names, at, values, devices = [], [], [], []
    for e in others:
        if e.__class__ not in I_TYPES or e.name != "[memory]":
            continue
        m = e.args
        dev = m.device_id if m.device_id.__class__ is int else -1
        for label, v in (
            ("Total Allocated", m.total_allocated),
            ("Total Reserved", m.total_reserved),
        ):
            if v.__class__ in (int, float):
                names.append(label)
                at.append(e)
                values.append(float(v))
                devices.append(dev)
    return counters, (names, at, values, devices)
