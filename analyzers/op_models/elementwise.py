"""Elementwise, copy, softmax and reduction models.

* elementwise: 1 FLOP per output element (0 for copies and fills); output = the broadcast of
  the tensor inputs at the promoted dtype; bytes = inputs read + output written;
* in place (``op_(self, ...)``): reads every tensor input, writes ``self``;
* softmax family: 5 FLOP per element, input read + output written;
* reductions (``sum``/``mean``/``amax``/``amin``/``prod``/``norm``): 1 FLOP per input element;
  bytes = input read + output written, the output's size from the recorded ``dim`` /
  ``keepdim`` (Concrete Inputs); without them (or for ``norm``) the output is not counted and
  the cost is an estimate.

Reads count the distinct elements of a tensor (an ``expand``-ed dimension of stride 0 once,
:attr:`~analyzers.op_models.args.Tensor.distinct_numel`); writes count every element.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from analyzers.op_models.args import (
    FLOAT_PRECISION,
    SCALAR_TYPES,
    OpArgs,
    OpCost,
    Tensor,
    dtype_size,
    vector_precision,
)

NO_DIMS = "reduced dims not recorded: output bytes not counted"


def _promote(tensors: Sequence[Tensor]) -> str:
    floats = [t.dtype for t in tensors if t.dtype in FLOAT_PRECISION]
    pool = floats or [t.dtype for t in tensors]
    return max(pool, key=lambda d: dtype_size(d) or 0)


def _written(numel: int, dtype: str) -> int:
    return numel * (dtype_size(dtype) or 0)


def elementwise(flop_per_elem: int) -> Callable[[OpArgs], OpCost | None]:
    def model(x: OpArgs) -> OpCost | None:
        ts = x.present()
        if not ts:
            return None
        try:
            shape = np.broadcast_shapes(*(t.shape for t in ts))
        except ValueError:
            return None
        out_numel = math.prod(shape)
        out_dtype = _promote(ts)
        nbytes = sum(t.nbytes for t in ts) + _written(out_numel, out_dtype)
        return OpCost(
            flop_per_elem * out_numel,
            nbytes,
            "elementwise",
            vector_precision(out_dtype),
            True,
        )

    return model


def inplace(flop_per_elem: int) -> Callable[[OpArgs], OpCost | None]:
    """``op_(self, other...)``: reads every tensor input, writes ``self``."""

    def model(x: OpArgs) -> OpCost | None:
        self_t = x.tensor(0)
        if self_t is None:
            return None
        nbytes = sum(t.nbytes for t in x.present()) + _written(self_t.numel, self_t.dtype)
        return OpCost(
            flop_per_elem * self_t.numel,
            nbytes,
            "elementwise",
            vector_precision(self_t.dtype),
            True,
        )

    return model


def copy(x: OpArgs) -> OpCost | None:
    """``copy_(self, src)``: reads ``src``, writes ``self`` (dtype conversion included)."""
    dst, src = x.tensor(0), x.tensor(1)
    if dst is None or src is None:
        return None
    return OpCost(0, src.nbytes + _written(dst.numel, dst.dtype), "elementwise", "fp32", True)


def clone(x: OpArgs) -> OpCost | None:
    src = x.tensor(0)
    if src is None:
        return None
    return OpCost(0, src.nbytes + _written(src.numel, src.dtype), "elementwise", "fp32", True)


def fill(x: OpArgs) -> OpCost | None:
    dst = x.tensor(0)
    if dst is None:
        return None
    return OpCost(0, _written(dst.numel, dst.dtype), "elementwise", "fp32", True)


def softmax(x: OpArgs) -> OpCost | None:
    t = x.tensor(0)
    if t is None:
        return None
    nbytes = t.nbytes + _written(t.numel, t.dtype)
    return OpCost(5 * t.numel, nbytes, "reduction", vector_precision(t.dtype), True)


def _reduced_numel(shape: tuple[int, ...], dims: tuple[int, ...] | None) -> int | None:
    """Output elements of a reduction of *shape* over *dims* (None or empty: every dim)."""
    nd = len(shape)
    if not dims:
        return 1
    axes = {d + nd if d < 0 else d for d in dims}
    if any(not 0 <= a < nd for a in axes):
        return None
    return math.prod(n for i, n in enumerate(shape) if i not in axes)


def reduction(dim_arity: int | None, full_arity: int | None) -> Callable[[OpArgs], OpCost | None]:
    """A reduction whose ``.dim`` overload records (self, dim, keepdim[, dtype]) in
    *dim_arity* inputs and whose full overload (self[, dtype]) *full_arity* inputs; None for
    an op modelled without its output (``norm``)."""

    def model(x: OpArgs) -> OpCost | None:
        t = x.tensor(0)
        if t is None:
            return None
        out: int | None = None
        dtype_at: int | None = None
        if x.recorded and len(x) == full_arity:
            out, dtype_at = 1, 1 if full_arity > 1 else None
        elif x.recorded and len(x) == dim_arity:
            dims = x.ints(1) if x.text(1) is not None else ()
            out = _reduced_numel(t.shape, dims) if dims is not None else None
            dtype_at = 3 if dim_arity > 3 else None
        if out is None:
            return OpCost(t.numel, t.nbytes, "reduction", vector_precision(t.dtype), False, NO_DIMS)
        code = x.ints(dtype_at)
        out_dtype = SCALAR_TYPES.get(code[0], t.dtype) if code else t.dtype
        nbytes = t.nbytes + _written(out, out_dtype)
        return OpCost(t.numel, nbytes, "reduction", vector_precision(t.dtype), True)

    return model


REDUCTIONS: dict[str, Callable[[OpArgs], OpCost | None]] = {
    "aten::sum": reduction(4, 2),
    "aten::mean": reduction(4, 2),
    "aten::prod": reduction(4, 2),
    "aten::amax": reduction(3, None),
    "aten::amin": reduction(3, None),
    "aten::norm": reduction(None, None),
}
"""``sum``/``mean``/``prod``: (self, dim, keepdim, dtype) or (self, dtype); ``amax``/``amin``:
(self, dim, keepdim) with ``dim=[]`` reducing every dim; ``norm``: output not modelled."""
