"""Algorithm and bus bandwidth of NCCL collectives (nccl-tests definitions), and name tables.

The formulas and tables live in :mod:`collectors.nccl_formulas` (the collectors that build the
collectives table and parse nccl-tests logs need them, and collectors never import analyzers);
this module re-exports them for analyzers and existing imports.
"""

from __future__ import annotations

from collectors.nccl_formulas import (
    COLLECTIVES,
    DTYPE_BYTES,
    algbw_gbps,
    bus_factor,
    bus_factors,
    busbw_gbps,
    canonical_collective,
    canonical_dtype,
    dtype_bytes,
    message_size_rule,
)

__all__ = [
    "COLLECTIVES",
    "DTYPE_BYTES",
    "algbw_gbps",
    "bus_factor",
    "bus_factors",
    "busbw_gbps",
    "canonical_collective",
    "canonical_dtype",
    "dtype_bytes",
    "message_size_rule",
]
