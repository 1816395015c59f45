"""Column conversions of the Kineto reader's rows stage (:mod:`collectors.kineto.rows`).

Values as msgspec decodes them (``Any``: their type differs between producers) become numpy
columns: exact integer nanoseconds from microseconds (:func:`us_to_ns`), int64 / float64 columns
with a sentinel for anything else, ``[x, y, z]`` triples, and :class:`Activities`, the columns
every table takes from one chunk's activity rows.  numpy only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors.kineto.decode import I_TYPES, CEvent, XEvent
from collectors.limits import TIME_LIMIT_NS

COPY_KIND_RE = re.compile(r"^(?:hip)?Memcpy\s*(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)")
"""The memcpy direction in a copy's name (``Memcpy HtoD (Pinned -> Device)`` → ``HtoD``)."""
COPY_KINDS = frozenset({"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD", "AtoH", "HtoA"})
"""Directions taken from ``args.kind`` (ROCm writes ``"HtoD"`` there) when the name has none."""

EXACT_FLOAT_LIMIT_US = 2.0**43
"""Below this magnitude a double resolves 2**-10 µs, so a decimal with at most 3 decimals is
recovered exactly by :func:`us_to_ns`'s float path."""

_LIMIT_US = TIME_LIMIT_NS // 1000

OK = 0
NOT_A_NUMBER = 1
OUT_OF_RANGE = 2
NEGATIVE_DUR = 3
NAME_NOT_TEXT = 4
REASONS = {
    NOT_A_NUMBER: "ts/dur missing, null or not a number",
    OUT_OF_RANGE: "time outside [0, 2^62] ns",
    NEGATIVE_DUR: "negative dur",
    NAME_NOT_TEXT: "name not a string",
}
"""Why an activity row or counter sample is rejected (codes of the ``bad`` arrays)."""


class InexactTimes(Exception):
    """Float microsecond values too large for the float path to recover their decimal text."""


