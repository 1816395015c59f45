"""Op name → model, and :func:`model_op` (one call's cost)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from analyzers.op_models import attention, conv, elementwise, gemm
from analyzers.op_models.args import OpCost, Tensor, parse_inputs

ModelFn = Callable[[list[Tensor | None]], OpCost | None]

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
    "aten::mm": gemm.mm,
    "aten::addmm": gemm.addmm,
    "aten::bmm": gemm.bmm,
    "aten::baddbmm": gemm.baddbmm,
    "aten::linear": gemm.linear,
    "aten::matmul": gemm.matmul,
    "aten::conv1d": conv.conv_fwd,
    "aten::conv2d": conv.conv_fwd,
    "aten::conv3d": conv.conv_fwd,
    "aten::convolution": conv.conv_fwd,
    "aten::_convolution": conv.conv_fwd,
    "aten::cudnn_convolution": conv.conv_fwd,
    "aten::convolution_backward": conv.conv_bwd,
    "aten::scaled_dot_product_attention": attention.attention("bhld", False),
    "aten::_scaled_dot_product_flash_attention": attention.attention("bhld", False),
    "aten::_scaled_dot_product_efficient_attention": attention.attention("bhld", False),
    "aten::_scaled_dot_product_cudnn_attention": attention.attention("bhld", False),
    "aten::_flash_attention_forward": attention.attention("blhd", False),
    "aten::_efficient_attention_forward": attention.attention("blhd", False),
    "aten::_scaled_dot_product_flash_attention_backward": attention.attention("bhld", True),
    "aten::_scaled_dot_product_efficient_attention_backward": attention.attention("bhld", True),
    "aten::_scaled_dot_product_cudnn_attention_backward": attention.attention("bhld", True),
    "aten::_flash_attention_backward": attention.attention("blhd", True),
    "aten::_efficient_attention_backward": attention.attention("blhd", True),
    "aten::copy_": elementwise.copy,
    "aten::clone": elementwise.clone,
    "aten::fill_": elementwise.fill,
    "aten::zero_": elementwise.fill,
    "aten::softmax": elementwise.softmax,
    "aten::_softmax": elementwise.softmax,
    "aten::log_softmax": elementwise.softmax,
    "aten::_log_softmax": elementwise.softmax,
    **{f"aten::{r}": elementwise.reduce for r in ("sum", "mean", "amax", "amin", "prod", "norm")},
    **{f"aten::{op}": elementwise.elementwise(1) for op in (*_BINARY, *_UNARY)},
    **{f"aten::{op}_": elementwise.inplace(1) for op in (*_BINARY, *_UNARY)},
}
"""Op name → model.  Ops not listed (and calls whose shapes do not fit) are not modelled."""


def model_op(name: str, input_dims: Any, input_types: Any) -> OpCost | None:
    """The cost of one call of op *name*, or None when not modelled / shapes unusable."""
    fn = MODELS.get(name)
    if fn is None:
        return None
    inputs = parse_inputs(input_dims, input_types)
    if inputs is None:
        return None
    return fn(inputs)
