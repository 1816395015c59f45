"""GEMM models: ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``linear``, ``matmul``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from analyzers.op_models.args import OpCost, Tensor, arg, bias_numel, dtype_size, matmul_precision


def gemm_cost(
    batch: int,
    m: int,
    n: int,
    k: int,
    reads: Sequence[Tensor],
    out_dtype: str,
    bias: bool = False,
    note: str = "",
) -> OpCost:
    """``2·B·M·N·K`` (+ ``B·M·N`` with a bias/self term); bytes = reads + ``B·M·N`` output."""
    flops = 2 * batch * m * n * k + (batch * m * n if bias else 0)
    nbytes = sum(t.nbytes for t in reads) + batch * m * n * (dtype_size(out_dtype) or 0)
    return OpCost(flops, nbytes, "gemm", matmul_precision(out_dtype), True, note)


def mm(x: list[Tensor | None]) -> OpCost | None:
    a, b = arg(x, 0), arg(x, 1)
    if len(x) != 2 or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    return gemm_cost(1, m, n, k, [a, b], a.dtype)


def addmm(x: list[Tensor | None]) -> OpCost | None:
    c, a, b = arg(x, 0), arg(x, 1), arg(x, 2)
    if len(x) > 5 or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    reads = [t for t in (c, a, b) if t is not None]
    return gemm_cost(1, m, n, k, reads, a.dtype, bias=c is not None)


def bmm(x: list[Tensor | None]) -> OpCost | None:
    a, b = arg(x, 0), arg(x, 1)
    if len(x) != 2 or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    return gemm_cost(bt, m, n, k, [a, b], a.dtype)


def baddbmm(x: list[Tensor | None]) -> OpCost | None:
    c, a, b = arg(x, 0), arg(x, 1), arg(x, 2)
    if len(x) > 5 or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    reads = [t for t in (c, a, b) if t is not None]
    return gemm_cost(bt, m, n, k, reads, a.dtype, bias=c is not None)


def linear(x: list[Tensor | None]) -> OpCost | None:
    a, w, bias = arg(x, 0), arg(x, 1), arg(x, 2)
    if len(x) > 3 or a is None or w is None or len(a.shape) < 1 or len(w.shape) != 2:
        return None
    n, k = w.shape
    if a.shape[-1] != k:
        return None
    m = math.prod(a.shape[:-1])
    has_bias = bias_numel(bias) > 0
    reads = [a, w] + ([bias] if has_bias and bias is not None else [])
    return gemm_cost(1, m, n, k, reads, a.dtype, bias=has_bias)


def matmul(x: list[Tensor | None]) -> OpCost | None:
    a, b = arg(x, 0), arg(x, 1)
    if len(x) != 2 or a is None or b is None or not a.shape or not b.shape:
        return None
    sa = (1, *a.shape) if len(a.shape) == 1 else a.shape
    sb = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    m, k = sa[-2], sa[-1]
    k2, n = sb[-2], sb[-1]
    if k != k2:
        return None
    try:
        batch_shape = np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))
    except ValueError:
        return None
    batch = math.prod(batch_shape)
    return gemm_cost(batch, m, n, k, [a, b], a.dtype)
