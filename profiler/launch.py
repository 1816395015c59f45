"""``gpuscope run``'s orchestration: start the program with capture on, wait, analyse.

The program runs in its own process group with the environment of
:mod:`profiler.config` and the zero-code shim first on ``PYTHONPATH``.  SIGINT, SIGTERM and
SIGHUP received by gpuscope are forwarded to that whole group (a third one sends SIGKILL).
Whatever the program's end — success, failure, crash or interrupt — gpuscope then writes
``meta.json``, the summary and the report from what was captured, and returns the program's exit
status (``128 + N`` when signal N killed it).  A program that cannot be started (its
``#!`` interpreter missing, not executable) is recorded in ``meta.json`` with the status a shell
gives: 127 (not found) or 126 (cannot execute).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors import rundir as layout
from collectors.errors import GpuscopeError, MissingDependencyError, UsageError
from profiler import environment, rundir
from profiler.config import (
    ENV_AUTO,
    ENV_CAPTURE_PID,
    ENV_NSYS_RANGE,
    ENV_NVML_HZ,
    ENV_RUN_DIR,
    ENV_STEPS,
    ENV_TORCH_CUDA,
    expand_out,
    parse_steps,
)

SHIM_DIR = Path(__file__).resolve().parent / "_shim"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

NSYS_FLAGS = (
    "--trace=cuda,nvtx,osrt,cudnn,cublas",
    "--sample=none",
    "--cpuctxsw=none",
    "--capture-range=cudaProfilerApi",
    "--capture-range-end=stop",
    "--export=sqlite",
    "--stats=false",
    "--force-overwrite=true",
)
"""``nsys profile`` flags: CUDA/NVTX/OS-runtime/cuDNN/cuBLAS traces, no CPU sampling, capture
limited to the step window (the profiler calls cudaProfilerStart/Stop at its edges), SQLite
export for ``gpuscope analyze``."""


@dataclass(frozen=True)
class RunOptions:
    """``gpuscope run`` options (validated by :func:`prepare`)."""

    command: tuple[str, ...]
    out: str | None = None
    steps: str | None = None
    nvml_hz: float | None = None
    nsys: bool = False
    report: bool = True
    force: bool = False


def script_name(command: Sequence[str]) -> str:
    """The ``{name}`` placeholder: the first ``*.py`` argument's stem, else the program's."""
    for a in command:
        if a.endswith(".py"):
            return Path(a).stem
    return Path(command[0]).name if command else "run"


def prepare(opts: RunOptions) -> tuple[list[str], Path]:
    """Validate options and find the programs; returns (argv, run dir).  Starts nothing.

    Raises:
        UsageError: no command, a bad ``--steps``/``--nvml-hz``, a command not found, or a
            non-empty run directory without ``--force``.
        MissingDependencyError: ``--nsys`` without ``nsys`` on PATH.
    """
    if not opts.command:
        raise UsageError("no command given: gpuscope run [OPTIONS] -- CMD [ARGS...]")
    if opts.steps is not None:
        try:
            parse_steps(opts.steps)
        except ValueError as e:
            raise UsageError(f"--steps: {e}") from None
    if opts.nvml_hz is not None and not (0 <= opts.nvml_hz <= 1000):
        raise UsageError(f"--nvml-hz must be between 0 and 1000, got {opts.nvml_hz}")
    argv = list(opts.command)
    if shutil.which(argv[0]) is None:
        raise UsageError(f"command not found: {argv[0]}")
    nsys: str | None = None
    if opts.nsys:
        nsys = shutil.which("nsys")
        if nsys is None:
            raise MissingDependencyError(
                "--nsys: the nsys command (Nsight Systems) is not on PATH; install it or run "
                "without --nsys"
            )
    run = Path(expand_out(opts.out or "runs/{date}-{name}", name=script_name(argv)))
    if run.exists() and not run.is_dir():
        raise UsageError(f"run directory is a file: {run}")
    try:
        occupied = run.is_dir() and any(run.iterdir())
    except OSError as e:
        raise UsageError(f"cannot read the run directory: {e.strerror or e}", path=run) from e
    if occupied and not opts.force:
        raise UsageError(
            f"run directory {run} exists and is not empty; choose another -o or pass --force"
        )
    if nsys is not None:
        argv = [nsys, "profile", *NSYS_FLAGS, "-o", str(run / layout.NSYS / "report"), *argv]
    return argv, run


def child_env(opts: RunOptions, run: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The program's environment: the caller's plus what tells ``profiler`` to capture."""
    env = dict(os.environ if base is None else base)
    env[ENV_RUN_DIR] = str(run.resolve())
    env[ENV_AUTO] = "1"
    env.pop(ENV_CAPTURE_PID, None)
    if opts.steps is not None:
        env[ENV_STEPS] = opts.steps
    else:
        env.pop(ENV_STEPS, None)
    if opts.nvml_hz is not None:
        env[ENV_NVML_HZ] = repr(float(opts.nvml_hz))
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SHIM_DIR) + (os.pathsep + old if old else "")
    if opts.nsys:
        env[ENV_TORCH_CUDA] = "0"  # nsys owns CUPTI; torch records CPU activity only
        env[ENV_NSYS_RANGE] = "1"
        env["NSYS_NVTX_PROFILER_REGISTER_ONLY"] = "0"
    return env


