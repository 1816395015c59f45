"""One capture session per process: step window, regions, trace, NVML sampler, rank metadata.

A session counts steps (``step()`` ends the current step; step 0 begins at ``start()``),
drives its capture backends at the step boundaries and the window's edges, keeps host-side
timings of every step and region, and writes, under ``out_dir`` (layout:
:mod:`collectors.rundir`)::

    traces/rank-<r>.pt.trace.json.gz   the trace of the window (Kineto format)
    ranks/rank-<r>.json                 this rank's metadata and host timings
    counters/<host>.csv.gz              NVML samples (local rank 0 only)

Backends (:mod:`profiler.backends`, one protocol): a trace backend — ``torch``
(``torch.profiler`` with a step schedule; the default when the program uses torch), ``cupti``
(``cupti-python``, for programs without torch), ``host`` (step and region events only) — and,
on local rank 0, the node's NVML sampler.  Sessions started by ``gpuscope run`` (from the
environment) write nothing until the first ``step()``, so launchers and helper processes that
never step leave no files.

Nothing here raises into the training process: a failing part is recorded in ``errors`` (and
reported once on stderr) and capture degrades.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from collectors.rundir import RANKS, counter_path, rank_meta_path, trace_path
from profiler import environment
from profiler.config import (
    DEFAULT_NVML_HZ,
    DEFAULT_STEPS,
    ENV_CAPTURE_PID,
    ENV_STEPS,
    CaptureConfig,
    StepWindow,
    expand_out,
    parse_steps,
)
from profiler.rank_meta import rank_meta, steps_captured, write_json
from profiler.regions import RegionRecorder, nvtx_mark, set_recorder

if TYPE_CHECKING:
    from profiler.backends.protocol import Backend, SessionContext

FLUSHED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals whose default action (terminate) the session precedes by writing the trace."""

MAX_STEP_TIMES = 1_000_000
"""Host step durations kept (8 bytes each); later steps are counted, not stored."""

_current: Session | None = None
_lock = threading.RLock()


def current() -> Session | None:
    """The process's active session, if any."""
    return _current


def _warn(msg: str) -> None:
    with contextlib.suppress(Exception):
        print(f"gpuscope: {msg}", file=sys.stderr, flush=True)


