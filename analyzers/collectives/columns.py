"""Columns of the collectives table and their types (docs/communication.md §1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

_COLUMN_TYPES: dict[str, str] = {
    "rank": "object",
    "collective": "object",
    "collective_source": "object",
    "kernel_name": "object",
    "kernel_collective": "object",
    "kernel_algo": "object",
    "kernel_proto": "object",
    "n_gpu_rows": "int",
    "dtype": "object",
    "in_nelems": "int",
    "out_nelems": "int",
    "in_bytes": "int",
    "out_bytes": "int",
    "message_bytes": "int",
    "size_source": "object",
    "group_size": "int",
    "group_size_source": "object",
    "pg_name": "object",
    "pg_desc": "object",
    "pg_ranks": "object",
    "seq": "int",
    "comms_id": "object",
    "ordinal": "int",
    "src_rank": "int",
    "dst_rank": "int",
    "step": "int",
    "op_start_ns": "int",
    "launch_ns": "int",
    "start_ns": "int",
    "end_ns": "int",
    "duration_ns": "int",
    "stream": "int",
    "device": "int",
    "gpu_row": "int",
    "gpu_rows": "object",
    "algbw_gbps": "float",
    "busbw_gbps": "float",
    "link_peak_gbps": "float",
    "busbw_link_pct": "float",
}
"""Columns of the table (docs/communication.md §1 defines each) and their type: ``int`` (int64,
-1 where unknown), ``float`` (float64) or ``object`` (None where unknown)."""


COLUMNS = tuple(_COLUMN_TYPES)


INT_COLUMNS = tuple(c for c, t in _COLUMN_TYPES.items() if t == "int")


FLOAT_COLUMNS = tuple(c for c, t in _COLUMN_TYPES.items() if t == "float")


def empty_table() -> pd.DataFrame:
    """The table without rows: int64, float64 and object columns."""
    kinds = {"int": np.int64, "float": np.float64, "object": object}
    return pd.DataFrame({c: np.empty(0, dtype=kinds[t]) for c, t in _COLUMN_TYPES.items()})
