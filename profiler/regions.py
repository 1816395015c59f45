"""``profiler.region(name)``: a named stretch of host time, as decorator or context manager.

One region emits, at once:

* an NVTX range in gpuscope's own NVTX domain (``gpuscope``, registered strings), only when an
  NVTX tool is attached (``NVTX_INJECTION64_PATH`` is set, e.g. under ``nsys``): without one,
  NVTX calls record nothing by NVTX's design, so they are skipped;
* a ``torch.profiler.record_function`` while the torch profiler is recording (inside the step
  window), so the region shows in the Kineto trace as a ``user_annotation``;
* a host-side timing record in the active session: per region name, the count, total, min and
  max of ``time.perf_counter_ns()`` differences (written to ``ranks/rank-<r>.json``), and, with
  the torch-less backends, one trace event per region inside the window.

Without an active session only the NVTX range remains; with ``GPUSCOPE_DISABLE=1`` a region is a
shared no-op object.  Nothing here raises into the caller.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, TypeVar, cast

from profiler.config import ENV_DISABLE, env_flag

F = TypeVar("F", bound=Callable[..., Any])

DISABLED = env_flag(ENV_DISABLE)
"""``GPUSCOPE_DISABLE=1`` at import time: every call is a no-op."""

NVTX_DOMAIN = "gpuscope"


class RegionRecorder:
    """Where regions of one session go (owned by :class:`profiler.session.Session`).

    ``stats[name] = [count, total_ns, min_ns, max_ns]`` over every region of the session;
    ``events`` collects ``(name, start_ns, end_ns, tid)`` (``perf_counter_ns`` clock) while the
    session records a trace itself (torch-less backends), else it is None;
    ``record_function`` is torch's ``record_function`` while the torch profiler records.
    """

    __slots__ = ("events", "lock", "record_function", "stats")

    def __init__(self) -> None:
        self.stats: dict[str, list[int]] = {}
        self.events: list[tuple[str, int, int, int]] | None = None
        self.record_function: Callable[[str], Any] | None = None
        self.lock = threading.Lock()

    def add(self, name: str, t0: int, t1: int) -> None:
        d = t1 - t0
        with self.lock:
            s = self.stats.get(name)
            if s is None:
                self.stats[name] = [1, d, d, d]
            else:
                s[0] += 1
                s[1] += d
                if d < s[2]:
                    s[2] = d
                if d > s[3]:
                    s[3] = d
            ev = self.events
            if ev is not None:
                ev.append((name, t0, t1, threading.get_ident()))

    def summary(self) -> dict[str, dict[str, int]]:
        """JSON-ready ``{name: {count, total_ns, min_ns, max_ns}}``."""
        with self.lock:
            return {
                k: {"count": v[0], "total_ns": v[1], "min_ns": v[2], "max_ns": v[3]}
                for k, v in sorted(self.stats.items())
            }


_recorder: RegionRecorder | None = None


def set_recorder(rec: RegionRecorder | None) -> None:
    """Install (or remove, with None) the recorder that regions report to."""
    global _recorder
    _recorder = rec


class _Nvtx:
    """Lazily created NVTX domain with one cached attributes object per region name."""

    def __init__(self) -> None:
        self.domain: Any = None
        self.attrs: dict[str, Any] = {}
        self.failed = False

    def attributes(self, name: str) -> Any:
        a = self.attrs.get(name)
        if a is None and not self.failed:
            try:
                if self.domain is None:
                    import nvtx

                    self.domain = nvtx.get_domain(NVTX_DOMAIN)
                d = self.domain
                a = d.get_event_attributes(message=d.get_registered_string(name))
                self.attrs[name] = a
            except Exception:
                self.failed = True
                return None
        return a


_nvtx: _Nvtx | None = _Nvtx() if os.environ.get("NVTX_INJECTION64_PATH") else None


def nvtx_mark(name: str) -> None:
    """An NVTX instant mark in gpuscope's domain (only with an NVTX tool attached)."""
    if _nvtx is None:
        return
    try:
        a = _nvtx.attributes(name)
        if a is not None:
            _nvtx.domain.mark(a)
    except Exception:
        pass


class _Region:
    """One use of a region (a fresh object per ``with`` / per decorated call)."""

    __slots__ = ("_extra", "_rec", "_t0", "name")

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> _Region:
        rec = self._rec = _recorder
        self._extra = None
        if (rec is not None and rec.record_function is not None) or _nvtx is not None:
            self._enter_extra(rec)
        self._t0 = perf_counter_ns()
        return self

    def _enter_extra(self, rec: RegionRecorder | None) -> None:
        """NVTX push and torch record_function (only under nsys / inside the torch window)."""
        nv = rf = None
        try:
            if _nvtx is not None:
                a = _nvtx.attributes(self.name)
                if a is not None:
                    _nvtx.domain.push_range(a)
                    nv = True
            if rec is not None and rec.record_function is not None:
                rf = rec.record_function(self.name)
                rf.__enter__()
        except Exception:
            pass
        self._extra = (nv, rf)

    def __exit__(self, *exc: object) -> bool:
        t1 = perf_counter_ns()
        rec = self._rec
        if rec is not None:
            try:  # noqa: SIM105 - contextlib.suppress costs more on this hot path
                rec.add(self.name, self._t0, t1)
            except Exception:
                pass
        if self._extra is not None:
            nv, rf = self._extra
            self._extra = None
            try:
                if rf is not None:
                    rf.__exit__(None, None, None)
                if nv:
                    _nvtx.domain.pop_range()
            except Exception:
                pass
        return False

    def __call__(self, fn: F) -> F:
        return _decorate(self.name, fn)


def _decorate(name: str, fn: F) -> F:
    """Wrap *fn* so that every call runs inside ``region(name)`` (decided at call time)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with region(name):
            return fn(*args, **kwargs)

    return cast(F, wrapper)


class _IdleRegion:
    """A region while nothing records (no session, no NVTX tool): a no-op context manager
    that, as a decorator, still wraps the function so later calls are recorded."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> _IdleRegion:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def __call__(self, fn: F) -> F:
        return _decorate(self.name, fn)


_idle: dict[str, _IdleRegion] = {}
_IDLE_CACHE_MAX = 4096


class _NoRegion:
    """The disabled region: a no-op context manager; as a decorator it returns the function."""

    __slots__ = ()

    def __enter__(self) -> _NoRegion:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def __call__(self, fn: F) -> F:
        return fn


NO_REGION = _NoRegion()


def region(name: str) -> Any:
    """A named region: ``with profiler.region("fwd"):`` or ``@profiler.region("fwd")``.

    The name should be a short constant string (it keys the per-name statistics and NVTX's
    registered strings).
    """
    if DISABLED:
        return NO_REGION
    if _recorder is None and _nvtx is None:
        idle = _idle.get(name) if type(name) is str else None
        if idle is None:
            idle = _IdleRegion(str(name))
            if len(_idle) < _IDLE_CACHE_MAX:
                _idle[idle.name] = idle
        return idle
    return _Region(name if type(name) is str else str(name))
