"""Zero-code capture for programs that never import ``profiler`` (used by ``gpuscope run``).

:func:`install` (called by the ``sitecustomize`` shim) waits for ``import torch`` without
importing it: a one-shot import hook runs :func:`on_torch_imported` once torch has loaded.
That starts the session ``gpuscope run`` asked for and, with ``GPUSCOPE_AUTO=1``, registers a
global optimizer post-step hook (``torch.optim.optimizer.register_optimizer_step_post_hook``)
that ends a step each time the *first* optimizer that ever stepped steps again (so two
optimizers per iteration still make one step).  A program that calls ``profiler.step()`` itself
takes over: the hook is then ignored.

Skipped: torch's launchers (``torchrun``, ``python -m torch.distributed.run``) and
``multiprocessing`` children; other processes that import torch but never step (launchers of
other frameworks, helpers) start a session that writes nothing.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

from profiler.config import ENV_AUTO, ENV_RUN_DIR, env_flag
from profiler.regions import DISABLED

_LAUNCHER_SUFFIXES = (
    "torch/distributed/run.py",
    "torch/distributed/launch.py",
    "torch/distributed/elastic/multiprocessing/api.py",
)


def install() -> None:
    """Arm zero-code capture (no-op outside ``gpuscope run`` or with GPUSCOPE_DISABLE=1)."""
    if DISABLED or not os.environ.get(ENV_RUN_DIR):
        return
    if "torch" in sys.modules:
        on_torch_imported()
        return
    if not any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder("torch", on_torch_imported))


def is_launcher(argv: list[str] | None = None) -> bool:
    """True for torch's own launcher processes (they start the ranks, they do not train)."""
    argv = sys.argv if argv is None else argv
    first = (argv[0] if argv else "").replace("\\", "/")
    return os.path.basename(first) == "torchrun" or first.endswith(_LAUNCHER_SUFFIXES)


def is_multiprocessing_child(argv: list[str] | None = None) -> bool:
    """True in a ``multiprocessing`` spawn/forkserver child (e.g. a data-loader worker)."""
    argv = sys.argv if argv is None else argv
    orig = list(getattr(sys, "orig_argv", []))
    return "--multiprocessing-fork" in argv or any("from multiprocessing" in a for a in orig)


def on_torch_imported() -> None:
    """Start the run's session and hook optimizer steps (never raises)."""
    try:
        if is_launcher() or is_multiprocessing_child():
            return
        from profiler.session import env_session

        session = env_session()
        if session is not None and env_flag(ENV_AUTO):
            hook_optimizer_steps()
    except Exception as e:
        with contextlib.suppress(Exception):
            print(f"gpuscope: zero-code capture not started ({e})", file=sys.stderr)


_hooked = False


def hook_optimizer_steps() -> None:
    """Register the global optimizer post-step hook (once per process)."""
    global _hooked
    if _hooked:
        return
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from profiler import session as _s

    first: list[int] = []

    def _after_optimizer_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        try:
            if not first:
                first.append(id(optimizer))
            if id(optimizer) == first[0]:
                s = _s._current
                if s is not None:
                    s.auto_step()
        except Exception:
            pass

    register_optimizer_step_post_hook(_after_optimizer_step)
    _hooked = True


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """One-shot meta-path finder: lets *name* load normally, then calls *callback*."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback
        self._busy = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _CallbackLoader(spec.loader, self.callback)
        return spec


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, then runs the callback once the module has executed."""

    def __init__(self, loader: Any, callback: Callable[[], None]) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._loader  # the module sees its real loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        with contextlib.suppress(Exception):
            self._callback()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
