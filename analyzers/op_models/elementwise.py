"""Elementwise, copy, softmax and reduction models."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from analyzers.op_models.args import (
    FLOAT_PRECISION,
    OpCost,
    Tensor,
    arg,
    dtype_size,
    vector_precision,
)


def _promote(tensors: Sequence[Tensor]) -> str:
    floats = [t.dtype for t in tensors if t.dtype in FLOAT_PRECISION]
    pool = floats or [t.dtype for t in tensors]
    return max(pool, key=lambda d: dtype_size(d) or 0)


def elementwise(flop_per_elem: int) -> Callable[[list[Tensor | None]], OpCost | None]:
    def model(x: list[Tensor | None]) -> OpCost | None:
        ts = [t for t in x if t is not None]
        if not ts:
            return None
        try:
            shape = np.broadcast_shapes(*(t.shape for t in ts))
        except ValueError:
            return None
        out_numel = math.prod(shape)
        out_dtype = _promote(ts)
        nbytes = sum(t.nbytes for t in ts) + out_numel * (dtype_size(out_dtype) or 0)
        return OpCost(
            flop_per_elem * out_numel,
            nbytes,
            "elementwise",
            vector_precision(out_dtype),
            True,
        )

    return model


def inplace(flop_per_elem: int) -> Callable[[list[Tensor | None]], OpCost | None]:
    """``op_(self, other...)``: reads every tensor input, writes ``self``."""

    def model(x: list[Tensor | None]) -> OpCost | None:
        self_t = arg(x, 0)
        if self_t is None:
            return None
        ts = [t for t in x if t is not None]
        nbytes = sum(t.nbytes for t in ts) + self_t.nbytes
        return OpCost(
            flop_per_elem * self_t.numel,
            nbytes,
            "elementwise",
            vector_precision(self_t.dtype),
            True,
        )

    return model


def copy(x: list[Tensor | None]) -> OpCost | None:
    """``copy_(self, src)``: reads ``src``, writes ``self`` (dtype conversion included)."""
    dst, src = arg(x, 0), arg(x, 1)
    if dst is None or src is None:
        return None
    return OpCost(0, src.nbytes + dst.nbytes, "elementwise", "fp32", True)


def clone(x: list[Tensor | None]) -> OpCost | None:
    src = arg(x, 0)
    if src is None:
        return None
    return OpCost(0, 2 * src.nbytes, "elementwise", "fp32", True)


def fill(x: list[Tensor | None]) -> OpCost | None:
    dst = arg(x, 0)
    if dst is None:
        return None
    return OpCost(0, dst.nbytes, "elementwise", "fp32", True)


def softmax(x: list[Tensor | None]) -> OpCost | None:
    t = arg(x, 0)
    if t is None:
        return None
    return OpCost(5 * t.numel, 2 * t.nbytes, "reduction", vector_precision(t.dtype), True)


def reduce(x: list[Tensor | None]) -> OpCost | None:
    t = arg(x, 0)
    if t is None:
        return None
    return OpCost(
        t.numel,
        t.nbytes,
        "reduction",
        vector_precision(t.dtype),
        False,
        "reduced dims not recorded: output bytes not counted",
    )
