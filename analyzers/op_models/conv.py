"""Convolution models: the forward ops (``conv1d/2d/3d``, ``conv_transpose*``, ``convolution``,
``_convolution`` and the backend ops) and ``convolution_backward``.

Input ``x`` ``[N, C_in, *in]``, weight ``w`` ``[C_out, C_in/g, *k]`` (transposed:
``[C_in, C_out/g, *k]``), with stride ``s``, padding ``p``, dilation ``d``, output padding
``op`` and groups ``g`` read from Concrete Inputs (docs/efficiency.md "Op models"):

* output size per spatial dim: ``⌊(in + 2p − d·(k−1) − 1) / s⌋ + 1``; transposed:
  ``(in − 1)·s − 2p + d·(k−1) + op + 1`` (the ``torch.nn.Conv*d`` / ``ConvTranspose*d``
  formulas);
* MACs = ``N·C_out·Π(out)·(C_in/g)·Π(k)``; transposed ``N·C_in·Π(in)·(C_out/g)·Π(k)``
  (each input element scattered to a ``C_out/g × Π(k)`` window);
* forward FLOP = ``2·MACs`` (+ ``N·C_out·Π(out)`` bias adds when a bias tensor is passed);
  bytes = ``x`` + ``w`` (+ bias) read + output written (at ``x``'s dtype);
* ``convolution_backward``: ``output_mask`` = (grad input, grad weight, grad bias); FLOP =
  ``2·MACs`` per requested grad of input/weight + one add per ``grad_output`` element for
  the bias grad; bytes = ``grad_output`` read once, ``w`` read for grad input, ``x`` read for
  grad weight, each requested gradient written once.

Traces without Concrete Inputs (PyTorch before 2.1, or shapes recorded without them) keep the
former estimate: stride 1 and an output the size of the input ("same" padding), groups =
``C_in / w[1]``, both gradients of the backward counted; the cost is marked an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from analyzers.op_models.args import OpArgs, OpCost, Tensor, bias_numel, dtype_size
from analyzers.op_models.args import matmul_precision as _precision

NO_CONCRETE_FWD = "stride/padding not recorded: output size taken equal to input size"
NO_CONCRETE_BWD = "output_mask not recorded: grad input and grad weight both counted"


@dataclass(frozen=True)
class ConvSignature:
    """Argument positions of a forward convolution op (None: not an argument of it)."""

    stride: int
    padding: int
    dilation: int
    groups: int
    bias: int | None = 2
    transposed: int | bool = False
    """The ``transposed`` flag's position, or the constant the op implies."""
    output_padding: int | None = None


_CONVOLUTION = ConvSignature(3, 4, 5, 8, transposed=6, output_padding=7)
_CONV_ND = ConvSignature(3, 4, 5, 6)
_CONV_TRANSPOSE_ND = ConvSignature(3, 4, 7, 6, transposed=True, output_padding=5)
_BACKEND = ConvSignature(stride=4, padding=3, dilation=5, groups=6)
"""miopen_convolution / miopen_depthwise_convolution / mkldnn_convolution:
(self, weight, bias, padding, stride, dilation, groups, ...)."""

SIGNATURES: dict[str, ConvSignature] = {
    "aten::convolution": _CONVOLUTION,
    "aten::_convolution": _CONVOLUTION,
    **{f"aten::conv{n}d": _CONV_ND for n in (1, 2, 3)},
    **{f"aten::conv_transpose{n}d": _CONV_TRANSPOSE_ND for n in (1, 2, 3)},
    "aten::cudnn_convolution": ConvSignature(stride=3, padding=2, dilation=4, groups=5, bias=None),
    "aten::cudnn_convolution_transpose": ConvSignature(
        stride=4, padding=2, dilation=5, groups=6, bias=None, transposed=True, output_padding=3
    ),
    "aten::miopen_convolution": _BACKEND,
    "aten::miopen_depthwise_convolution": _BACKEND,
    "aten::mkldnn_convolution": _BACKEND,
    "aten::miopen_convolution_transpose": ConvSignature(
        stride=5, padding=3, dilation=6, groups=7, transposed=True, output_padding=4
    ),
}
"""Forward convolution op → where its arguments are (the ATen schemas; a test checks them
against ``torch.ops.aten``)."""


