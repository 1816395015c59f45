"""Convolution models: forward and ``convolution_backward``."""

from __future__ import annotations

import math
from collections.abc import Sequence

from analyzers.op_models.args import OpCost, Tensor, arg, bias_numel, dtype_size, matmul_precision


def conv_cost(
    inp: Tensor,
    weight: Tensor,
    out_spatial: Sequence[int],
    bias: bool,
    backward: bool = False,
    exact: bool = True,
    note: str = "",
) -> OpCost:
    """Forward ``2·N·C_out·Π(out)·(C_in/groups)·Π(kernel)`` (+ bias adds); backward = grad
    input + grad weight = 2 × the forward MACs term.  Bytes: forward input + weight (+ bias)
    + output; backward grad_output + input + weight read, grad_input + grad_weight written."""
    n = inp.shape[0]
    c_out = weight.shape[0]
    cin_per_group = weight.shape[1]
    kernel = math.prod(weight.shape[2:])
    out_elems = n * c_out * math.prod(out_spatial)
    macs_term = 2 * out_elems * cin_per_group * kernel
    size = dtype_size(inp.dtype) or 0
    if backward:
        flops = 2 * macs_term
        nbytes = out_elems * size + 2 * inp.nbytes + 2 * weight.nbytes
    else:
        flops = macs_term + (out_elems if bias else 0)
        nbytes = inp.nbytes + weight.nbytes + (c_out * size if bias else 0) + out_elems * size
    return OpCost(flops, nbytes, "conv", matmul_precision(inp.dtype), exact, note)


def conv_fwd(x: list[Tensor | None]) -> OpCost | None:
    inp, w, bias = arg(x, 0), arg(x, 1), arg(x, 2)
    if inp is None or w is None or len(inp.shape) < 3 or len(inp.shape) != len(w.shape):
        return None
    if inp.shape[1] % max(w.shape[1], 1) != 0:
        return None
    return conv_cost(
        inp,
        w,
        inp.shape[2:],
        bias_numel(bias) > 0,
        exact=False,
        note="stride/padding not recorded: output size taken equal to input size",
    )


def conv_bwd(x: list[Tensor | None]) -> OpCost | None:
    go, inp, w = arg(x, 0), arg(x, 1), arg(x, 2)
    if go is None or inp is None or w is None or len(go.shape) < 3:
        return None
    if len(go.shape) != len(inp.shape) or len(w.shape) != len(inp.shape):
        return None
    return conv_cost(
        inp,
        w,
        go.shape[2:],
        False,
        backward=True,
        exact=False,
        note="output_mask not recorded: grad input and grad weight both counted",
    )