def _clear(run: Path) -> None:
    for name in layout.OWNED:
        p = run / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def run_command(opts: RunOptions, echo: Callable[[str], None] | None = None) -> int:
    """Run the program under capture and analyse it; returns the program's exit status.

    Raises:
        UsageError, MissingDependencyError: before anything is started (see :func:`prepare`).
    """
    say = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    argv, run = prepare(opts)
    try:
        if opts.force and run.is_dir():
            _clear(run)
        run.mkdir(parents=True, exist_ok=True)
        if opts.nsys:
            (run / layout.NSYS).mkdir(exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the run directory: {e.strerror or e}", path=run) from e
    options = {
        "steps": opts.steps,
        "nvml_hz": opts.nvml_hz,
        "nsys": opts.nsys,
        "report": opts.report,
    }
    git = environment.git_info()
    started = time.time_ns()
    # raises (exit 2) before anything starts when the directory cannot be written
    rundir.write_meta(
        run, command=list(opts.command), exit_code=None, started_unix_ns=started,
        options=options, git=git,
    )  # fmt: skip
    say(f"gpuscope: capturing into {run}")
    try:
        code = _run_forwarding(argv, child_env(opts, run))
    except CannotStart as e:
        return _not_started(opts, run, e, started, options, git, say)
    ended = time.time_ns()
    try:
        rundir.write_meta(
            run,
            command=list(opts.command),
            exit_code=code,
            started_unix_ns=started,
            ended_unix_ns=ended,
            options=options,
            git=git,
        )  # before the analysis: the summary's run section reads meta.json
    except GpuscopeError as e:  # the program ran: its status is still the answer
        say(f"gpuscope: error: {e}")
        return code
    out = rundir.analyse(run, report=opts.report)
    files: dict[str, Any] = {
        "traces": [str(p.relative_to(run)) for p in out.traces],
        "counters": [str(p.relative_to(run)) for p in out.counters],
        "summary": layout.SUMMARY if out.summary else None,
        "report": layout.REPORT if out.report else None,
    }
    if opts.nsys:
        files["nsys"] = sorted(str(p.relative_to(run)) for p in (run / layout.NSYS).glob("*"))
    try:
        meta = rundir.write_meta(
            run, command=list(opts.command), exit_code=code, started_unix_ns=started,
            ended_unix_ns=ended, options=options, git=git, files=files, notes=out.notes,
        )  # fmt: skip
    except GpuscopeError as e:
        say(f"gpuscope: error: {e}")
        return code
    for line in describe(run, meta, out, code):
        say(line)
    return code


class CannotStart(Exception):
    """The program could not be executed; ``code`` is what a shell returns for it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _interpreter(program: str) -> str | None:
    """The ``#!`` interpreter named by *program* (a path or a name on PATH), if any."""
    path = program if os.sep in program else shutil.which(program)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    return words[0] if words else None


def start_failure(argv: Sequence[str], err: OSError) -> CannotStart:
    """The shell's status and one line for a program that *err* kept from starting: 127 when
    it (or its ``#!`` interpreter) does not exist, else 126 (cannot execute)."""
    code = 127 if err.errno == errno.ENOENT else 126
    message = f"cannot start {argv[0]}: {err.strerror or err}"
    interp = _interpreter(argv[0])
    if err.errno == errno.ENOENT and interp is not None and shutil.which(interp) is None:
        message += f" (its interpreter {interp} does not exist)"
    return CannotStart(code, message)


def _not_started(
    opts: RunOptions,
    run: Path,
    err: CannotStart,
    started: int,
    options: dict[str, Any],
    git: dict[str, Any] | None,
    say: Callable[[str], None],
) -> int:
    """Record a program that never ran (exit status, the reason) and return its status."""
    try:
        rundir.write_meta(
            run, command=list(opts.command), exit_code=err.code, started_unix_ns=started,
            ended_unix_ns=time.time_ns(), options=options, git=git, notes=[err.message],
        )  # fmt: skip
    except GpuscopeError as e:
        say(f"gpuscope: error: {e}")
    say(f"gpuscope: error: {err.message}")
    say(f"  run directory  {run} (meta.json only; reuse it with --force)")
    return err.code


def _run_forwarding(argv: list[str], env: dict[str, str]) -> int:
    """Run *argv* in its own process group, forwarding signals; returns its exit status.

    Raises:
        CannotStart: *argv* could not be executed.
    """
    kwargs: dict[str, Any] = {"env": env}
    if sys.version_info >= (3, 11):
        kwargs["process_group"] = 0
    else:  # pragma: no cover - Python 3.10
        kwargs["preexec_fn"] = os.setpgrp
    received: dict[int, int] = {}
    proc: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: Any) -> None:
        received[signum] = received.get(signum, 0) + 1
        if proc is None:
            return
        sig = signal.SIGKILL if sum(received.values()) >= 3 else signum
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    previous = {s: signal.getsignal(s) for s in FORWARDED}
    for s in FORWARDED:
        signal.signal(s, forward)
    try:
        try:
            proc = subprocess.Popen(argv, **kwargs)
        except OSError as e:
            raise start_failure(argv, e) from None
        rc = proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return rc if rc >= 0 else 128 - rc


def describe(run: Path, meta: dict[str, Any], out: rundir.Outcome, code: int) -> list[str]:
    """The lines ``gpuscope run`` prints at the end: where everything is."""
    lines = [f"gpuscope: program exited with status {code}", f"  run directory  {run}"]
    lines.append(f"  metadata       {run / layout.META}")
    ranks = meta.get("ranks", [])
    if out.traces:
        lines.append(f"  traces         {len(out.traces)} file(s) in {run / layout.TRACES}")
    else:
        lines.append("  traces         none")
    nvml = meta.get("nvml") or {}
    if out.counters:
        lines.append(f"  NVML counters  {', '.join(str(p) for p in out.counters)}")
    for host, st in sorted(nvml.items()):
        if not st.get("available"):
            lines.append(f"  NVML           unavailable on {host}: {st.get('reason')}")
    if not nvml and ranks:
        lines.append("  NVML           no sampler status recorded")
    lines.append(f"  summary        {out.summary if out.summary else 'not written'}")
    if out.report:
        lines.append(f"  report         {out.report}")
    for note in out.notes:
        lines.append(f"  note: {note}")
    if out.traces:
        lines.append(f"next: gpuscope analyze {run / layout.TRACES}")
    return lines
