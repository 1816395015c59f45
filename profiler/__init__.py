"""gpuscope's Python API for training code: ``profile``, ``region``, ``step``, ``Session``.

::

    import profiler

    @profiler.profile(out="runs/{date}-{name}", steps="10:15")
    def train():
        for batch in loader:
            with profiler.region("forward"):
                loss = model(batch)
            ...
            profiler.step()

Under ``gpuscope run`` no ``profile`` is needed: capture starts by itself (settings come from
the environment).  With ``GPUSCOPE_DISABLE=1`` everything is a no-op.  Importing this package
is cheap (no torch, no NVML, no numpy); nothing here raises into the training process except a
``TypeError`` for a misused decorator.  See docs/capture.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from profiler.regions import DISABLED, region

if TYPE_CHECKING:
    from profiler.session import Session

__all__ = ["Session", "current_session", "profile", "region", "step"]

F = TypeVar("F", bound=Callable[..., Any])


def step() -> None:
    """Mark the end of the current training step (the next one begins).

    Drives the step-windowed capture (the same steps on every rank), the NVML energy reading
    at step boundaries and the host step timings.  Without a session (and outside
    ``gpuscope run``) it does nothing.
    """
    if DISABLED:
        return
    try:
        from profiler import session as _s

        s = _s._current or _s.env_session()
        if s is not None:
            s.step()
    except Exception:
        pass


def current_session() -> Session | None:
    """The active capture session of this process, if any."""
    if DISABLED:
        return None
    from profiler import session as _s

    return _s._current


class _NullSession:
    """What ``with profiler.profile() as s`` gives when profiling is disabled."""

    active = False
    out_dir = None
    step_index = 0

    def step(self) -> None:
        pass

    def start(self) -> _NullSession:
        return self

    def stop(self, reason: str = "stop") -> None:
        pass


class _Profile:
    """Decorator and context manager returned by :func:`profile`."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._session: Any = None
        self._owned = False

    def __enter__(self) -> Any:
        if DISABLED:
            return _NullSession()
        try:
            from profiler import session as _s

            existing = _s._current or _s.env_session()
            if existing is not None:
                steps = self.options.get("steps")
                if steps:
                    existing.prefer_window(steps)
                self._session, self._owned = existing, False
                return existing
            self._session = _s.Session(**self.options).start()
            self._owned = True
            return self._session
        except Exception as e:
            import sys

            print(f"gpuscope: capture not started ({type(e).__name__}: {e})", file=sys.stderr)
            return _NullSession()

    def __exit__(self, *exc: object) -> bool:
        s, self._session = self._session, None
        if s is not None and self._owned:
            s.stop("context exit")
        return False

    def __call__(self, fn: F) -> F:
        options = self.options

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _Profile(**options):
                return fn(*args, **kwargs)

        return cast(F, wrapper)


def profile(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    out: str | None = None,
    steps: str | None = None,
    nvml_hz: float | None = None,
    backend: str | None = None,
) -> Any:
    """Capture a run: ``@profiler.profile``, ``@profiler.profile(out=..., steps="A:B")`` or
    ``with profiler.profile(...) as session:``.

    Args:
        out: run directory (``{date}``, ``{name}``, ``{host}`` placeholders); default
            ``runs/{date}-{name}``.  Under ``gpuscope run``, its directory is used instead.
        steps: the step window ``A:B`` — steps A … B-1 (0-based) are traced; default ``5:10``.
        nvml_hz: NVML sampling rate on local rank 0 (0 = off); default 10.
        backend: ``auto`` (torch if the program uses it, else CUPTI if installed, else host),
            ``torch``, ``cupti`` or ``host``.

    Raises:
        TypeError: called with a positional argument that is not a function (e.g.
            ``profile("runs/x")`` — use ``profile(out="runs/x")``).
    """
    if fn is not None and not callable(fn):
        raise TypeError(
            "profiler.profile takes keyword arguments only: use @profiler.profile, "
            f"@profiler.profile(out=..., steps='A:B') or `with profiler.profile(...)`; got {fn!r}"
        )
    if steps is not None:
        from profiler.config import parse_steps

        parse_steps(steps)  # a bad window is a programming error: say so now (ValueError)
    spec = _Profile(out=out, steps=steps, nvml_hz=nvml_hz, backend=backend)
    return spec(fn) if fn is not None else spec


def __getattr__(name: str) -> Any:
    if name == "Session":
        from profiler.session import Session

        return Session
    raise AttributeError(f"module 'profiler' has no attribute {name!r}")
