"""Parse NCCL (and RCCL) GPU kernel names of every NCCL version.

A kernel name tells which collective ran and, depending on the NCCL version, the specialised
kernel's algorithm, protocol, reduction and element type (docs/communication.md §3):

    ======  ==================================================  =====================
    NCCL    name (before the argument list)                     family
    ======  ==================================================  =====================
    ≤ 2.7   ``ncclAllReduceRingLLKernel_sum_f32``               ``legacy``
    2.8+    ``ncclKernel_AllReduce_RING_LL_Sum_float``          ``ncclKernel``
    2.19+   ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``,
            ``ncclDevKernel_SendRecv``, ``…_Generic_1``         ``ncclDevKernel``
    2.27    ``ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16`` ``ncclSymDevKernel``
    2.28+   ``ncclSymkDevKernel_ReduceScatter_LL_sum_f32``      ``ncclSymkDevKernel``
    ======  ==================================================  =====================

Caveat: since NCCL 2.12 a kernel *name* is the specialisation that was launched, not
necessarily the algorithm/protocol that ran (one kernel executes any function of its
collective).  Fields are therefore named ``kernel_*``: they say what the name encodes.
Copy collectives (AllGather, Broadcast, SendRecv) carry no meaningful reduction or type
(``Sum_int8_t`` before 2.19), so those fields are None for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from collectors.nccl_formulas import canonical_collective, canonical_dtype

NCCL_NAME = re.compile(r"^(?:nccl|rccl)", re.IGNORECASE)
"""Collective detection for the collectives table: the name starts with ``nccl`` or ``rccl``."""

_TYPES_NEW = "i8|u8|i32|u32|i64|u64|f16|f32|f64|bf16|f8e4m3|f8e5m2"
_OPS_NEW = "Sum|Prod|MinMax|Min|Max|PreMulSum|SumPostDiv|Avg"

_RE_KERNEL = re.compile(
    r"^ncclKernel_(?P<coll>[A-Za-z]+?)"
    r"(?:_(?P<algo>RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT))?"
    r"(?:_(?P<proto>LL128|LL|SIMPLE))?"
    r"(?:_(?P<op>[A-Za-z]+))?"
    r"(?:_(?P<ty>\w+?))?$"
)
_RE_DEV = re.compile(
    r"^ncclDevKernel_(?P<coll>AllReduce|AllGatherV|AllGather|ReduceScatter|Reduce|Broadcast"
    r"|SendRecv|AlltoAll|Gather|Scatter|Generic)"
    r"(?:_(?P<gen>\d+))?"
    rf"(?:_(?P<op>{_OPS_NEW}))?"
    rf"(?:_(?P<ty>{_TYPES_NEW}))?"
    r"(?:_(?P<algo>RING|TREE|NVLS|NVLS_TREE|COLLNET_DIRECT|COLLNET_CHAIN|PAT))?"
    r"(?:_(?P<proto>LL128|LL|SIMPLE))?$"
)
_RE_SYM = re.compile(r"^nccl(?P<kind>Sym|Symk)DevKernel_(?P<coll>[A-Za-z]+)(?:_(?P<rest>.+))?$")
_RE_SYM_TAIL = re.compile(
    rf"^(?:(?P<algo>.+?)_)?(?P<op>sum|prod|minmax|min|max|premulsum|sumpostdiv|avg)_(?P<ty>{_TYPES_NEW})$"
)
_RE_LEGACY = re.compile(
    r"^nccl(?P<coll>AllReduce|AllGather|ReduceScatter|Reduce|Broadcast|SendRecv|Send|Recv)"
    r"(?P<algo>Ring|Tree|CollNet)?(?P<proto>LL128|LL)?Kernel"
    r"(?:_(?P<op>sum|prod|min|max|avg|copy|premulsum|sumpostdiv))?(?:_(?P<ty>[a-z0-9]+))?$"
)

_COPY = frozenset({"all_gather", "broadcast", "send_recv", "send", "recv", "all_to_all"})


@dataclass(frozen=True)
class NcclKernel:
    """What an NCCL kernel name encodes (None = not encoded / not meaningful)."""

    name: str
    collective: str | None
    """Canonical collective (``all_reduce``, ...); None for ``Generic`` kernels."""
    nccl_collective: str | None
    """NCCL's own spelling (``AllReduce``, ``SendRecv``, ``Generic``)."""
    family: str
    """``legacy`` | ``ncclKernel`` | ``ncclDevKernel`` | ``ncclSymDevKernel`` |
    ``ncclSymkDevKernel`` | ``rccl`` | ``other`` (starts with nccl, pattern not recognised)."""
    kernel_algo: str | None = None
    kernel_proto: str | None = None
    kernel_redop: str | None = None
    kernel_dtype: str | None = None
    """Canonical dtype (``float32``...)."""


