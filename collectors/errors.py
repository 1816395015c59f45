"""The one error hierarchy of gpuscope.

Every package raises subclasses of :class:`GpuscopeError`; only ``cli`` turns them into
exit codes (``exit_code`` below) and one-line messages.  Messages name the file and
what is wrong, and say what to do where that is known.
"""

from __future__ import annotations

from pathlib import Path


class GpuscopeError(Exception):
    """Base class.  ``exit_code`` is what the CLI returns for it."""

    exit_code: int = 2

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class InputError(GpuscopeError):
    """A file or directory given as input is missing, unreadable, corrupt or of the wrong kind."""


class UsageError(GpuscopeError):
    """Bad options or arguments (unknown architecture, impossible configuration, ...)."""


class MissingDependencyError(GpuscopeError):
    """An optional tool or library (nsys, torch, NVML, a GPU) is needed and absent."""


class InsufficientDataError(GpuscopeError):
    """Not enough data to decide (gate with ``--strict`` exits 3)."""

    exit_code = 3


class RegressionError(GpuscopeError):
    """The gate found a regression (exit 1).  Raised only by orchestration code."""

    exit_code = 1