def us_to_ns(
    values: list[Any], negative: int = OUT_OF_RANGE
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Exact integer nanoseconds from Kineto microsecond values (as decoded by msgspec), and per
    value why it is unusable (:data:`REASONS`; 0 = usable, its ns then 0).

    Integers are multiplied by 1000 exactly.  Floats are split into their integer part
    (``np.floor``; the subtraction ``x - floor(x)`` is exact in binary floating point) and the
    fraction, which is rounded to the nearest nanosecond.  This reproduces the decimal text
    exactly whenever it has at most 3 decimals and ``|x| < 2**43`` µs (about 102 days; Kineto's
    ns-resolution traces use a clock that starts at boot).  Larger non-integral floats (epoch
    microseconds with decimals) raise :class:`InexactTimes`; the caller then re-reads the
    values as exact decimals (:meth:`collectors.kineto.stream.Chunk.exact_values`).  Values that
    are not numbers (None, text, booleans, lists...) are :data:`NOT_A_NUMBER`; numbers outside
    [0, :data:`TIME_LIMIT_NS`] ns are :data:`OUT_OF_RANGE` (negative ones: *negative*).
    Vectorised: the per-value Python pass happens only for a chunk that holds a value of
    another type.

    Raises:
        InexactTimes: see above.
    """
    n = len(values)
    if not n:
        return np.empty(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    kinds = set(map(type, values))
    bad: NDArray[np.uint8] | None = None
    if kinds == {int}:
        try:
            ints_ = np.array(values, dtype=np.int64)
        except OverflowError:
            values, bad = _numbers(values, negative)
        else:
            code = _range_codes(ints_, negative)
            if code is not None:
                return np.where(code > 0, 0, ints_) * 1000, code
            return ints_ * 1000, np.zeros(n, dtype=np.uint8)
    elif not kinds <= {int, float}:
        values, bad = _numbers(values, negative)
    try:
        arr = np.array(values, dtype=np.float64)
    except OverflowError:  # an integer beyond the double range
        values, bad = _numbers(values, negative)
        arr = np.array(values, dtype=np.float64)
    code = _range_codes(arr, negative)
    if code is not None:
        arr = np.where(code > 0, 0.0, arr)
        bad = code if bad is None else np.where(bad > 0, bad, code)
    whole = np.floor(arr)
    if arr.max() >= EXACT_FLOAT_LIMIT_US and (arr != whole).any():
        raise InexactTimes
    frac_ns = np.rint((arr - whole) * 1000.0).astype(np.int64)
    ns = whole.astype(np.int64) * 1000 + frac_ns
    return ns, (np.zeros(n, dtype=np.uint8) if bad is None else bad)


def _range_codes(arr: np.ndarray, negative: int) -> NDArray[np.uint8] | None:
    """Codes of the values of *arr* (µs) outside [0, the time limit] (NaN too), or None."""
    inside = (arr >= 0) & (arr <= _LIMIT_US)
    if inside.all():
        return None
    code = np.where(arr < 0, negative, OUT_OF_RANGE).astype(np.uint8)
    return np.where(inside, 0, code).astype(np.uint8)


def _numbers(values: list[Any], negative: int) -> tuple[list[Any], NDArray[np.uint8]]:
    """*values* with every non-number (and every integer beyond the time range) replaced by 0,
    and the code of each replaced value."""
    bad = np.zeros(len(values), dtype=np.uint8)
    clean: list[Any] = []
    for i, v in enumerate(values):
        c = v.__class__
        if c is float:
            clean.append(v)
        elif c is int:
            if 0 <= v <= _LIMIT_US:
                clean.append(v)
            else:
                clean.append(0)
                bad[i] = negative if v < 0 else OUT_OF_RANGE
        else:
            clean.append(0)
            bad[i] = NOT_A_NUMBER
    return clean, bad


def decimal_us_to_ns(
    values: Sequence[Any], negative: int = OUT_OF_RANGE
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Nanoseconds from exact decimal (or integer) microseconds, rounded half-even to 1 ns, and
    why each value is unusable (as :func:`us_to_ns`)."""
    ns = np.zeros(len(values), dtype=np.int64)
    bad = np.zeros(len(values), dtype=np.uint8)
    for i, v in enumerate(values):
        if v.__class__ is int or (v.__class__ is Decimal and v.is_finite()):
            x = int(Decimal(v).scaleb(3).to_integral_value())
            if 0 <= x <= TIME_LIMIT_NS:
                ns[i] = x
            else:
                bad[i] = negative if x < 0 else OUT_OF_RANGE
        else:
            bad[i] = NOT_A_NUMBER
    return ns, bad


class Rejections:
    """How many rows of a file were rejected, and why: ``{(kind of row, reason): count}``."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def add(self, what: str, codes: NDArray[np.uint8]) -> None:
        """Count the non-zero *codes* (:data:`REASONS`) of rows of kind *what*."""
        hit = codes[codes > 0]
        if hit.size:
            for code, k in zip(*np.unique(hit, return_counts=True), strict=True):
                self.count(what, REASONS[int(code)], int(k))

    def count(self, what: str, reason: str, k: int = 1) -> None:
        self.counts[what, reason] = self.counts.get((what, reason), 0) + k

    def merge(self, counts: dict[tuple[str, str], int]) -> None:
        for (what, reason), k in counts.items():
            self.count(what, reason, k)

    def total(self, what: str) -> int:
        return sum(k for (w, _), k in self.counts.items() if w == what)

    def reasons(self, what: str) -> str:
        """``2 negative dur, 1 name not a string`` (most frequent first)."""
        items = sorted((-k, r) for (w, r), k in self.counts.items() if w == what)
        return ", ".join(f"{-k} {r}" for k, r in items)

    def note(self, what: str, of: int) -> str | None:
        """``rejected 3 of 120 activity events (2 negative dur, 1 ...)``, or None."""
        k = self.total(what)
        return f"rejected {k} of {of} {what} ({self.reasons(what)})" if k else None


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
        self.pid = ints(field(acts, "pid"))
        self.tid = ints(field(acts, "tid"))
        self.correlation = ints(field(args, "correlation"))
        self.external_id = external_ids(args)

    def rows(self, idx: np.ndarray) -> tuple[list[XEvent], list[Any]]:
        """The events and ``args`` at *idx*."""
        return pick(self.acts, idx), pick(self.args, idx)

    def args_at(self, idx: np.ndarray) -> list[Any]:
        """The ``args`` at *idx*."""
        return pick(self.args, idx)

    def comm(self, idx: np.ndarray) -> list[dict[str, Any] | None]:
        """``comm_args`` of the rows at *idx* (sorted positions)."""
        return comm_at(self.comms, idx)


def comm_at(comms: dict[int, dict[str, Any]], idx: np.ndarray) -> list[dict[str, Any] | None]:
    """``comm_args`` of the rows at *idx* (sorted positions among a chunk's activity rows), from
    *comms* ``{row: comm dict}``: None where a row has none."""
    out: list[dict[str, Any] | None] = [None] * len(idx)
    if comms:
        hits = np.fromiter(comms, np.int64, len(comms))
        at = np.searchsorted(idx, hits)
        for i, j in zip(hits.tolist(), at.tolist(), strict=True):
            if j < len(idx) and idx[j] == i:
                out[j] = comms[i]
    return out


def copy_kinds(
    name: np.ndarray,
    memcpy: list[int],
    arg_kinds: Sequence[Any],
    by_name: dict[int, str | None],
    names: Iterable[str],
) -> list[str | None]:
    """Memcpy direction of each row (None for the others) from its name (``Memcpy HtoD (Pinned
    -> Device)`` → ``HtoD``, memoised per name id in *by_name*; *names*: the strings by id),
    else from its ``args.kind`` (*arg_kinds*, one per *memcpy* row; ROCm writes ``"HtoD"``
    there).  *memcpy*: the memcpy rows' positions."""
    out: list[str | None] = [None] * len(name)
    strings: list[str] | None = None
    for i, k in zip(memcpy, arg_kinds, strict=True):
        n = int(name[i])
        if n not in by_name:
            strings = strings or list(names)
            m = COPY_KIND_RE.match(strings[n])
            by_name[n] = m.group(1) if m else None
        ck = by_name[n]
        if ck is None and k.__class__ is str and k in COPY_KINDS:
            ck = k
        out[i] = ck
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


_GETTERS: dict[str, attrgetter[Any]] = {}


def field(rows: Sequence[Any], name: str) -> list[Any]:
    """Attribute *name* of every row (one C-level pass: no Python frame per row)."""
    get = _GETTERS.get(name)
    if get is None:
        get = _GETTERS[name] = attrgetter(name)
    return list(map(get, rows))


def pick(values: list[Any], idx: np.ndarray) -> list[Any]:
    if len(idx) < 2:
        return [values[i] for i in idx.tolist()]
    return list(itemgetter(*idx.tolist())(values))


def ints(values: list[Any]) -> np.ndarray:
    """int64 column: integers kept (beyond int64 → -1), anything else (booleans too) → -1."""
    if not values:
        return np.empty(0, dtype=np.int64)
    if set(map(type, values)) == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    out = [v if v.__class__ is int and -(2**63) <= v < 2**63 else -1 for v in values]
    return np.array(out, dtype=np.int64)


def counts(values: list[Any]) -> np.ndarray:
    """int64 column of counts or sizes (``bytes``, registers, shared memory): :func:`ints`, with
    negative values → -1 (unknown)."""
    arr = ints(values)
    return np.where(arr < 0, -1, arr)


def floats(values: list[Any], *, high: float = np.inf) -> np.ndarray:
    """float64 column of non-negative figures: numbers in [0, *high*] kept, anything else
    (negative, beyond *high*, not a number, a boolean) → NaN."""
    if not values:
        return np.empty(0, dtype=np.float64)
    kinds = set(map(type, values))
    if not kinds <= {int, float}:
        values = [v if v.__class__ in (int, float) else np.nan for v in values]
    try:
        arr = np.array(values, dtype=np.float64)
    except OverflowError:  # an integer beyond the double range
        arr = np.array([v if abs(v) < 2**1023 else np.nan for v in values], dtype=np.float64)
    return np.where((arr >= 0) & (arr <= high), arr, np.nan)


def triples(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) int64 columns from ``[x, y, z]`` lists of non-negative integers; anything
    else → -1."""
    out = np.full((len(values), 3), -1, dtype=np.int64)
    has = [i for i, v in enumerate(values) if v.__class__ is list]
    if has:
        try:
            arr = np.array([values[i] for i in has])
        except (ValueError, OverflowError):
            arr = np.empty(0)
        if arr.dtype.kind == "i" and arr.ndim == 2 and arr.shape[1] == 3 and (arr >= 0).all():
            out[has] = arr
        else:
            for i in has:
                v = values[i]
                if len(v) == 3 and all(x.__class__ is int and 0 <= x < 2**63 for x in v):
                    out[i] = v
    return out[:, 0], out[:, 1], out[:, 2]


def external_ids(args: list[Any]) -> np.ndarray:
    """``External id`` (2022 traces: ``external id``), -1 when absent."""
    ext = ints(field(args, "external_id"))
    if (ext == -1).any():
        old = ints(field(args, "external_id_2022"))
        ext = np.where(ext == -1, old, ext)
    return ext


CounterRows = tuple[list[str], list[Any], list[float], list[int]]
"""Counter rows before their times are converted: names, events (for ``ts``), values,
devices."""


def counter_rows(others: list[Any]) -> tuple[CounterRows, CounterRows]:
    """``ph == "C"`` counter series and the ``[memory]`` instant events of ``profile_memory``.

    A ``C`` event yields one row per numeric ``args`` entry, named after the event when it
    has one entry and ``"<event>.<key>"`` otherwise (device -1).  A ``[memory]`` event yields
    ``Total Allocated`` and ``Total Reserved`` rows on its ``Device Id`` (-1 = CPU, or an id
    that is not an int64).

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
        nums = {k: v for k, v in e.args.items() if _finite(v)}
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
        dev = m.device_id
        dev = dev if dev.__class__ is int and _INT64_MIN <= dev < 2**63 else -1
        for label, v in (
            ("Total Allocated", m.total_allocated),
            ("Total Reserved", m.total_reserved),
        ):
            if _finite(v):
                names.append(label)
                at.append(e)
                values.append(float(v))
                devices.append(dev)
    return counters, (names, at, values, devices)


_INT64_MIN = -(2**63)


def _finite(v: Any) -> bool:
    """A number (not a boolean) that a double holds."""
    return v.__class__ is float or (v.__class__ is int and -(2**1023) < v < 2**1023)
