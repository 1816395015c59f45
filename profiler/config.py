"""What to capture, as set by ``gpuscope run`` (environment) or by ``profiler.profile(...)``.

``gpuscope run`` tells the profiled program what to do only through environment variables, so
that every process it starts (``torchrun`` workers included) sees the same settings:

=========================  =====================================================================
variable                   meaning
=========================  =====================================================================
``GPUSCOPE_DISABLE``       ``1``: every ``profiler`` call is a no-op (checked once, at import)
``GPUSCOPE_RUN_DIR``       the run directory; set by ``gpuscope run``, turns capture on
``GPUSCOPE_STEPS``         step window ``A:B`` (steps A … B-1, counted from 0)
``GPUSCOPE_NVML_HZ``       NVML sampling rate in Hz (``0`` = no sampler)
``GPUSCOPE_AUTO``          ``1``: zero-code mode (start at ``import torch``, mark steps at
                           ``torch.optim.Optimizer.step``)
``GPUSCOPE_BACKEND``       ``auto`` (default) | ``torch`` | ``cupti`` | ``host``
``GPUSCOPE_TORCH_CUDA``    ``0``: the torch profiler records CPU activities only (set under
                           ``--nsys``: nsys owns CUPTI then)
``GPUSCOPE_NSYS_RANGE``    ``1``: call ``cudaProfilerStart/Stop`` at the window's edges
``GPUSCOPE_CAPTURE_PID``   internal: the process that owns the capture (children skip it)
=========================  =====================================================================
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_DISABLE = "GPUSCOPE_DISABLE"
ENV_RUN_DIR = "GPUSCOPE_RUN_DIR"
ENV_STEPS = "GPUSCOPE_STEPS"
ENV_NVML_HZ = "GPUSCOPE_NVML_HZ"
ENV_AUTO = "GPUSCOPE_AUTO"
ENV_BACKEND = "GPUSCOPE_BACKEND"
ENV_TORCH_CUDA = "GPUSCOPE_TORCH_CUDA"
ENV_NSYS_RANGE = "GPUSCOPE_NSYS_RANGE"
ENV_CAPTURE_PID = "GPUSCOPE_CAPTURE_PID"

DEFAULT_STEPS = "5:10"
"""Default window: skips start-up steps (allocator, autotuning, compilation), captures five."""
DEFAULT_NVML_HZ = 10.0
BACKENDS = ("auto", "torch", "cupti", "host")

_TRUE = ("1", "true", "yes", "on")


def env_flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when the variable is set to 1/true/yes/on (case-insensitive)."""
    env = os.environ if env is None else env
    return env.get(name, "").strip().lower() in _TRUE


@dataclass(frozen=True)
class StepWindow:
    """Steps ``start`` … ``stop - 1`` (0-based; step k ends at the (k+1)-th ``step()`` call)."""

    start: int
    stop: int

    def __contains__(self, step: object) -> bool:
        return isinstance(step, int) and self.start <= step < self.stop

    def __str__(self) -> str:
        return f"{self.start}:{self.stop}"

    def torch_schedule_args(self) -> dict[str, int]:
        """``torch.profiler.schedule`` arguments that record exactly these steps once.

        One warm-up step precedes the window when there is room (Kineto's advice); with
        ``start == 0`` there is none.
        """
        warmup = 1 if self.start >= 1 else 0
        return {
            "skip_first": 0,
            "wait": self.start - warmup,
            "warmup": warmup,
            "active": self.stop - self.start,
            "repeat": 1,
        }


def parse_steps(text: str) -> StepWindow:
    """Parse ``A:B`` (0 <= A < B).

    Raises:
        ValueError: with a message saying what is wrong (callers turn it into a UsageError).
    """
    a, sep, b = str(text).strip().partition(":")
    if not sep:
        raise ValueError(f"steps must look like A:B (e.g. 5:10), got {text!r}")
    try:
        start, stop = int(a), int(b)
    except ValueError:
        raise ValueError(f"steps A:B must be integers, got {text!r}") from None
    if start < 0 or stop <= start:
        raise ValueError(f"steps A:B need 0 <= A < B, got {text!r}")
    return StepWindow(start, stop)


@dataclass(frozen=True)
class CaptureConfig:
    """Settings of one capture session."""

    out_dir: str
    steps: StepWindow
    nvml_hz: float = DEFAULT_NVML_HZ
    backend: str = "auto"
    torch_cuda: bool = True
    nsys_range: bool = False
    under_run: bool = False
    """True when ``gpuscope run`` started the program (it writes meta.json and the summary)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CaptureConfig | None:
        """The configuration ``gpuscope run`` put in the environment, or None outside it.

        Malformed values fall back to defaults (the training process must not fail on them;
        ``gpuscope run`` validates them before it starts anything).
        """
        env = os.environ if env is None else env
        out = env.get(ENV_RUN_DIR)
        if not out:
            return None
        try:
            steps = parse_steps(env.get(ENV_STEPS) or DEFAULT_STEPS)
        except ValueError:
            steps = parse_steps(DEFAULT_STEPS)
        try:
            hz = float(env.get(ENV_NVML_HZ, DEFAULT_NVML_HZ))
        except ValueError:
            hz = DEFAULT_NVML_HZ
        backend = env.get(ENV_BACKEND, "auto").strip().lower()
        return cls(
            out_dir=out,
            steps=steps,
            nvml_hz=max(hz, 0.0),
            backend=backend if backend in BACKENDS else "auto",
            torch_cuda=env.get(ENV_TORCH_CUDA, "1").strip() != "0",
            nsys_range=env_flag(ENV_NSYS_RANGE, env),
            under_run=True,
        )


def expand_out(template: str, name: str | None = None) -> str:
    """Fill ``{date}`` (YYYY-mm-dd-HHMMSS), ``{name}`` (script name) and ``{host}``."""
    from profiler.environment import hostname

    script = name or Path(sys.argv[0] if sys.argv and sys.argv[0] else "python").stem or "run"
    date = _dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    try:
        return template.format(date=date, name=script, host=hostname())
    except (KeyError, IndexError, ValueError):
        return template
