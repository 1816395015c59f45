"""Message sizes of collectives: element counts from recorded tensor shapes, the group size
from a ``c10d`` op's tensors, and ``message_bytes`` (nccl-tests' ``S``, see
:func:`collectors.nccl_formulas.message_size_rule`), deriving a missing side through the group
size (docs/communication.md §1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzers.collectives.args import dtype_of
from collectors.nccl_formulas import message_size_rule


def numel(dims: Any) -> int | None:
    if not isinstance(dims, list) or not dims:
        return None
    if not all(isinstance(d, int) and d >= 0 for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))


def dims_size(dims_json: Any, types_json: Any) -> tuple[int, str] | None:
    """(element count, dtype) of the tensors in a Kineto ``Input Dims``/``Input type`` pair.

    Entries whose type is a tensor dtype and whose dims are non-empty are summed (all of one
    dtype); ``Scalar``, ``TensorList`` and empty entries are skipped.  None when nothing is left.
    """
    import json

    try:
        dims = json.loads(dims_json) if isinstance(dims_json, str) else dims_json
        types = json.loads(types_json) if isinstance(types_json, str) else types_json
    except ValueError:
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    total, dtype = 0, None
    found = False
    for d, t in zip(dims, types, strict=False):
        n = numel(d)
        c = dtype_of(t) if isinstance(t, str) else None
        if n is None or c is None:
            continue
        if dtype is not None and c != dtype:
            return None
        total, dtype, found = total + n, c, True
    return (total, dtype) if found and dtype else None


def c10d_group_size(name: str, dims_json: Any) -> int | None:
    """Group size from a ``c10d::_allgather_base_`` / ``_reduce_scatter_base_`` op's tensors.

    Torch ≤ 2.0 records ``Input Dims = [output, input, ...]``; all_gather's output is n × its
    input, reduce_scatter's input n × its output.
    """
    import json

    if "allgather_base" not in name and "reduce_scatter_base" not in name:
        return None
    try:
        dims = json.loads(dims_json) if isinstance(dims_json, str) else None
    except ValueError:
        return None
    if not isinstance(dims, list) or len(dims) < 2:
        return None
    a, b = numel(dims[0]), numel(dims[1])
    if not a or not b:
        return None
    big, small = max(a, b), min(a, b)
    return big // small if big % small == 0 and big // small >= 2 else None


def add_message_bytes(df: pd.DataFrame) -> None:
    """Fill ``in_bytes`` / ``out_bytes`` where the group size gives the missing side, then set
    ``message_bytes`` (in place; -1 where unknown)."""
    # derive the missing side through the group size, then S (nccl-tests message size)
    n = df["group_size"].to_numpy()
    coll = df["collective"].to_numpy(dtype=object)
    inb = df["in_bytes"].to_numpy().copy()
    outb = df["out_bytes"].to_numpy().copy()
    gather_like = np.isin(coll, ["all_gather", "gather"])
    scatter_like = np.isin(coll, ["reduce_scatter", "scatter"])
    same = np.isin(coll, ["all_reduce", "broadcast", "reduce"])
    known_n = n > 0
    fix = gather_like & (outb < 0) & (inb >= 0) & known_n
    outb[fix] = inb[fix] * n[fix]
    fix = scatter_like & (inb < 0) & (outb >= 0) & known_n
    inb[fix] = outb[fix] * n[fix]
    fix = same & (outb < 0) & (inb >= 0)
    outb[fix] = inb[fix]
    df["in_bytes"] = inb.astype(np.int64)
    df["out_bytes"] = outb.astype(np.int64)
    rule_out = np.array([message_size_rule(c) == "out" for c in coll], dtype=bool)
    df["message_bytes"] = np.where(rule_out, outb, inb).astype(np.int64)
