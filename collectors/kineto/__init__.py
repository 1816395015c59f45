"""Kineto / PyTorch-profiler trace reader (``*.json`` / ``*.json.gz`` → one Trace per rank).

The public entry points; the stages are documented in ``docs/kineto-reader.md``.
"""

from __future__ import annotations

from collectors.kineto.parallel import gzip_isize, serial_reads, usable_cpus
from collectors.kineto.reader import rank_from_filename, read_kineto, read_kineto_files

__all__ = [
    "gzip_isize",
    "rank_from_filename",
    "read_kineto",
    "read_kineto_files",
    "serial_reads",
    "usable_cpus",
]
