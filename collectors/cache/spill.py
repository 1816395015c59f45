"""Spilling a Trace's numeric columns to the Arrow cache when its analysis would not fit in
memory (docs/scale.md §6).

A spilled table's int and float columns are written to an Arrow IPC file under
``ROOT/spill`` (``ROOT``: :func:`~collectors.cache.trace_cache.cache_dir`), memory-mapped back
and used without a copy (read-only numpy views of the mapping, one block per column); the
file is unlinked as soon as it is mapped, so nothing stays on disk, even when the process is
killed.  The mapped pages are the file system's: under memory pressure the kernel drops and
re-reads them instead of failing, which anonymous memory (what the columns were) cannot do.
Categorical, object and bool columns stay as they are (the same objects; bools, which Arrow
packs into bits, cannot be mapped as numpy arrays).  Values are bit for bit the same: the
column buffers are written and read back raw.

:func:`spill_wanted` decides (``GPUSCOPE_SPILL``: ``auto``, the default, spills when the
available memory is under :data:`ANALYSIS_BYTES_PER_MODEL_BYTE` times the model's bytes,
:attr:`~collectors.model.Trace.nbytes`; ``always``; ``never``); :func:`spill_trace` does it.
``gpuscope analyze`` spills each rank it reads, before its sections
(:func:`reports.summary.tasks.spill`), and says so in one note.  A spill directory on a file
system held in memory (:data:`MEMORY_FILE_SYSTEMS`) would save nothing: :func:`spill_trace`
then returns None.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import UsageError
from collectors.model import TABLES, Trace

SPILL_ENV = "GPUSCOPE_SPILL"
MODES = ("auto", "always", "never")
ANALYSIS_BYTES_PER_MODEL_BYTE = 6
"""Memory the analysis of a rank may need per byte of its model's tables, the model included
(measured: one process's sections on the 300 MB generated trace peak at about 594 MiB RSS
over a 114 MiB model, with about 100 MiB of interpreter and libraries: 4.3x); ``auto`` spills
when the memory available with the model loaded is under this less one, times the model."""
MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs", "hugetlbfs"})


def spill_mode() -> str:
    """``GPUSCOPE_SPILL`` (``auto`` when unset).

    Raises:
        UsageError: the variable holds something else.
    """
    mode = os.environ.get(SPILL_ENV, "").strip().lower() or "auto"
    if mode not in MODES:
        raise UsageError(f"{SPILL_ENV} must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


def spill_wanted(model: int, available: int, mode: str = "auto") -> bool:
    """Whether to spill a loaded model of *model* bytes with *available* bytes of memory left
    (:data:`ANALYSIS_BYTES_PER_MODEL_BYTE`)."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return available < (ANALYSIS_BYTES_PER_MODEL_BYTE - 1) * model


def _spillable(s: pd.Series) -> bool:
    return isinstance(s.dtype, np.dtype) and s.dtype.kind in "iuf" and len(s) > 0


def file_system_type(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """The type of the file system holding *path* (the longest mount point of *mountinfo*
    above it), None if unknown."""
    best, kind = -1, None
    target = str(path.resolve())
    with contextlib.suppress(OSError), open(mountinfo) as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or not tail:
                continue
            point = fields[4].replace("\\040", " ")
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) > best:
                best, kind = len(point), tail[0]
    return kind


def _map_table(df: pd.DataFrame, directory: Path) -> tuple[pd.DataFrame, int]:
    """*df* with its int and float columns memory-mapped from an unlinked Arrow file in
    *directory*; and the bytes spilled."""
    import tempfile

    import pyarrow as pa
    import pyarrow.ipc as ipc

    names = [str(c) for c in df.columns if _spillable(df[c])]
    if not names:
        return df, 0
    batch = pa.RecordBatch.from_arrays([pa.array(df[c].to_numpy()) for c in names], names=names)
    fd, name = tempfile.mkstemp(prefix=f"{os.getpid()}-", suffix=".arrow", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f, ipc.new_file(f, batch.schema) as w:
            w.write_batch(batch)
        mapped = ipc.open_file(pa.memory_map(name)).read_all()
    finally:
        os.unlink(name)
    data: dict[str, Any] = {}
    for c in df.columns:
        if str(c) in names:
            arr = mapped.column(str(c)).chunk(0).to_numpy(zero_copy_only=True)
            data[c] = arr.view(df[c].dtype)
        else:
            data[c] = df[c]  # as it is (a Series keeps its dtype: no string inference)
    out = pd.DataFrame(data, index=df.index, copy=False)
    return out, sum(int(df[c].memory_usage(index=False)) for c in names)


def spill_trace(trace: Trace, root: Path) -> tuple[Trace, int] | None:
    """*trace* with its tables' int and float columns memory-mapped from ``root/spill``
    (module docstring), and the bytes spilled; None when ``root/spill`` is on a file system
    held in memory.

    Raises:
        OSError: the spill directory or a file in it cannot be written.
    """
    directory = root / "spill"
    directory.mkdir(parents=True, exist_ok=True)
    if file_system_type(directory) in MEMORY_FILE_SYSTEMS:
        return None
    tables: dict[str, pd.DataFrame] = {}
    spilled = 0
    for t in TABLES:
        tables[t], n = _map_table(getattr(trace, t), directory)
        spilled += n
    out = dataclasses.replace(
        trace,
        gpu=tables["gpu"],
        host=tables["host"],
        annotations=tables["annotations"],
        counters=tables["counters"],
    )
    return out, spilled
