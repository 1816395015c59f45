"""The readers through the cache: a Kineto file, or the Nsight Systems exports of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collectors.cache.trace_cache import TraceCache
    from collectors.model import Trace


@dataclass
class LoadOutcome:
    """How one cached load went."""

    status: str
    """``hit`` | ``built`` (no entry: parsed and stored) | ``rebuilt`` (a bad entry was
    removed, parsed and stored) | ``uncacheable`` (parsed; a value cannot be stored exactly)
    | ``bypass`` (cache not used) | ``unwritable`` (parsed; the entry could not be written)."""
    key: str | None = None
    note: str | None = None
    entry_bytes: int = 0


def read_kineto_cached(
    path: Path, cache: TraceCache | None, key: str | None = None
) -> tuple[list[Trace], LoadOutcome]:
    """One Kineto file (as :func:`collectors.kineto.read_kineto` reads it), through *cache*
    (*key*: its entry key when the caller has computed it already)."""
    from collectors.kineto import read_kineto

    def read() -> list[Trace]:
        return [read_kineto(path)]

    if cache is None:
        return read(), LoadOutcome("bypass")
    traces, outcome = cache.load("kineto", [path], read, key=key)
    if outcome.status == "hit":  # a read begun before the imports is not needed
        from collectors.kineto import early

        early.cancel(path)
    return traces, outcome


def read_nsys_cached(
    sqlite: Sequence[Path],
    reps: Sequence[Path],
    cache: TraceCache | None,
    key: str | None = None,
) -> tuple[list[Trace], LoadOutcome]:
    """Nsight Systems exports read as one run (ranks are assigned across them), through *cache*.

    ``.nsys-rep`` inputs are not cached (they are exported with ``nsys`` each time; analyse the
    exported ``.sqlite`` to benefit from the cache).
    """
    from collectors.nsys import read_nsys_files

    def read() -> list[Trace]:
        return read_nsys_files(list(sqlite), list(reps))

    if cache is None or reps:
        note = "nsys-rep inputs are not cached" if reps else None
        return read(), LoadOutcome("bypass", note=note)
    return cache.load("nsys", list(sqlite), read, key=key)
