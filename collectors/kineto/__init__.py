"""Kineto / PyTorch-profiler trace reader (``*.json`` / ``*.json.gz`` → one Trace per rank).

The public entry points; the stages are documented in ``docs/kineto-reader.md``.  They are
loaded on first use (PEP 562), so that importing a stage (the parallel read's helper,
:mod:`collectors.kineto.parallel`) does not import pandas with the reader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collectors.kineto.parallel import gzip_isize, serial_reads, spare_cpu, usable_cpus
    from collectors.kineto.reader import rank_from_filename, read_kineto, read_kineto_files

_WHERE = {
    "gzip_isize": "collectors.kineto.parallel",
    "serial_reads": "collectors.kineto.parallel",
    "spare_cpu": "collectors.kineto.parallel",
    "usable_cpus": "collectors.kineto.parallel",
    "rank_from_filename": "collectors.kineto.reader",
    "read_kineto": "collectors.kineto.reader",
    "read_kineto_files": "collectors.kineto.reader",
}

__all__ = [
    "gzip_isize",
    "rank_from_filename",
    "read_kineto",
    "read_kineto_files",
    "serial_reads",
    "spare_cpu",
    "usable_cpus",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.kineto' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
