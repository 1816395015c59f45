"""Attention models: scaled-dot-product, flash and memory-efficient attention."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from analyzers.op_models.args import OpCost, Tensor, arg, dtype_size, matmul_precision


def attention_cost(
    q: Tensor, k: Tensor, v: Tensor, layout: str, reads: Sequence[Tensor], backward: bool
) -> OpCost | None:
    """Forward ``2·B·H·L·S·E + 2·B·H·L·S·Ev``, backward 2.5 × forward; *layout* ``bhld``
    (SDPA) or ``blhd`` (flash/efficient kernels' own ops)."""
    if len(q.shape) < 3 or len(k.shape) != len(q.shape) or len(v.shape) != len(q.shape):
        return None
    if layout == "blhd":
        if len(q.shape) != 4:
            return None
        b, lq, h, e = q.shape
        s, ev = k.shape[1], v.shape[3]
        batch = b * h
    else:
        batch = math.prod(q.shape[:-2])
        lq, e = q.shape[-2], q.shape[-1]
        s, ev = k.shape[-2], v.shape[-1]
    if k.shape[-1] != e:
        return None
    fwd = 2 * batch * lq * s * e + 2 * batch * lq * s * ev
    size = dtype_size(q.dtype) or 0
    if backward:
        flops = fwd * 5 // 2
        nbytes = sum(t.nbytes for t in reads) + q.nbytes + k.nbytes + v.nbytes
    else:
        flops = fwd
        nbytes = sum(t.nbytes for t in reads) + batch * lq * ev * size
    return OpCost(
        flops,
        nbytes,
        "attention",
        matmul_precision(q.dtype),
        False,
        "causal flag not recorded: full L×S product counted",
    )


def attention(layout: str, backward: bool) -> Callable[[list[Tensor | None]], OpCost | None]:
    def model(x: list[Tensor | None]) -> OpCost | None:
        off = 1 if backward else 0
        q, k, v = arg(x, off), arg(x, off + 1), arg(x, off + 2)
        if q is None or k is None or v is None:
            return None
        reads = [t for t in x if t is not None]
        return attention_cost(q, k, v, layout, reads, backward)

    return model