def out_size(
    n_in: int, k: int, stride: int, pad: int, dil: int, transposed: bool, out_pad: int = 0
) -> int:
    """One output spatial size (module docstring)."""
    if transposed:
        return (n_in - 1) * stride - 2 * pad + dil * (k - 1) + out_pad + 1
    return (n_in + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _per_dim(x: OpArgs, i: int | None, nd: int, default: int) -> tuple[int, ...] | None:
    """A per-dimension int argument (a single value applies to every spatial dim); *default*
    when the argument is absent, None when it is recorded but unreadable."""
    if x.text(i) is None:
        return (default,) * nd
    v = x.ints(i)
    if v is None:
        return None
    if len(v) == 1:
        return v * nd
    return v if len(v) == nd else None


@dataclass(frozen=True)
class ConvParams:
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    output_padding: tuple[int, ...]
    groups: int
    transposed: bool


def _padding(x: OpArgs, i: int, nd: int) -> tuple[int, ...] | str | None:
    """Padding ints, or the string mode of ``conv*d.padding`` (``same`` / ``valid``)."""
    text = (x.text(i) or "").strip("'\"").lower()
    if text in ("same", "valid"):
        return text
    return _per_dim(x, i, nd, 0)


def conv_params(x: OpArgs, sig: ConvSignature, nd: int) -> ConvParams | str | None:
    """The recorded convolution arguments; ``"same"`` for ``padding="same"`` (output = input
    size); None when an argument is recorded but unreadable."""
    stride = _per_dim(x, sig.stride, nd, 1)
    dilation = _per_dim(x, sig.dilation, nd, 1)
    padding = _padding(x, sig.padding, nd)
    transposed = sig.transposed if isinstance(sig.transposed, bool) else x.flag(sig.transposed)
    out_pad = _per_dim(x, sig.output_padding, nd, 0)
    groups = x.ints(sig.groups) if x.text(sig.groups) is not None else (1,)
    if None in (stride, dilation, padding, transposed, out_pad) or groups is None:
        return None
    if len(groups) != 1 or groups[0] < 1:
        return None
    if padding == "same":
        return "same"
    assert stride is not None and dilation is not None and out_pad is not None
    pad = (0,) * nd if padding == "valid" else padding
    assert isinstance(pad, tuple)
    return ConvParams(stride, pad, dilation, out_pad, groups[0], bool(transposed))


def _macs(inp: Tensor, w: Tensor, out_spatial: tuple[int, ...], transposed: bool) -> int:
    kernel = math.prod(w.shape[2:])
    if transposed:  # w [C_in, C_out/g, *k]: every input element feeds C_out/g × k outputs
        return inp.shape[0] * inp.shape[1] * math.prod(inp.shape[2:]) * w.shape[1] * kernel
    return inp.shape[0] * w.shape[0] * math.prod(out_spatial) * w.shape[1] * kernel


def conv_cost(
    inp: Tensor,
    weight: Tensor,
    c_out: int,
    out_spatial: tuple[int, ...],
    bias: Tensor | None,
    transposed: bool = False,
    exact: bool = True,
    note: str = "",
) -> OpCost:
    """Forward cost (module docstring)."""
    out_elems = inp.shape[0] * c_out * math.prod(out_spatial)
    size = dtype_size(inp.dtype) or 0
    has_bias = bias_numel(bias) > 0
    flops = 2 * _macs(inp, weight, out_spatial, transposed) + (out_elems if has_bias else 0)
    bias_bytes = bias.nbytes if has_bias and bias is not None else 0
    nbytes = inp.nbytes + weight.nbytes + bias_bytes + out_elems * size
    return OpCost(flops, nbytes, "conv", _precision(inp.dtype), exact, note)


def forward(sig: ConvSignature) -> Callable[[OpArgs], OpCost | None]:
    """The model of a forward convolution op with signature *sig*."""

    def model(x: OpArgs) -> OpCost | None:
        inp, w = x.tensor(0), x.tensor(1)
        if inp is None or w is None or len(inp.shape) < 3 or len(inp.shape) != len(w.shape):
            return None
        bias = x.tensor(sig.bias)
        nd = len(inp.shape) - 2
        params = conv_params(x, sig, nd) if x.recorded else None
        if params is None or params == "same":
            # no recorded arguments (or padding="same"): the output has the input's size
            if sig.transposed is True or inp.shape[1] % max(w.shape[1], 1) != 0:
                return None
            same = params == "same"
            return conv_cost(
                inp,
                w,
                w.shape[0],
                inp.shape[2:],
                bias,
                exact=same,
                note="" if same else NO_CONCRETE_FWD,
            )
        assert isinstance(params, ConvParams)
        g = params.groups
        if params.transposed:
            if inp.shape[1] != w.shape[0] or w.shape[0] % g:
                return None
            c_out = w.shape[1] * g
        else:
            if inp.shape[1] != w.shape[1] * g or w.shape[0] % g:
                return None
            c_out = w.shape[0]
        out = tuple(
            out_size(
                inp.shape[2 + i],
                w.shape[2 + i],
                params.stride[i],
                params.padding[i],
                params.dilation[i],
                params.transposed,
                params.output_padding[i],
            )
            for i in range(nd)
        )
        if min(out) < 1:
            return None
        return conv_cost(inp, w, c_out, out, bias, params.transposed)

    return model


def backward(x: OpArgs) -> OpCost | None:
    """``convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
    dilation, transposed, output_padding, groups, output_mask)``."""
    go, inp, w = x.tensor(0), x.tensor(1), x.tensor(2)
    if go is None or inp is None or w is None or len(go.shape) < 3:
        return None
    if len(go.shape) != len(inp.shape) or len(w.shape) != len(inp.shape):
        return None
    mask = x.flags(10)
    transposed = x.flag(7)
    exact = mask is not None and len(mask) == 3 and transposed is not None
    if not exact:
        mask, transposed = (True, True, False), False
    assert mask is not None and transposed is not None
    grad_in, grad_w, grad_b = mask
    # the MACs of the forward op: its output is grad_output (non-transposed) or input
    macs = _macs(inp, w, go.shape[2:], transposed)
    flops = 2 * macs * (int(grad_in) + int(grad_w)) + (go.numel if grad_b else 0)
    size = dtype_size(go.dtype) or 0
    c_out = go.shape[1]
    reads = go.nbytes + (w.nbytes if grad_in else 0) + (inp.nbytes if grad_w else 0)
    writes = (
        (inp.numel * (dtype_size(inp.dtype) or 0) if grad_in else 0)
        + (w.numel * (dtype_size(w.dtype) or 0) if grad_w else 0)
        + (c_out * size if grad_b else 0)
    )
    return OpCost(
        flops,
        reads + writes,
        "conv",
        _precision(inp.dtype),
        exact,
        "" if exact else NO_CONCRETE_BWD,
    )


CONV_MODELS: dict[str, Callable[[OpArgs], OpCost | None]] = {
    **{name: forward(sig) for name, sig in SIGNATURES.items()},
    "aten::convolution_backward": backward,
}
"""Op name → convolution model."""
