"""Counter tables of an nsys export → the model's ``counters`` rows (plus ``_gpid``).

``cuda_memory_allocated_bytes``
    From ``CUDA_GPU_MEMORY_USAGE_EVENTS`` (captured with ``--cuda-memory-usage=true``): one
    sample per allocation or free, at its ``start``; value = running total, per process and
    device, of bytes allocated (``memoryOperationType`` 0) minus bytes freed (1) since the
    capture started.  Allocations made before the capture are not seen, so the series starts
    at 0 at capture start.  Events at the same timestamp are applied in table order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collectors.nsys.schema import NsysDb

MEMORY_USAGE = "CUDA_GPU_MEMORY_USAGE_EVENTS"
ALLOCATED = "cuda_memory_allocated_bytes"


def read_counters(db: NsysDb) -> pd.DataFrame:
    """Counter samples of every process (empty when no counter table was captured)."""
    if not db.has(MEMORY_USAGE):
        return pd.DataFrame()
    db.require(MEMORY_USAGE, ("start", "globalPid", "deviceId", "bytes", "memoryOperationType"))
    cols = db.int_columns(
        MEMORY_USAGE,
        {
            "ts_ns": "start",
            "_gpid": "globalPid",
            "device": "deviceId",
            "bytes": "bytes",
            "op": "memoryOperationType",
        },
    )
    cols = db.valid_times(
        MEMORY_USAGE,
        cols,
        start="ts_ns",
        end=None,
        more={
            "bytes NULL, negative or not an integer": cols["bytes"] < 0,
            "memoryOperationType not 0 (allocation) or 1 (free)": ~np.isin(cols["op"], (0, 1)),
        },
    )
    if not len(cols["ts_ns"]):
        return pd.DataFrame()
    df = pd.DataFrame(cols)
    df["delta"] = np.where(df["op"] == 1, -df["bytes"], df["bytes"])
    df = df.sort_values("ts_ns", kind="stable")
    df["value"] = df.groupby(["_gpid", "device"], sort=False)["delta"].cumsum().astype(np.float64)
    df["name"] = pd.Categorical([ALLOCATED] * len(df))
    return df[["name", "ts_ns", "value", "device", "_gpid"]].reset_index(drop=True)
