"""The torch backend: ``torch.profiler`` driven by gpuscope's step window.

The profiler is created with ``schedule(wait, warmup, active, repeat=1)`` from the window (see
:meth:`profiler.config.StepWindow.torch_schedule_args`), so every rank records the same steps
and the trace holds ``ProfilerStep#A`` … ``ProfilerStep#B-1``; outside the window torch records
nothing.  CPU activities always, CUDA activities when a GPU is present (and nsys does not own
CUPTI); shapes and FLOP estimates are recorded (``record_shapes``, ``with_flops``).

The trace is exported when the window closes, or at :meth:`TorchCapture.stop` if the program
ends (or is interrupted) inside it: first to an uncompressed temporary file, then gzip'd to
``traces/rank-<r>.pt.trace.json.gz`` and renamed into place, so a crash never leaves a
half-written trace where the readers look.

:class:`TorchBackend` runs one capture for a session (:mod:`profiler.backends.protocol`): the
profiler is created one warm-up step before the window, not earlier, so that its per-step cost
(a ``record_function`` per step) is paid only around the window.
"""

from __future__ import annotations

import gzip
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profiler.backends.protocol import SessionContext
from profiler.config import StepWindow
from profiler.regions import RegionRecorder


class TorchCapture:
    """One ``torch.profiler.profile`` over one step window."""

    def __init__(
        self,
        window: StepWindow,
        trace_path: Callable[[], Path],
        recorder: RegionRecorder,
        *,
        cuda: bool = True,
        on_saved: Callable[[Path], None] | None = None,
    ) -> None:
        self.window = window
        self._trace_path = trace_path
        self._recorder = recorder
        self._cuda = cuda
        self._on_saved = on_saved
        self.prof: Any = None
        self.saved: Path | None = None
        self.activities: list[str] = []
        self.error: str | None = None
        self._recording_actions: tuple[Any, ...] = ()
        self._record_function: Any = None

    def start(self, first_step: int = 0) -> None:
        """Start the profiler as if *first_step* steps had already passed (its steps are then
        labelled ``ProfilerStep#<gpuscope's step index>``)."""
        import torch
        from torch.profiler import (
            ProfilerAction,
            ProfilerActivity,
            profile,
            record_function,
            schedule,
        )

        acts = [ProfilerActivity.CPU]
        self.activities = ["cpu"]
        if self._cuda and torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
            self.activities.append("cuda")
        self._recording_actions = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        self._record_function = record_function
        with warnings.catch_warnings():
            # "won't be using warmup" for a window starting at step 0: intended
            warnings.simplefilter("ignore", UserWarning)
            sched = schedule(**self.window.torch_schedule_args())
        self.prof = profile(
            activities=acts,
            schedule=sched,
            on_trace_ready=self._ready,
            record_shapes=True,
            with_flops=True,
        )
        if first_step:
            self.prof.step_num = first_step
            self.prof.current_action = sched(first_step)
        self.prof.start()
        self._update()

    @property
    def recording(self) -> bool:
        """True while the torch profiler records (inside the window)."""
        return self.prof is not None and self.prof.current_action in self._recording_actions

    def _update(self) -> None:
        self._recorder.record_function = self._record_function if self.recording else None

    def step(self) -> None:
        """Advance the schedule by one step (exports the trace when the window closes)."""
        prof = self.prof
        if prof is None:
            return
        prof.step()
        self._update()
        if self.saved is not None or prof.step_num > self.window.stop:
            # the window is over: nothing more to record, drop the profiler
            self.prof = None
            self._recorder.record_function = None
            prof.stop()

    def stop(self) -> None:
        """Stop; exports the trace if the window was open."""
        prof, self.prof = self.prof, None
        self._recorder.record_function = None
        if prof is not None:
            prof.stop()

    def _ready(self, prof: Any) -> None:
        try:
            final = self._trace_path()
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
            prof.export_chrome_trace(str(tmp))
            part = final.with_name(final.name + ".partial")
            with open(tmp, "rb") as src, gzip.open(part, "wb", compresslevel=3) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(part, final)
            tmp.unlink(missing_ok=True)
            self.saved = final
            if self._on_saved is not None:
                self._on_saved(final)
        except Exception as e:  # recorded by the session, never raised into training
            self.error = f"trace export failed: {type(e).__name__}: {e}"


class TorchBackend:
    """The torch backend of a session: one :class:`TorchCapture` over its window."""

    name = "torch"

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self._capture: TorchCapture | None = None
        self._launched = False
        self._activities: list[str] | None = None
        self._step = 0

    def start(self, step: int, t_ns: int) -> None:
        self._step = step
        self._maybe_start()

    def step(self, step: int, t_ns: int) -> None:
        self._step = step
        capture = self._capture
        if capture is None:
            self._maybe_start()
            return
        try:
            capture.step()
            if capture.error:
                self.context.report("torch profiler", capture.error)
                capture.error = None
        except Exception as e:
            self.context.report("torch profiler", e)
            self._capture = None

    def window_begin(self) -> None:
        """Nothing to do: the profiler's schedule opens its window."""

    def window_end(self, partial_until_ns: int | None) -> None:
        """Nothing to do: the profiler exports its trace when its schedule ends."""

    def stop(self, t_ns: int) -> None:
        capture, self._capture = self._capture, None
        if capture is None:
            return
        try:
            capture.stop()
            if capture.error:
                self.context.report("torch profiler", capture.error)
        except Exception as e:
            self.context.report("torch profiler", e)

    def cancel(self) -> None:
        if self._capture is not None:
            self._capture.stop()
            self._capture = None
        self._launched = False

    def result(self) -> dict[str, Any]:
        return {"torch_activities": self._activities}

    def _maybe_start(self) -> None:
        """Create the profiler when the running step is the window's warm-up step or in the
        window (once)."""
        if self._capture is not None or self._launched:
            return
        window = self.context.window
        warmup = window.torch_schedule_args()["warmup"]
        if not (window.start - warmup <= self._step < window.stop):
            return
        self._launched = True
        try:
            capture = TorchCapture(
                window, self.context.trace_file, self.context.recorder, cuda=self.context.torch_cuda
            )
            capture.start(first_step=self._step)
            self._capture = capture
            self._activities = list(capture.activities)
        except Exception as e:
            self.context.report("torch profiler", e)
            self._capture = None