class Session:
    """A capture session (see the module docstring).

    Args:
        out: run directory (placeholders ``{date}``, ``{name}``, ``{host}``); default
            ``runs/{date}-{name}``.  Under ``gpuscope run`` its directory wins.
        steps: step window ``"A:B"`` (steps A … B-1); default ``5:10``.
        nvml_hz: NVML sampling rate (0 = none); default 10.
        backend: ``auto`` | ``torch`` | ``cupti`` | ``host``.
        config: a complete :class:`CaptureConfig` instead of the arguments above.
    """

    def __init__(
        self,
        out: str | os.PathLike[str] | None = None,
        *,
        steps: str | None = None,
        nvml_hz: float | None = None,
        backend: str | None = None,
        config: CaptureConfig | None = None,
    ) -> None:
        if config is None:
            window = parse_steps(steps or DEFAULT_STEPS)
            config = CaptureConfig(
                out_dir=expand_out(str(out) if out is not None else "runs/{date}-{name}"),
                steps=window,
                nvml_hz=DEFAULT_NVML_HZ if nvml_hz is None else float(nvml_hz),
                backend=backend or "auto",
            )
        self.config = config
        self.out_dir = Path(config.out_dir)
        self.window: StepWindow = config.steps
        self.errors: list[str] = []
        self.backend = "none"
        """The trace backend's name (:func:`profiler.backends.choose_trace_backend`)."""
        self.active = False
        self.step_index = 0
        """The step now running (0 until the first ``step()``)."""
        self.step_source: str | None = None
        self.rank_info: dict[str, Any] = {}
        self.trace_path: Path | None = None
        self.host = environment.hostname()
        self._materialized = False
        self._lazy = config.under_run
        self._recorder = RegionRecorder()
        self._context: SessionContext | None = None
        self._trace: Backend | None = None
        """The trace backend (torch, CUPTI or host), from :meth:`start` on."""
        self._nvml: Backend | None = None
        """The node's NVML sampler (local rank 0), once the session writes files."""
        self._t0_perf = 0
        self._t0_unix = 0
        self._step_t0 = 0
        self._step_ns: list[int] = []
        self._steps_total = 0
        self._in_window = False
        self._stop_reason: str | None = None
        self._prev_handlers: dict[int, Any] = {}
        """Signals whose default action :meth:`_install_signal_handlers` replaced."""
        self._auto_steps_last = False
        self._explicit_steps = False
        self._reported: set[str] = set()
        self._pid = os.getpid()

    # ------------------------------------------------------------------ helpers
    def _problem(self, what: str, err: BaseException | str) -> None:
        msg = f"{what}: {err}" if isinstance(err, str) else f"{what}: {type(err).__name__}: {err}"
        self.errors.append(msg)
        if what not in self._reported:
            self._reported.add(what)
            _warn(f"capture degraded ({msg})")

    def _unix(self, t_perf: int) -> int:
        return self._t0_unix + (t_perf - self._t0_perf)

    @property
    def rank(self) -> int:
        return int(self.rank_info.get("rank", 0))

    @property
    def materialized(self) -> bool:
        """True once the session writes files (at start for explicit sessions, else first step)."""
        return self._materialized

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Session:
        """Start capturing (idempotent; never raises)."""
        global _current
        with _lock:
            if self.active:
                return self
            if _current is not None and _current is not self:
                _warn("a capture session is already active in this process; reusing it")
                return _current
            try:
                self._start()
            except Exception as e:
                self._problem("session start", e)
                set_recorder(None)
                self.active = False
                return self
            _current = self
        return self

    def _start(self) -> None:
        self._pid = os.getpid()
        self._t0_perf = time.perf_counter_ns()
        self._t0_unix = time.time_ns()
        self._step_t0 = self._t0_perf
        self.rank_info = environment.rank_info()
        from profiler.backends import choose_trace_backend, trace_backend
        from profiler.backends.protocol import SessionContext

        self.backend = choose_trace_backend(self.config.backend)
        self._context = SessionContext(
            window=self.window,
            recorder=self._recorder,
            time_base=(self._t0_perf, self._t0_unix),
            trace_file=self._trace_file,
            rank=lambda: (self.rank, int(self.rank_info.get("world_size", 1))),
            report=self._problem,
            torch_cuda=self.config.torch_cuda,
        )
        set_recorder(self._recorder)
        self.active = True
        self._trace = trace_backend(self.backend, self._context)
        self._trace.start(self.step_index, self._step_t0)
        if not self._lazy:
            self._materialize()
        if 0 in self.window:
            self._window_begin()
        atexit.register(self._atexit)
        self._install_signal_handlers()

    def _materialize(self) -> None:
        """Create the run directory and start the node's NVML sampler (local rank 0)."""
        if self._materialized:
            return
        self._materialized = True
        if self.config.under_run:
            # processes started from now on (spawned data-loader workers...) do not capture
            os.environ[ENV_CAPTURE_PID] = str(os.getpid())
        try:
            (self.out_dir / RANKS).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._problem("run directory", e)
            return
        if self.rank_info.get("rank_source") == "default":
            self.rank_info = environment.rank_info()  # torch.distributed may be up by now
        if self.rank_info.get("local_rank", 0) == 0 and self.config.nvml_hz > 0:
            assert self._context is not None
            try:
                from profiler.backends.nvml import NvmlBackend

                self._nvml = NvmlBackend(
                    self._context, counter_path(self.out_dir, self.host), self.config.nvml_hz
                )
                self._nvml.start(self.step_index, self._step_t0)
            except Exception as e:
                self._problem("NVML sampler", e)
                self._nvml = None
        self._write_rank_meta()

    def prefer_window(self, steps: str) -> None:
        """Use the program's own ``steps`` unless ``gpuscope run --steps`` set one, as long as
        nothing has been captured yet (before the first step)."""
        if os.environ.get(ENV_STEPS) or self.step_index > 0 or not self.active:
            return
        try:
            window = parse_steps(steps)
        except ValueError as e:
            self._problem("steps", e)
            return
        if window == self.window:
            return
        self._in_window = False
        assert self._trace is not None and self._context is not None
        self._trace.cancel()
        self.window = window
        self._context = dataclasses.replace(self._context, window=window)
        self._trace.context = self._context
        self._trace.start(self.step_index, self._step_t0)
        if 0 in window:
            self._window_begin()

    def _trace_file(self) -> Path:
        self.trace_path = trace_path(self.out_dir, self.rank)
        return self.trace_path

    # ------------------------------------------------------------------ steps
    def step(self) -> None:
        """End the current step (explicit call from the program)."""
        if not self._explicit_steps:
            self._explicit_steps = True
            if self._auto_steps_last:
                # the optimizer hook already marked this boundary in this iteration
                self._auto_steps_last = False
                self.step_source = "api"
                return
        self._step("api")

    def auto_step(self) -> None:
        """End the current step from the zero-code optimizer hook (ignored once the program
        calls ``profiler.step()`` itself)."""
        if self._explicit_steps:
            return
        self._auto_steps_last = True
        self._step("optimizer")

    def _step(self, source: str) -> None:
        if not self.active:
            return
        t = time.perf_counter_ns()
        try:
            k = self.step_index
            self.step_source = source
            if len(self._step_ns) < MAX_STEP_TIMES:
                self._step_ns.append(t - self._step_t0)
            self._steps_total += 1
            self.step_index = k + 1
            self._step_t0 = t
            if self._trace is not None:
                self._trace.step(k + 1, t)
            if not self._materialized:
                self._materialize()
            elif self._nvml is not None:
                self._nvml.step(k + 1, t)
            nvtx_mark("gpuscope.step")
            if k + 1 == self.window.start and not self._in_window:
                self._window_begin()
            elif k + 1 == self.window.stop and self._in_window:
                self._window_end()
        except Exception as e:
            self._problem("step", e)

    def _window_begin(self) -> None:
        self._in_window = True
        if self._trace is not None:
            self._trace.window_begin()
        if self.config.nsys_range:
            _cuda_profiler_api("cudaProfilerStart", self)

    def _window_end(self, partial_until: int | None = None) -> None:
        self._in_window = False
        if self.config.nsys_range:
            _cuda_profiler_api("cudaProfilerStop", self)
        if self._trace is not None:
            self._trace.window_end(partial_until)
        self._write_rank_meta()

    # ------------------------------------------------------------------ stop
    def stop(self, reason: str = "stop") -> None:
        """Stop capturing: close the window (writing the trace), stop the sampler, write the
        rank metadata.  Idempotent; never raises."""
        global _current
        with _lock:
            if not self.active:
                return
            self.active = False
            if os.getpid() != self._pid:
                # a forked child (e.g. a data-loader worker) exiting: the capture is the
                # parent's; touch none of its files
                set_recorder(None)
                _current = None
                return
            self._stop_reason = reason
            t = time.perf_counter_ns()
            try:
                self._stop(t)
            except Exception as e:
                self._problem("session stop", e)
            set_recorder(None)
            if _current is self:
                _current = None
            with contextlib.suppress(Exception):
                atexit.unregister(self._atexit)
            self._restore_signal_handlers()

    def _stop(self, t: int) -> None:
        if self._trace is not None:
            self._trace.stop(t)
        if self._in_window:
            self._window_end(partial_until=t)
        if not self._materialized:
            return  # a process that never stepped (launcher, helper): leave no files
        if self._nvml is not None:
            try:
                self._nvml.stop(t)
            except Exception as e:
                self._problem("NVML sampler", e)
        self._write_rank_meta(final=True, stopped_perf=t)
        if not self.config.under_run and self.rank == 0:
            from profiler.rundir import write_meta

            try:
                write_meta(
                    self.out_dir,
                    command=list(sys.argv),
                    exit_code=None,
                    started_unix_ns=self._t0_unix,
                    ended_unix_ns=self._unix(t),
                    git=environment.git_info(),
                )
            except Exception as e:
                self._problem("meta.json", e)

    def _atexit(self) -> None:
        self.stop("exit")

    # ------------------------------------------------------------------ SIGTERM, SIGHUP
    def _install_signal_handlers(self) -> None:
        """Flush on SIGTERM (torchrun's way of stopping workers) and SIGHUP (a closed terminal
        or SSH session; ``gpuscope run`` forwards it) when the program has no handler of its
        own (an ignored signal stays ignored); the signal is then re-delivered with its default
        action, so the process still ends by it (exit status 128 + N)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in FLUSHED_SIGNALS:
            try:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, self._on_signal)
                    self._prev_handlers[sig] = signal.SIG_DFL
            except (ValueError, OSError):
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, previous in self._prev_handlers.items():
            with contextlib.suppress(Exception):
                if signal.getsignal(sig) == self._on_signal:
                    signal.signal(sig, previous)
        self._prev_handlers = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        try:
            self.stop(signal.Signals(signum).name)
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    # ------------------------------------------------------------------ metadata
    def _write_rank_meta(self, final: bool = False, stopped_perf: int | None = None) -> None:
        if not self._materialized:
            return
        try:
            meta = self.rank_meta(final=final, stopped_perf=stopped_perf)
            write_json(rank_meta_path(self.out_dir, self.rank), meta)
        except Exception as e:
            self._problem("rank metadata", e)

    def rank_meta(self, final: bool = False, stopped_perf: int | None = None) -> dict[str, Any]:
        """This rank's metadata (:func:`profiler.rank_meta.rank_meta`)."""
        trace = self.trace_path if self.trace_path and self.trace_path.exists() else None
        nvml: dict[str, Any] | None
        if self._nvml is not None:
            nvml = self._nvml.result()["nvml"]
        elif self.rank_info.get("local_rank", 0) == 0 and self.config.nvml_hz <= 0:
            nvml = {"available": False, "reason": "disabled (--nvml-hz 0)"}
        else:
            nvml = None
        return rank_meta(
            rank_info=self.rank_info,
            host=self.host,
            backend=self.backend,
            backend_facts=self._trace.result() if self._trace is not None else {},
            window=self.window,
            captured=steps_captured(self.window, self.step_index) if trace else None,
            trace=str(trace.relative_to(self.out_dir)) if trace else None,
            step_source=self.step_source,
            steps_completed=self._steps_total,
            step_times_ns=self._step_ns,
            regions=self._recorder.summary(),
            started_unix_ns=self._t0_unix,
            stopped_unix_ns=self._unix(stopped_perf) if stopped_perf is not None else None,
            stop_reason=self._stop_reason if final else None,
            nvml=nvml,
            errors=self.errors,
        )

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *exc: object) -> Literal[False]:
        self.stop("context exit")
        return False


def _cuda_profiler_api(fn: str, session: Session) -> None:
    """``cudaProfilerStart/Stop`` (nsys ``--capture-range=cudaProfilerApi``), via torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_available():
            getattr(torch.cuda.cudart(), fn)()
    except Exception as e:
        session._problem("nsys capture range", e)


def env_session() -> Session | None:
    """The session ``gpuscope run`` asked for, started on first use; None outside a run.

    A process whose ancestor already owns the capture (``GPUSCOPE_CAPTURE_PID``, e.g. a data
    loader worker started with *spawn*) gets none.
    """
    if _current is not None:
        return _current
    cfg = CaptureConfig.from_env()
    if cfg is None:
        return None
    owner = os.environ.get(ENV_CAPTURE_PID)
    if owner and owner != str(os.getpid()):
        return None
    with _lock:
        if _current is not None:
            return _current
        s = Session(config=cfg).start()
        return s if s.active else None