def _base(name: str) -> str:
    base = name.split("(", 1)[0].strip()
    if base.startswith("void "):
        base = base[5:].strip()
    return base.split("<", 1)[0]


def parse_kernel_name(name: object) -> NcclKernel | None:
    """Parse one kernel name; None when it is not an NCCL/RCCL kernel (no ``nccl`` prefix).

    ============================================================  ==========================
    name                                                          → collective, algo, proto,
                                                                  redop, dtype
    ============================================================  ==========================
    ``ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, …)``   all_reduce RING LL Sum
                                                                  float32
    ``ncclKernel_Broadcast_RING_LL_Sum_int8_t(…)``                broadcast RING LL – –
    ``ncclDevKernel_AllReduce_Sum_bf16_TREE_LL(…)``               all_reduce TREE LL Sum
                                                                  bfloat16
    ``ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16``           all_reduce RSxLD_AGxST sum
                                                                  bfloat16
    ``ncclAllReduceRingLLKernel_sum_f32(ncclColl)``               all_reduce Ring LL sum
                                                                  float32
    ============================================================  ==========================
    """
    if not isinstance(name, str):
        return None
    base = _base(name)
    if not NCCL_NAME.match(base):
        return None
    family = "rccl" if base.lower().startswith("rccl") else "other"
    m = _RE_KERNEL.match(base)
    if m:
        family = "ncclKernel"
    else:
        m = _RE_DEV.match(base)
        if m:
            family = "ncclDevKernel"
    if m:
        coll = m.group("coll")
        algo, proto, op, ty = m.group("algo"), m.group("proto"), m.group("op"), m.group("ty")
        return _make(name, coll, family, algo, proto, op, ty)
    m = _RE_SYM.match(base)
    if m:
        family = "ncclSymDevKernel" if m.group("kind") == "Sym" else "ncclSymkDevKernel"
        rest = m.group("rest") or ""
        t = _RE_SYM_TAIL.match(rest)
        if t:
            return _make(
                name, m.group("coll"), family, t.group("algo"), None, t.group("op"), t.group("ty")
            )
        return _make(name, m.group("coll"), family, rest or None, None, None, None)
    m = _RE_LEGACY.match(base)
    if m:
        op = m.group("op")
        return _make(
            name,
            m.group("coll"),
            "legacy",
            m.group("algo"),
            m.group("proto"),
            None if op == "copy" else op,
            m.group("ty"),
        )
    # rccl / unknown nccl-prefixed names: best effort from the first CamelCase word
    word = re.match(r"^(?:nccl|rccl)(?:Dev)?(?:Kernel)?_?([A-Za-z]+)", base, re.IGNORECASE)
    coll = canonical_collective(word.group(1)) if word else None
    return NcclKernel(name=name, collective=coll, nccl_collective=None, family=family)


def _make(
    name: str,
    coll: str,
    family: str,
    algo: str | None,
    proto: str | None,
    op: str | None,
    ty: str | None,
) -> NcclKernel:
    canon = None if coll == "Generic" else canonical_collective(coll)
    dtype = canonical_dtype(ty) if ty else None
    if canon in _COPY:
        op, dtype = None, None
    return NcclKernel(
        name=name,
        collective=canon,
        nccl_collective=coll,
        family=family,
        kernel_algo=algo,
        kernel_proto=proto,
        kernel_redop=op,
        kernel_dtype=dtype,
    )


KERNEL_COLUMNS = (
    "collective",
    "nccl_collective",
    "family",
    "kernel_algo",
    "kernel_proto",
    "kernel_redop",
    "kernel_dtype",
)


def parse_kernel_names(names: Iterable[object]) -> pd.DataFrame:
    """Parse many names (each distinct name once); index = name, columns = KERNEL_COLUMNS.

    Names that are not NCCL kernels are left out.
    """
    rows = {}
    for n in dict.fromkeys(names):
        k = parse_kernel_name(n)
        if k is not None:
            rows[n] = [getattr(k, c) for c in KERNEL_COLUMNS]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(KERNEL_COLUMNS))
