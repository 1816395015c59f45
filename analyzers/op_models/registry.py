"""Op name → model, and :func:`model_op` (one call's cost)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from analyzers.op_models import elementwise
from analyzers.op_models.args import OpArgs, OpCost, parse_args
from analyzers.op_models.attention import ATTENTION_MODELS
from analyzers.op_models.conv import CONV_MODELS
from analyzers.op_models.gemm import GEMM_MODELS

ModelFn = Callable[[OpArgs], OpCost | None]

_BINARY = ("add", "sub", "mul", "div", "rsub", "pow", "maximum", "minimum", "remainder")
_UNARY = (
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "neg",
    "sqrt",
    "rsqrt",
    "abs",
    "reciprocal",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
)

MODELS: dict[str, ModelFn] = {
    **GEMM_MODELS,
    **CONV_MODELS,
    **ATTENTION_MODELS,
    "aten::copy_": elementwise.copy,
    "aten::clone": elementwise.clone,
    "aten::fill_": elementwise.fill,
    "aten::zero_": elementwise.fill,
    "aten::softmax": elementwise.softmax,
    "aten::_softmax": elementwise.softmax,
    "aten::log_softmax": elementwise.softmax,
    "aten::_log_softmax": elementwise.softmax,
    **elementwise.REDUCTIONS,
    **{f"aten::{op}": elementwise.elementwise(1) for op in (*_BINARY, *_UNARY)},
    **{f"aten::{op}_": elementwise.inplace(1) for op in (*_BINARY, *_UNARY)},
}
"""Op name → model.  Ops not listed (and calls whose shapes do not fit) are not modelled."""


def model_op(
    name: str,
    input_dims: Any,
    input_types: Any,
    concrete_inputs: Any = None,
    input_strides: Any = None,
) -> OpCost | None:
    """The cost of one call of op *name* from its recorded ``Input Dims``, ``Input type``,
    ``Concrete Inputs`` and ``Input Strides`` (JSON text or lists; the last two optional),
    or None when the op is not modelled or its arguments fit none of its overloads."""
    fn = MODELS.get(name)
    if fn is None:
        return None
    args = parse_args(input_dims, input_types, concrete_inputs, input_strides)
    if args is None:
        return None
    return fn(args)
