"""Live-capture backends of a capture session, behind one protocol
(:class:`profiler.backends.protocol.Backend`), and the measurement tools that drive the GPU
themselves (:mod:`profiler.backends.commbench`, :mod:`profiler.backends.calibrate`).

=========  ======================================  =====================================
backend    module                                  records
=========  ======================================  =====================================
torch      :mod:`profiler.backends.torch_profiler`  ``torch.profiler`` over the window
cupti      :mod:`profiler.backends.cupti`          CUPTI activity + steps and regions
host       :mod:`profiler.backends.host`           steps and regions (host timings)
nvml       :mod:`profiler.backends.nvml`           NVML counters over the whole session
=========  ======================================  =====================================

Importing this package is cheap: the backends' modules load when a session creates one.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from profiler.backends.protocol import Backend, SessionContext

TRACE_BACKENDS = ("torch", "cupti", "host")


def choose_trace_backend(want: str) -> str:
    """The trace backend for a session asked for *want* (``auto``, ``torch``, ``cupti`` or
    ``host``): ``auto`` is torch when the program imported it, else CUPTI when installed, else
    torch when installed, else host; one that cannot be imported falls back to host."""
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


def trace_backend(name: str, context: SessionContext) -> Backend:
    """A new trace backend *name* (one of :data:`TRACE_BACKENDS`) for a session."""
    if name == "torch":
        from profiler.backends.torch_profiler import TorchBackend

        return TorchBackend(context)
    if name == "cupti":
        from profiler.backends.cupti import CuptiBackend

        return CuptiBackend(context)
    from profiler.backends.host import HostBackend

    return HostBackend(context)


def _importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
