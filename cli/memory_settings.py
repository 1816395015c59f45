"""Memory settings of the processes of the commands that read traces (docs/performance.md,
"Memory settings of the analysis commands").

An analysis allocates and frees arrays of millions of rows, one after the other.  Two defaults
make the kernel fault in fresh pages for most of them:

* numpy advises transparent huge pages (``madvise(MADV_HUGEPAGE)``) for every array of 4 MiB
  or more; where THP is ``madvise`` (the usual Linux default) each such fault tries to
  assemble a 2 MiB page first.  Measured here (2 vCPUs, the generated 300 MB trace): 2.6 s of
  the run's kernel time against 1.3 s without the advice.
* glibc's dynamic mmap threshold serves most arrays with a fresh ``mmap`` and returns them on
  ``free``; fixed thresholds keep freed arrays below 32 MiB in the heap for the next one.

:func:`apply` turns the first off (``NUMPY_MADVISE_HUGEPAGE=0``, numpy's own switch) and sets
the second with ``mallopt`` (glibc only).  Neither changes a result, only where memory comes
from; each is left alone where the user set it (``NUMPY_MADVISE_HUGEPAGE``, glibc's
``MALLOC_*_`` variables or ``GLIBC_TUNABLES`` malloc tunables), and ``GPUSCOPE_MEMORY_SETTINGS=0``
leaves both at their defaults.  Only the console commands call it (never the library, nor
``gpuscope run``, whose wrapped program keeps its own environment); the process's forked
helpers and worker processes inherit the settings.
"""

from __future__ import annotations

import os
import sys
from typing import Any

ENV = "GPUSCOPE_MEMORY_SETTINGS"
"""``0``: leave numpy's huge-page advice and glibc's malloc thresholds at their defaults."""

NUMPY_ENV = "NUMPY_MADVISE_HUGEPAGE"

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
"""``mallopt`` parameters (glibc ``malloc.h``)."""

MALLOPT: tuple[tuple[int, int], ...] = (
    (M_MMAP_THRESHOLD, 32 << 20),
    (M_TRIM_THRESHOLD, 256 << 20),
    (M_TOP_PAD, 64 << 20),
)
"""Blocks of 32 MiB and more are mapped (glibc's own ceiling for its dynamic threshold on
64-bit); the heap is trimmed once 256 MiB at its top are free, and grows 64 MiB at a time."""

USER_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def apply(libc: Any = None) -> list[str]:
    """Apply the settings (module docstring); returns what was set, one word each
    (``numpy-hugepages-off``, ``malloc-thresholds``).  *libc*: the C library to call
    ``mallopt`` on (tests; default: this process's, where it is glibc)."""
    if os.environ.get(ENV, "").strip() == "0":
        return []
    done = []
    if _numpy_hugepages_off():
        done.append("numpy-hugepages-off")
    if _malloc_thresholds(libc):
        done.append("malloc-thresholds")
    return done


def _numpy_hugepages_off() -> bool:
    """numpy without huge-page advice: numpy's switch in the environment when numpy is not
    imported yet (read once, at its import, here and in the forked or spawned helpers), else
    its setter for this process (the environment is then left as it is)."""
    if NUMPY_ENV in os.environ:
        return False  # the user's choice
    numpy = sys.modules.get("numpy")
    if numpy is None:
        os.environ[NUMPY_ENV] = "0"
        return True
    multiarray = getattr(getattr(numpy, "_core", None), "multiarray", None)
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is None:
        return False
    setter(False)
    return True


def _malloc_thresholds(libc: Any) -> bool:
    """glibc's fixed thresholds (:data:`MALLOPT`) unless the user tuned malloc."""
    if any(k in os.environ for k in USER_MALLOC_ENV):
        return False
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    if libc is None:
        libc = _glibc()
        if libc is None:
            return False
    return all(libc.mallopt(param, value) == 1 for param, value in MALLOPT)


def _glibc() -> Any:
    """This process's C library when it is glibc, else None."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
    except (ValueError, OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return None
    import ctypes

    try:
        return ctypes.CDLL(None)
    except OSError:
        return None
