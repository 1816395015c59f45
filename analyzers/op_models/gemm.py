"""GEMM models: ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``linear``, ``matmul``, their ``out=``
and ``dtype`` overloads, and vendor GEMM ops.

With ``A`` ``[B,] M×K``, ``B`` ``[B,] K×N`` (docs/efficiency.md "Op models"):

* FLOP = ``2·B·M·N·K``, + ``B·M·N`` when a bias / ``self`` term is added (``addmm``,
  ``baddbmm`` with ``beta ≠ 0``, ``linear`` with a bias); ``alpha``/``beta`` scalings are not
  counted;
* bytes = every tensor input read once (``self`` only when ``beta ≠ 0``) + the output written
  once, at the ``out=`` tensor's dtype when given, else the ``dtype`` argument's, else ``A``'s.

Argument positions follow the ATen schemas (``aten::mm.out(self, mat2, *, out)``: Kineto
records the keyword-only ``out`` as a third input).  Inductor's generated code calls its
``extern_kernels.mm(a, b, out=buf)`` / ``addmm`` / ``bmm`` / ``baddbmm``, which dispatch these
``out`` overloads: they are recorded (and modelled) as ``aten::mm`` & co. with the extra input.
A call whose inputs fit none of an op's overloads (a shape mismatch, more arguments than any
overload takes) is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from analyzers.op_models.args import (
    SCALAR_TYPES,
    OpArgs,
    OpCost,
    Tensor,
    bias_numel,
    dtype_size,
    matmul_precision,
)


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


@dataclass(frozen=True)
class Overload:
    """Where one overload of a GEMM op keeps its arguments (None: not an argument of it)."""

    arity: int
    """Recorded inputs of this overload."""
    out: int | None = None
    """The ``out=`` tensor."""
    dtype: int | None = None
    """The ``out_dtype`` ScalarType argument."""
    beta: int | None = None


MM = (Overload(2), Overload(3, out=2), Overload(3, dtype=2), Overload(4, dtype=2, out=3))
"""``mm`` / ``bmm``: (self, mat2), ``.out``, ``.dtype``, ``.dtype_out``."""
ADDMM = (
    Overload(5, beta=3),
    Overload(6, beta=3, out=5),
    Overload(6, dtype=3, beta=4),
    Overload(7, dtype=3, beta=4, out=6),
)
"""``addmm`` / ``baddbmm``: (self, mat1, mat2, beta, alpha), ``.out``, ``.dtype``,
``.dtype_out``."""
MATMUL = (Overload(2), Overload(3, out=2))
LINEAR = (Overload(3), Overload(4, out=3))


def _overload(x: OpArgs, table: Sequence[Overload]) -> Overload | None:
    """The overload the recorded call fits: its arity, and a tensor exactly where ``out`` is."""
    for o in table:
        if len(x) != o.arity:
            continue
        if o.out is not None and x.tensor(o.out) is None:
            continue
        if o.dtype is not None and x.tensor(o.dtype) is not None:
            continue
        return o
    return None


def _out_dtype(x: OpArgs, o: Overload, default: str) -> str:
    out = x.tensor(o.out)
    if out is not None:
        return out.dtype
    code = x.ints(o.dtype)
    if code is not None and len(code) == 1 and code[0] in SCALAR_TYPES:
        return SCALAR_TYPES[code[0]]
    return default


def _note(x: OpArgs, o: Overload) -> str:
    if o.dtype is not None and x.tensor(o.out) is None and x.ints(o.dtype) is None:
        return "out_dtype not recorded: output bytes at the input dtype"
    return ""


def mm(x: OpArgs) -> OpCost | None:
    o = _overload(x, MM)
    a, b = x.tensor(0), x.tensor(1)
    if o is None or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    return _exactness(gemm_cost(1, m, n, k, [a, b], _out_dtype(x, o, a.dtype)), _note(x, o))


def bmm(x: OpArgs) -> OpCost | None:
    o = _overload(x, MM)
    a, b = x.tensor(0), x.tensor(1)
    if o is None or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    return _exactness(gemm_cost(bt, m, n, k, [a, b], _out_dtype(x, o, a.dtype)), _note(x, o))


def _beta_zero(x: OpArgs, o: Overload) -> bool:
    beta = x.number(o.beta)
    return beta is not None and beta == 0.0


def addmm(x: OpArgs) -> OpCost | None:
    o = _overload(x, ADDMM)
    c, a, b = x.tensor(0), x.tensor(1), x.tensor(2)
    if o is None or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    if _beta_zero(x, o):
        c = None  # beta = 0: self is neither read nor added
    reads = [t for t in (c, a, b) if t is not None]
    cost = gemm_cost(1, m, n, k, reads, _out_dtype(x, o, a.dtype), bias=c is not None)
    return _exactness(cost, _note(x, o))


def baddbmm(x: OpArgs) -> OpCost | None:
    o = _overload(x, ADDMM)
    c, a, b = x.tensor(0), x.tensor(1), x.tensor(2)
    if o is None or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    if _beta_zero(x, o):
        c = None
    reads = [t for t in (c, a, b) if t is not None]
    cost = gemm_cost(bt, m, n, k, reads, _out_dtype(x, o, a.dtype), bias=c is not None)
    return _exactness(cost, _note(x, o))


def _linear_cost(a: Tensor, w: Tensor, bias: Tensor | None, out_dtype: str) -> OpCost | None:
    """``y = a·wᵀ (+ bias)``: ``a`` ``[..., K]``, ``w`` ``[N, K]``."""
    if len(a.shape) < 1 or len(w.shape) != 2:
        return None
    n, k = w.shape
    if a.shape[-1] != k:
        return None
    m = math.prod(a.shape[:-1])
    has_bias = bias_numel(bias) > 0
    reads = [a, w] + ([bias] if has_bias and bias is not None else [])
    return gemm_cost(1, m, n, k, reads, out_dtype, bias=has_bias)


def linear(x: OpArgs) -> OpCost | None:
    o = _overload(x, LINEAR)
    a, w = x.tensor(0), x.tensor(1)
    if o is None or a is None or w is None:
        return None
    return _linear_cost(a, w, x.tensor(2), _out_dtype(x, o, a.dtype))


def matmul(x: OpArgs) -> OpCost | None:
    o = _overload(x, MATMUL)
    a, b = x.tensor(0), x.tensor(1)
    if o is None or a is None or b is None or not a.shape or not b.shape:
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
    return gemm_cost(batch, m, n, k, [a, b], _out_dtype(x, o, a.dtype))


@dataclass(frozen=True)
class LinearLike:
    """A vendor op computing ``y = x·wᵀ (+ bias)`` with ``w`` ``[N, K]``: argument positions."""

    x: int = 0
    weight: int = 1
    bias: int | None = 2
    out_dtype: int | None = None
    """A ScalarType argument naming the output dtype (absent: the input's dtype)."""

    def __call__(self, args: OpArgs) -> OpCost | None:
        a, w = args.tensor(self.x), args.tensor(self.weight)
        if a is None or w is None:
            return None
        dtype = a.dtype
        code = args.ints(self.out_dtype)
        if code is not None and len(code) == 1 and code[0] in SCALAR_TYPES:
            dtype = SCALAR_TYPES[code[0]]
        return _linear_cost(a, w, args.tensor(self.bias), dtype)


VENDOR_GEMMS: dict[str, LinearLike] = {
    "aiter::gemm_a16w16": LinearLike(out_dtype=3),
    "vllm::rocm_unquantized_gemm": LinearLike(),
}
"""AMD AITER's ``gemm_a16w16(A, B, bias, otype, ...)`` and vLLM's ROCm
``rocm_unquantized_gemm(x, weight, bias)``: both ``x·Bᵀ + bias`` (ops TraceLens models too)."""


def _exactness(cost: OpCost, note: str) -> OpCost:
    if not note:
        return cost
    return OpCost(cost.flops, cost.bytes, cost.kind, cost.precision, False, note)


GEMM_MODELS: dict[str, Callable[[OpArgs], OpCost | None]] = {
    "aten::mm": mm,
    "aten::addmm": addmm,
    "aten::bmm": bmm,
    "aten::baddbmm": baddbmm,
    "aten::linear": linear,
    "aten::matmul": matmul,
    **VENDOR_GEMMS,
}
"""Op name → GEMM model."""
