"""The one protocol of the live-capture backends a session drives, and what they know of it.

A capture session (:class:`profiler.session.Session`) counts steps and owns the step window; at
each of its events it calls every backend it runs, in this order of life:

``start(step, t_ns)``
    the session starts (or a backend joins it) while step *step* runs, begun at *t_ns*;
``step(step, t_ns)``
    step *step* begins at *t_ns* (the previous one ended there);
``window_begin()`` / ``window_end(partial_until_ns)``
    the step window opens / closes (*partial_until_ns*: the session stopped inside it, the
    running step is cut there);
``stop(t_ns)``
    the session stops; ``cancel()`` instead drops what was recorded: the window changed before
    the first step, and the session starts the backend again with its new :attr:`context`;
``result()``
    JSON-ready facts for the rank's metadata (``ranks/rank-<r>.json``).

Backends never raise into the training process: a failing part is handed to
:attr:`SessionContext.report` and capture degrades.  Times are ``time.perf_counter_ns()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from profiler.config import StepWindow
from profiler.regions import RegionRecorder

Report = Callable[[str, BaseException | str], None]
"""``report(what, error)``: a part of the capture failed (recorded, reported once on stderr)."""


@dataclass(frozen=True)
class SessionContext:
    """What a backend knows of its session."""

    window: StepWindow
    recorder: RegionRecorder
    """The session's regions (``profiler.region``)."""
    time_base: tuple[int, int]
    """``(perf_counter_ns, time_ns)`` read together when the session started."""
    trace_file: Callable[[], Path]
    """The rank's trace file (``RUN/traces/rank-<r>.pt.trace.json.gz``), asked when written."""
    rank: Callable[[], tuple[int, int]]
    """``(rank, world_size)`` as known when asked."""
    report: Report
    torch_cuda: bool = True
    """Whether the torch profiler may record CUDA activities (not when nsys owns CUPTI)."""

    def unix_ns(self, t_perf: int) -> int:
        """*t_perf* (``perf_counter_ns``) on the Unix epoch."""
        return self.time_base[1] + (t_perf - self.time_base[0])


class Backend(Protocol):
    """A live capture running beside the program (module docstring)."""

    name: str
    """``torch``, ``cupti``, ``host`` (the trace backends) or ``nvml`` (the sampler)."""
    context: SessionContext
    """Its session; replaced (with another window) after :meth:`cancel`, before the next
    :meth:`start`."""

    def start(self, step: int, t_ns: int) -> None: ...

    def step(self, step: int, t_ns: int) -> None: ...

    def window_begin(self) -> None: ...

    def window_end(self, partial_until_ns: int | None) -> None: ...

    def stop(self, t_ns: int) -> None: ...

    def cancel(self) -> None: ...

    def result(self) -> dict[str, Any]: ...
