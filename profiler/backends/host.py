"""The host backend: the step window's steps and regions, timed by the session, as a Kineto trace.

For programs without torch or CUPTI (and as the base of the CUPTI backend,
:mod:`profiler.backends.cupti`): inside the window every step (``ProfilerStep#N``) and every
``profiler.region`` becomes a ``user_annotation`` event of the main process, with the session's
own host timings to the nanosecond; the trace is written when the window closes (or when the
session stops inside it) to the rank's trace file (:func:`profiler.kineto_writer.write_trace`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from profiler.backends.protocol import SessionContext
from profiler.kineto_writer import complete_event, write_trace


class HostBackend:
    """Steps and regions of the window (module docstring); see :mod:`profiler.backends.protocol`
    for the methods."""

    name = "host"

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self._step = 0
        self._step_t0 = 0
        self._steps: list[tuple[int, int, int]] | None = None
        """``(step, start, end)`` of the window's steps while it is open, else None."""

    def start(self, step: int, t_ns: int) -> None:
        self._step, self._step_t0 = step, t_ns

    def step(self, step: int, t_ns: int) -> None:
        if self._steps is not None:
            self._steps.append((self._step, self._step_t0, t_ns))
        self._step, self._step_t0 = step, t_ns

    def window_begin(self) -> None:
        self.context.recorder.events = []
        self._steps = []

    def window_end(self, partial_until_ns: int | None) -> None:
        self._cut(partial_until_ns)
        self._write([], 0)

    def stop(self, t_ns: int) -> None:
        """Nothing to do: the session closes an open window first (:meth:`window_end`)."""

    def cancel(self) -> None:
        self.context.recorder.events = None
        self._steps = None

    def result(self) -> dict[str, Any]:
        return {}

    def _cut(self, partial_until_ns: int | None) -> None:
        """The running step, cut at *partial_until_ns* (the session stopped inside the window)."""
        if partial_until_ns is not None and self._steps is not None:
            self._steps.append((self._step, self._step_t0, partial_until_ns))

    def _write(self, records: list[dict[str, Any]], offset_ns: int) -> None:
        """The window's trace: its steps, regions and GPU *records* (CUPTI, moved onto the Unix
        epoch by *offset_ns*); nothing when the window recorded nothing."""
        ctx = self.context
        steps, self._steps = self._steps or [], None
        regions, ctx.recorder.events = ctx.recorder.events or [], None
        if not steps and not regions and not records:
            return
        unix = ctx.unix_ns
        # baseTimeNanoseconds: the whole second at or before every event, so that no ``ts`` is
        # negative (readers reject negative times) even when the GPU clock's offset puts a
        # record before the session's start
        first = min([ctx.time_base[1], *(int(r["start"]) + offset_ns for r in records)])
        base = (first // 1_000_000_000) * 1_000_000_000
        pid = os.getpid()
        main_tid = threading.main_thread().ident or 0
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}
        ]
        for k, s, e in steps:
            events.append(
                complete_event(
                    f"ProfilerStep#{k}", "user_annotation", unix(s), unix(e), pid, main_tid, base
                )
            )
        for name, s, e, tid in regions:
            events.append(complete_event(name, "user_annotation", unix(s), unix(e), pid, tid, base))
        if records:
            from profiler.backends.cupti_events import to_kineto_events

            events += to_kineto_events(records, offset_ns=offset_ns, base_ns=base)
        try:
            rank, world_size = ctx.rank()
            write_trace(
                ctx.trace_file(),
                events,
                base_time_ns=base,
                rank=rank,
                world_size=world_size,
                extra={"gpuscope": {"backend": self.name, "window": str(ctx.window)}},
            )
        except Exception as e:
            ctx.report("trace write", e)
