"""Algorithm and bus bandwidth of NCCL collectives (nccl-tests definitions), and name tables.

Definitions (nccl-tests ``src/<coll>.cu`` and ``doc/PERFORMANCE.md``; docs/communication.md §2):

    algbw = S / t                       bytes per second, reported in GB/s (GB = 10⁹ B)
    busbw = algbw × factor(collective, n)

``S`` is the message size in nccl-tests' sense (the printed ``size`` column): the per-rank
buffer of all_reduce / broadcast / reduce / send / recv, and the *total* buffer
(``count × n × elt``) of all_gather / reduce_scatter / all_to_all / gather / scatter.
``t`` is the operation's time, ``n`` the number of ranks in the communicator.

    ==================================================  =============
    collective                                          factor
    ==================================================  =============
    all_reduce                                          2(n−1)/n
    all_gather, reduce_scatter, all_to_all,
    gather, scatter                                     (n−1)/n
    broadcast, reduce, send, recv, send_recv            1
    barrier, unknown                                    undefined
    ==================================================  =============

The module also names collectives and element types consistently across sources (c10d names,
``nccl:*`` profiler titles, NCCL kernel and NVTX names, nccl-tests binaries) and gives the size
of each element type, which is how message bytes are derived from element counts.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "send_recv",
    "barrier",
)
"""Canonical collective names used in every table."""

_RING_FAMILY = frozenset({"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"})
_ONE = frozenset({"broadcast", "reduce", "send", "recv", "send_recv"})

# ordered: first prefix match of the squashed name wins (allreduce before reduce, ...)
_PREFIXES = (
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("bcast", "broadcast"),
    ("reduce", "reduce"),
    ("sendrecv", "send_recv"),
    ("send", "send"),
    ("recv", "recv"),
    ("gather", "gather"),
    ("scatter", "scatter"),
    ("barrier", "barrier"),
)
_STRIP = re.compile(r"^(?:nccl:|c10d::|gloo:|mpi:|ucc:)", re.IGNORECASE)


def canonical_collective(name: object) -> str | None:
    """Canonical collective name (see :data:`COLLECTIVES`) of any spelling, or None.

    ============================================  ================
    input                                         result
    ============================================  ================
    ``allreduce``, ``nccl:all_reduce``,           ``all_reduce``
    ``c10d::allreduce_``, ``ncclAllReduce``,
    ``all_reduce_perf``, ``AllReduce``
    ``_allgather_base``, ``all_gather_into_
    tensor_coalesced``, ``AllGatherV``            ``all_gather``
    ``_reduce_scatter_base``                      ``reduce_scatter``
    ``alltoall_base``, ``all_to_all_single``      ``all_to_all``
    ``SendRecv``, ``sendrecv_perf``               ``send_recv``
    ============================================  ================
    """
    if not isinstance(name, str) or not name:
        return None
    s = _STRIP.sub("", name.strip())
    s = s.lower()
    if s.startswith("nccl") and not s.startswith("nccl:"):
        s = s[4:]  # ncclAllReduce (NVTX / API names)
    squashed = re.sub(r"[^a-z]", "", s)
    for prefix, canon in _PREFIXES:
        if squashed.startswith(prefix):
            return canon
    return None


def bus_factor(collective: str | None, n: int | None) -> float:
    """busbw / algbw for *collective* on *n* ranks; NaN when undefined or *n* unknown (≤ 0)."""
    if collective is None:
        return math.nan
    if collective in _ONE:
        return 1.0
    if n is None or n <= 0:
        return math.nan
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in _RING_FAMILY:
        return (n - 1) / n
    return math.nan


def algbw_gbps(size_bytes: float, time_ns: float) -> float:
    """Algorithm bandwidth in GB/s (10⁹ B/s): ``S / t``; NaN when ``t ≤ 0`` or unknown."""
    if not (time_ns > 0) or size_bytes < 0:
        return math.nan
    return size_bytes / time_ns  # B/ns == GB/s


def busbw_gbps(collective: str | None, size_bytes: float, time_ns: float, n: int | None) -> float:
    """Bus bandwidth in GB/s: ``algbw × bus_factor(collective, n)``."""
    return algbw_gbps(size_bytes, time_ns) * bus_factor(collective, n)


def bus_factors(collectives: pd.Series, n: pd.Series) -> np.ndarray:
    """Vectorized :func:`bus_factor` over aligned Series (n < 1 → NaN where n matters)."""
    coll = collectives.astype(object).to_numpy()
    nn = n.to_numpy(dtype=np.float64)
    out = np.full(len(coll), np.nan)
    valid_n = nn >= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        ar = np.isin(coll, ["all_reduce"]) & valid_n
        out[ar] = 2.0 * (nn[ar] - 1) / nn[ar]
        ring = np.isin(coll, list(_RING_FAMILY)) & valid_n
        out[ring] = (nn[ring] - 1) / nn[ring]
    out[np.isin(coll, list(_ONE))] = 1.0
    return out


def message_size_rule(collective: str | None) -> str:
    """Which per-rank buffer is ``S``: ``"out"`` for all_gather / gather, ``"in"`` otherwise.

    PyTorch's ``In msg nelems`` / ``Out msg nelems`` are per-rank element counts; nccl-tests'
    ``S`` is the input of all_reduce / reduce_scatter / all_to_all / broadcast / reduce /
    send / recv / scatter and the (n× larger) output of all_gather / gather.
    """
    return "out" if collective in ("all_gather", "gather") else "in"


# ----------------------------------------------------------------------------------- dtypes

DTYPE_BYTES: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "float8_e4m3": 1,
    "float8_e5m2": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "complex32": 4,
    "complex64": 8,
    "complex128": 16,
}
"""Bytes per element of each canonical dtype."""

_DTYPE_ALIASES: dict[str, str] = {
    # c10 ScalarType names (record_param_comms ``dtype``)
    "byte": "uint8",
    "char": "int8",
    "short": "int16",
    "int": "int32",
    "long": "int64",
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "complexhalf": "complex32",
    "complexfloat": "complex64",
    "complexdouble": "complex128",
    "bool": "bool",
    "bfloat16": "bfloat16",
    "qint8": "int8",
    "quint8": "uint8",
    "qint32": "int32",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    # C / Kineto ``Input type`` spellings
    "unsigned char": "uint8",
    "signed char": "int8",
    "c10::half": "float16",
    "c10::bfloat16": "bfloat16",
    "int8_t": "int8",
    "uint8_t": "uint8",
    "int32_t": "int32",
    "uint32_t": "uint32",
    "int64_t": "int64",
    "uint64_t": "uint64",
    "__nv_bfloat16": "bfloat16",
    "long int": "int64",
    "unsigned int": "uint32",
    # NCCL kernel tokens (2.19+ and ≤ 2.7) and nccl-tests type names
    "i8": "int8",
    "u8": "uint8",
    "i32": "int32",
    "u32": "uint32",
    "i64": "int64",
    "u64": "uint64",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "bf16": "bfloat16",
    "b16": "bfloat16",
    "f8e4m3": "float8_e4m3",
    "f8e5m2": "float8_e5m2",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "int16": "int16",
}


def canonical_dtype(name: object) -> str | None:
    """Canonical dtype (a key of :data:`DTYPE_BYTES`) of any spelling, or None.

    Accepts c10 ScalarType names (``Float``, ``BFloat16``), C names from Kineto's ``Input type``
    (``float``, ``unsigned char``, ``c10::Half``), NCCL kernel tokens (``f32``, ``bf16``,
    ``__nv_bfloat16``) and torch names (``torch.float32``).  ``Float8_e4m3fn`` → ``float8_e4m3``.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    s = name.strip().lower()
    if s.startswith("torch."):
        s = s[6:]
    if s in DTYPE_BYTES:
        return s
    if s in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[s]
    if s.startswith("float8_e4m3"):
        return "float8_e4m3"
    if s.startswith("float8_e5m2"):
        return "float8_e5m2"
    return None


def dtype_bytes(name: object) -> int | None:
    """Element size in bytes of a dtype spelled any way :func:`canonical_dtype` accepts."""
    c = canonical_dtype(name)
    return DTYPE_BYTES.get(c) if c else None
