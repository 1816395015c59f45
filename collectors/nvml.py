"""The NVML counter file of a run (``RUN/counters/<host>.csv.gz``) read into the trace model.

The file is gzip'd CSV in long format, one row per reading (written by the sampler,
:mod:`profiler.backends.nvml`, whose docstring lists every field)::

    t_mono_ns,t_unix_ns,gpu,field,value
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.model import counter_table
from collectors.rundir import COUNTERS, COUNTERS_SUFFIX

CSV_HEADER = "t_mono_ns,t_unix_ns,gpu,field,value\n"
"""The first line of every counter file."""


def _gunzip_tolerant(data: bytes, path: Path) -> bytes:
    """Decompress gzip data; a stream cut short (crashed writer) yields what is complete."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data)
    except zlib.error as e:
        raise InputError(f"not a valid gzip file: {e}", path=path) from None
    return out


def read_counters(path: str | Path) -> pd.DataFrame:
    """Read a counter file into the trace model's ``counters`` layout.

    ``name`` = field, ``ts_ns`` = ``t_unix_ns`` (Unix-epoch ns), ``value``, ``device`` = NVML
    index (-1 for ``step_begin`` rows).  A file whose writer died mid-way is read up to its
    last complete row.

    Raises:
        InputError: missing file, not gzip, or not a gpuscope counter file.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read counter file: {e.strerror or e}", path=p) from None
    text = _gunzip_tolerant(raw, p) if raw[:2] == b"\x1f\x8b" else raw
    if not text.startswith(CSV_HEADER.encode()):
        raise InputError(
            f"not a gpuscope NVML counter file (expected header {CSV_HEADER.strip()!r})", path=p
        )
    end = text.rfind(b"\n")
    body = text[: end + 1]
    try:
        df = pd.read_csv(
            io.BytesIO(body),
            dtype={"t_mono_ns": np.int64, "t_unix_ns": np.int64, "gpu": np.int64},
        )
    except (ValueError, pd.errors.ParserError) as e:
        raise InputError(f"malformed counter rows: {e}", path=p) from None
    return counter_table(
        {
            "name": df["field"].astype(str).to_numpy(),
            "ts_ns": df["t_unix_ns"].to_numpy(),
            "value": df["value"].to_numpy(dtype=np.float64),
            "device": df["gpu"].to_numpy(),
        }
    )


def counter_files(run_dir: str | Path) -> list[Path]:
    """The counter files of a run directory (``counters/*.csv.gz``), sorted."""
    return sorted(Path(run_dir, COUNTERS).glob(f"*{COUNTERS_SUFFIX}"))


def read_run_counters(paths: Iterable[str | Path]) -> dict[str, pd.DataFrame]:
    """``{host: counters}`` for counter files named ``<host>.csv.gz``."""
    return {Path(p).name[: -len(COUNTERS_SUFFIX)]: read_counters(p) for p in paths}
