"""The one memo of what analyzers derive from a Trace: ``fn(trace)`` computed once per Trace.

A Trace's tables are never mutated (:class:`collectors.model.Trace`), so a table derived from
them (the collectives table, ...) can be computed once and reused by every analysis of that
Trace.  The memo is kept here, beside the analyzers, never in the model: it holds one slot per
live Trace object, keyed by identity and dropped when the Trace is garbage-collected (a Trace
is a mutable dataclass, not hashable, so a ``WeakKeyDictionary`` cannot hold it).  Nothing is
pickled with a Trace; a copy of a Trace starts with an empty slot.

The many-ranks engine seeds a stand-in Trace with the one table the cross-rank sections read
(:meth:`TraceMemo.seed`) instead of writing into the Trace.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from collectors.model import Trace

T = TypeVar("T")

_slots: dict[int, dict[object, Any]] = {}
"""id(trace) → {memo: value}; a slot lives as long as its Trace."""
_lock = threading.Lock()


def _slot(trace: Trace) -> dict[object, Any]:
    key = id(trace)
    with _lock:
        slot = _slots.get(key)
        if slot is None:
            slot = _slots[key] = {}
            weakref.finalize(trace, _slots.pop, key, None)
        return slot


class TraceMemo(Generic[T]):
    """``fn(trace)``, computed on the first call per Trace object and then reused.

    Use as a decorator on a function of one Trace.  Two threads asking at once may both
    compute it (the value is the same); the first stored value is kept.
    """

    def __init__(self, fn: Callable[[Trace], T]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, trace: Trace) -> T:
        slot = _slot(trace)
        if self in slot:
            return cast(T, slot[self])
        return cast(T, slot.setdefault(self, self.fn(trace)))

    def seed(self, trace: Trace, value: T) -> None:
        """Make *value* the memoised result for *trace* (a stand-in Trace built from a
        worker's small result: the value its full Trace gave)."""
        _slot(trace)[self] = value

    def cached(self, trace: Trace) -> bool:
        """True when *trace* has a value (computed or seeded)."""
        return self in _slots.get(id(trace), {})


def forget(trace: Trace) -> None:
    """Drop every value memoised for *trace* (each is computed again if asked for): for a
    process done with its analyses of a Trace it still holds.  Seeded values go too, so never
    for a stand-in Trace (:meth:`TraceMemo.seed`), whose tables could not compute them."""
    with _lock:
        slot = _slots.get(id(trace))
        if slot is not None:
            slot.clear()


def memoised(fn: Callable[[Trace], T]) -> TraceMemo[T]:
    """Decorator: :class:`TraceMemo` of *fn*."""
    return TraceMemo(fn)
