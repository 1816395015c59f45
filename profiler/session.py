"""One capture session per process: step window, regions, trace, NVML sampler, rank metadata.

A session counts steps (``step()`` ends the current step; step 0 begins at ``start()``),
drives the capture backend over the step window, keeps host-side timings of every step and
region, runs the node's NVML sampler when it is local rank 0, and writes, under ``out_dir``::

    traces/rank-<r>.pt.trace.json.gz   the trace of the window (Kineto format)
    ranks/rank-<r>.json                 this rank's metadata and host timings
    counters/<host>.csv.gz              NVML samples (local rank 0 only)

Backends: ``torch`` (``torch.profiler`` with a step schedule; the default when the program uses
torch), ``cupti`` (``cupti-python``, for programs without torch), ``host`` (step and region
events only).  Sessions started by ``gpuscope run`` (from the environment) write nothing until
the first ``step()``, so launchers and helper processes that never step leave no files.

Nothing here raises into the training process: a failing part is recorded in ``errors`` (and
reported once on stderr) and capture degrades.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from profiler import environment
from profiler.config import (
    DEFAULT_NVML_HZ,
    DEFAULT_STEPS,
    ENV_CAPTURE_PID,
    ENV_STEPS,
    CaptureConfig,
    StepWindow,
    parse_steps,
)
from profiler.regions import RegionRecorder, nvtx_mark, set_recorder

RANK_META_VERSION = 1
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


def expand_out(template: str, name: str | None = None) -> str:
    """Fill ``{date}`` (YYYY-mm-dd-HHMMSS), ``{name}`` (script name) and ``{host}``."""
    script = name or Path(sys.argv[0] if sys.argv and sys.argv[0] else "python").stem or "run"
    date = _dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    try:
        return template.format(date=date, name=script, host=environment.hostname())
    except (KeyError, IndexError, ValueError):
        return template


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
        self._torch: Any = None
        self._torch_activities: list[str] | None = None
        self._torch_launched = False
        self._cupti: Any = None
        self._sampler: Any = None
        self._nvml_status: dict[str, Any] | None = None
        self._t0_perf = 0
        self._t0_unix = 0
        self._step_t0 = 0
        self._step_ns: list[int] = []
        self._steps_total = 0
        self._step_events: list[tuple[int, int, int]] | None = None
        self._in_window = False
        self._window_done = False
        self._stop_reason: str | None = None
        self._prev_sigterm: Any = None
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
        self.backend = self._choose_backend()
        set_recorder(self._recorder)
        self.active = True
        self._maybe_start_torch()
        if not self._lazy:
            self._materialize()
        if 0 in self.window:
            self._window_begin()
        atexit.register(self._atexit)
        self._install_sigterm()

    def _choose_backend(self) -> str:
        want = self.config.backend
        if want == "host":
            return "host"
        if want == "torch" or (want == "auto" and "torch" in sys.modules):
            return "torch" if _importable("torch") else "host"
        if want == "cupti" or want == "auto":
            if _importable("cupti"):
                return "cupti"
            if want == "auto" and _importable("torch"):
                return "torch"
        return "host"

    def _materialize(self) -> None:
        """Create the run directory and start the node's NVML sampler (local rank 0)."""
        if self._materialized:
            return
        self._materialized = True
        if self.config.under_run:
            # processes started from now on (spawned data-loader workers...) do not capture
            os.environ[ENV_CAPTURE_PID] = str(os.getpid())
        try:
            (self.out_dir / "ranks").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._problem("run directory", e)
            return
        if self.rank_info.get("rank_source") == "default":
            self.rank_info = environment.rank_info()  # torch.distributed may be up by now
        if self.rank_info.get("local_rank", 0) == 0 and self.config.nvml_hz > 0:
            try:
                from collectors.nvml import NvmlSampler

                self._sampler = NvmlSampler(
                    self.out_dir / "counters" / f"{self.host}.csv.gz",
                    self.config.nvml_hz,
                    time_base=(self._t0_perf, self._t0_unix),
                )
                if self._sampler.start():
                    self._sampler.mark_step(self.step_index, self._step_t0)
                else:
                    self._nvml_status = self._sampler.status()
                    self._sampler = None
            except Exception as e:
                self._problem("NVML sampler", e)
                self._sampler = None
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
        if self._in_window:
            self._in_window = False
            self._recorder.events = None
            self._step_events = None
            if self._cupti is not None:
                with contextlib.suppress(Exception):
                    self._cupti.stop()
                self._cupti = None
        if self._torch is not None:
            self._torch.stop()
            self._torch = None
        self._torch_launched = False
        self.window = window
        self._maybe_start_torch()
        if 0 in window:
            self._window_begin()

    def _maybe_start_torch(self) -> None:
        """Create the torch profiler one (warm-up) step before the window, not earlier: its
        per-step cost (a ``record_function`` per step) is then paid only around the window."""
        if self.backend != "torch" or self._torch is not None or self._torch_launched:
            return
        warmup = self.window.torch_schedule_args()["warmup"]
        if not (self.window.start - warmup <= self.step_index < self.window.stop):
            return
        self._torch_launched = True
        try:
            from profiler.backends.torch_profiler import TorchCapture

            cap = TorchCapture(
                self.window, self._trace_file, self._recorder, cuda=self.config.torch_cuda
            )
            cap.start(first_step=self.step_index)
            self._torch = cap
            self._torch_activities = list(cap.activities)
        except Exception as e:
            self._problem("torch profiler", e)
            self._torch = None

    def _trace_file(self) -> Path:
        self.trace_path = self.out_dir / "traces" / f"rank-{self.rank}.pt.trace.json.gz"
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
            if self._step_events is not None:
                self._step_events.append((k, self._step_t0, t))
            self.step_index = k + 1
            self._step_t0 = t
            if self._torch is not None:
                try:
                    self._torch.step()
                    if self._torch.error:
                        self._problem("torch profiler", self._torch.error)
                        self._torch.error = None
                except Exception as e:
                    self._problem("torch profiler", e)
                    self._torch = None
            else:
                self._maybe_start_torch()
            if not self._materialized:
                self._materialize()
            elif self._sampler is not None:
                self._sampler.mark_step(k + 1, t)
            nvtx_mark("gpuscope.step")
            if k + 1 == self.window.start and not self._in_window:
                self._window_begin()
            elif k + 1 == self.window.stop and self._in_window:
                self._window_end()
        except Exception as e:
            self._problem("step", e)

    def _window_begin(self) -> None:
        self._in_window = True
        if self.backend in ("host", "cupti"):
            self._recorder.events = []
            self._step_events = []
        if self.backend == "cupti":
            try:
                from profiler.backends.cupti import CuptiCapture

                self._cupti = CuptiCapture()
                self._cupti.start()
            except Exception as e:
                self._problem("CUPTI", e)
                self._cupti = None
        if self.config.nsys_range:
            _cuda_profiler_api("cudaProfilerStart", self)

    def _window_end(self, partial_until: int | None = None) -> None:
        self._in_window = False
        self._window_done = True
        if self.config.nsys_range:
            _cuda_profiler_api("cudaProfilerStop", self)
        if self.backend in ("host", "cupti"):
            if partial_until is not None and self._step_events is not None:
                self._step_events.append((self.step_index, self._step_t0, partial_until))
            records: list[dict[str, Any]] = []
            cupti, self._cupti = self._cupti, None
            if cupti is not None:
                try:
                    records = cupti.stop()
                except Exception as e:
                    self._problem("CUPTI", e)
            self._write_own_trace(records, cupti.offset_ns if cupti is not None else 0)
            if cupti is not None and cupti.dropped:
                self._problem("CUPTI", f"{cupti.dropped} records dropped (buffer limit)")
        self._write_rank_meta()

    def _write_own_trace(self, records: list[dict[str, Any]], offset_ns: int) -> None:
        from profiler.kineto_writer import complete_event, write_trace

        steps, self._step_events = self._step_events or [], None
        regions, self._recorder.events = self._recorder.events or [], None
        if not steps and not regions and not records:
            return
        base = (self._t0_unix // 1_000_000_000) * 1_000_000_000
        pid = os.getpid()
        main_tid = threading.main_thread().ident or 0
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}
        ]
        for k, s, e in steps:
            events.append(
                complete_event(
                    f"ProfilerStep#{k}",
                    "user_annotation",
                    self._unix(s),
                    self._unix(e),
                    pid,
                    main_tid,
                    base,
                )
            )
        for name, s, e, tid in regions:
            events.append(
                complete_event(
                    name, "user_annotation", self._unix(s), self._unix(e), pid, tid, base
                )
            )
        if records:
            from profiler.backends.cupti import to_kineto_events

            events += to_kineto_events(records, offset_ns=offset_ns, base_ns=base)
        try:
            write_trace(
                self._trace_file(),
                events,
                base_time_ns=base,
                rank=self.rank,
                world_size=int(self.rank_info.get("world_size", 1)),
                extra={"gpuscope": {"backend": self.backend, "window": str(self.window)}},
            )
        except Exception as e:
            self._problem("trace write", e)

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
            self._restore_sigterm()

    def _stop(self, t: int) -> None:
        torch_cap, self._torch = self._torch, None
        if torch_cap is not None:
            try:
                torch_cap.stop()
                if torch_cap.error:
                    self._problem("torch profiler", torch_cap.error)
            except Exception as e:
                self._problem("torch profiler", e)
        if self._in_window:
            self._window_end(partial_until=t)
        if not self._materialized:
            return  # a process that never stepped (launcher, helper): leave no files
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            try:
                sampler.mark_step(self.step_index + 1, t)
                self._nvml_status = sampler.stop()
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

    # ------------------------------------------------------------------ SIGTERM
    def _install_sigterm(self) -> None:
        """Flush on SIGTERM (torchrun's way of stopping workers) when the program has no
        handler of its own; the signal is then re-delivered with its default action."""
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                self._prev_sigterm = signal.SIG_DFL
                signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):
            pass

    def _restore_sigterm(self) -> None:
        if self._prev_sigterm is None:
            return
        with contextlib.suppress(Exception):
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, self._prev_sigterm)
        self._prev_sigterm = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        try:
            self.stop("SIGTERM")
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    # ------------------------------------------------------------------ metadata
    def _write_rank_meta(self, final: bool = False, stopped_perf: int | None = None) -> None:
        if not self._materialized:
            return
        try:
            meta = self.rank_meta(final=final, stopped_perf=stopped_perf)
            path = self.out_dir / "ranks" / f"rank-{self.rank}.json"
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(meta, indent=1, allow_nan=False) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        except Exception as e:
            self._problem("rank metadata", e)

    def rank_meta(self, final: bool = False, stopped_perf: int | None = None) -> dict[str, Any]:
        """This rank's metadata (``ranks/rank-<r>.json``; fields defined in docs/capture.md)."""
        times = self._step_ns
        trace = self.trace_path if self.trace_path and self.trace_path.exists() else None
        nvml: dict[str, Any] | None
        if self._sampler is not None:
            nvml = self._sampler.status()
        elif self._nvml_status is not None:
            nvml = self._nvml_status
        elif self.rank_info.get("local_rank", 0) == 0 and self.config.nvml_hz <= 0:
            nvml = {"available": False, "reason": "disabled (--nvml-hz 0)"}
        else:
            nvml = None
        captured = None
        if trace is not None:
            last = min(self.window.stop, self.step_index + 1) - 1
            captured = [self.window.start, last] if last >= self.window.start else None
        return {
            "schema_version": RANK_META_VERSION,
            **self.rank_info,
            "host": self.host,
            "pid": os.getpid(),
            "argv": list(sys.argv),
            "backend": self.backend,
            "torch_activities": self._torch_activities,
            "window": str(self.window),
            "steps_captured": captured,
            "trace": str(trace.relative_to(self.out_dir)) if trace else None,
            "step_source": self.step_source,
            "steps_completed": self._steps_total,
            "step_times_ns": list(times),
            "regions": self._recorder.summary(),
            "started_unix_ns": self._t0_unix,
            "stopped_unix_ns": self._unix(stopped_perf) if stopped_perf is not None else None,
            "stop_reason": self._stop_reason if final else None,
            "versions": environment.versions(),
            "gpus": environment.torch_gpus(),
            "cuda_device": environment.current_cuda_device(),
            "nvml": nvml,
            "errors": list(self.errors),
        }

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *exc: object) -> bool:
        self.stop("context exit")
        return False


def _importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
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
