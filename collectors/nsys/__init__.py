"""Nsight Systems reader: SQLite exports (and ``.nsys-rep`` via ``nsys export``) → Traces.

The public entry points; every field is documented in ``docs/nsys.md``.
"""

from __future__ import annotations

from collectors.nsys.reader import NO_GPU_NOTE, NO_KERNELS_NOTE, read_nsys, read_nsys_files

__all__ = ["NO_GPU_NOTE", "NO_KERNELS_NOTE", "read_nsys", "read_nsys_files"]
