"""FLOP and byte models of PyTorch ops from their recorded input shapes, attributed to the GPU
work each op launched.

Inputs are the host table's ``input_dims`` / ``input_types`` (Kineto ``Input Dims`` /
``Input type``, recorded with ``record_shapes=True``).  Conventions (``docs/efficiency.md``):

* **bytes** = every tensor input read once + the output written once, at each tensor's dtype
  size (a lower bound of DRAM traffic);
* **GEMM** (``mm``, ``bmm``, ``matmul``, ``linear``, ``addmm``, ``baddbmm``): ``2·B·M·N·K``;
  ops that add a bias/``self`` term (``addmm``, ``baddbmm``, ``linear`` with bias) add
  ``B·M·N`` (one add per output element; ``alpha``/``beta`` scalings are not counted);
* **convolution** forward: ``2·N·C_out·Π(out)·(C_in/groups)·Π(kernel)`` (+ ``N·C_out·Π(out)``
  with bias); stride/padding are not in ``Input Dims``, so the output size is taken equal to
  the input size (stride 1, "same" padding) and the model is marked inexact; backward
  (``convolution_backward``): grad-input + grad-weight = 2 × forward with the output size
  read from ``grad_output`` (bias gradient not counted);
* **attention** (scaled-dot-product / flash / memory-efficient): forward ``2·B·H·L·S·(E+Ev)``
  (``QKᵀ`` and ``PV``), backward 2.5 × forward (FlashAttention convention); causal masking is
  not recorded, so the full product is counted;
* **precision** (which peak applies): the dtype of the first tensor input — fp16/bf16 GEMM,
  convolution and attention → ``fp16_tensor``, fp8 → ``fp8_tensor``, fp64 → ``fp64``, else
  ``fp32``; an fp32 GEMM/convolution whose kernels are TF32 tensor-core kernels (name matches
  :data:`TF32_KERNEL`) → ``tf32_tensor``; elementwise/reductions → ``fp32`` (``fp64`` for
  doubles);
* **elementwise**: 1 FLOP per output element (0 for copies and fills), output = broadcast of
  the tensor inputs; **softmax** family: 5 FLOP per element; **reductions**
  (``sum``/``mean``/``amax``…): 1 FLOP per input element, output bytes not counted.

A call whose recorded inputs do not fit the op's signature (more inputs than it takes, inner
dimensions that differ — seen in real traces) is not modelled.

Attribution (HTA call-stack semantics): a GPU activity → its launching call (the runtime call
with the same ``correlation``, :func:`collectors.linking.launching_calls`) → the CPU op with the
call's ``external_id`` if that op encloses the call in time on the same thread, else the
innermost CPU op enclosing the call → that op's **outermost modelled ancestor** (so
``aten::linear`` owns the GEMM that its inner ``aten::addmm`` launched, and no kernel is counted
twice).

    =====================  ======================  =====================
    op, Input Dims         FLOP                    bytes (fp32)
    =====================  ======================  =====================
    mm [[2,3],[3,4]]       2·2·4·3 = 48            (6+12+8)·4 = 104
    addmm [[4],[2,3],...]  48 + 2·4 = 56           (4+6+12+8)·4 = 120
    =====================  ======================  =====================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from collectors.linking import enclosing_parents, innermost_range, launch_mask, launching_calls
from collectors.model import GPU_WORK_KINDS, Trace

DTYPE_BYTES: dict[str, int] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "long": 8,
    "long int": 8,
    "int64_t": 8,
    "int": 4,
    "int32_t": 4,
    "short": 2,
    "short int": 2,
    "bool": 1,
    "unsigned char": 1,
    "signed char": 1,
    "complex<float>": 8,
    "complex<double>": 16,
    "complex<half>": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
}
"""Element size by Kineto ``Input type`` (``c10::`` prefix and case ignored)."""

_FLOAT_PRECISION = {
    "double": "fp64",
    "float64": "fp64",
    "float": "fp32",
    "float32": "fp32",
    "half": "fp16",
    "float16": "fp16",
    "bfloat16": "fp16",
}


def dtype_key(t: str | None) -> str | None:
    """Normalised dtype name (``c10::BFloat16`` → ``bfloat16``), None for non-tensors."""
    if not t:
        return None
    k = t.strip().lower().replace("c10::", "")
    return k if k in DTYPE_BYTES else (k if k.startswith("float8") else None)


def dtype_size(t: str | None) -> int | None:
    k = dtype_key(t)
    if k is None:
        return None
    return DTYPE_BYTES.get(k, 1 if k.startswith("float8") else None)


@dataclass(frozen=True)
class Tensor:
    """One tensor input: shape and dtype."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * (dtype_size(self.dtype) or 0)


@dataclass(frozen=True)
class OpCost:
    """FLOP and byte count of one op call."""

    flops: int
    bytes: int
    kind: str
    """``gemm`` | ``conv`` | ``attention`` | ``elementwise`` | ``reduction``."""
    precision: str
    """Peak-table precision: ``fp64``, ``fp32``, ``fp16_tensor``, ``fp8_tensor``..."""
    exact: bool
    """False when an input the formula needs is not recorded (see ``note``)."""
    note: str = ""


def parse_inputs(dims: Any, types: Any) -> list[Tensor | None] | None:
    """Kineto ``Input Dims``/``Input type`` (JSON strings or lists) → tensors (None for
    scalars, lists and absent optionals); None when unparseable or of different lengths."""
    try:
        d = msgspec.json.decode(dims) if isinstance(dims, (str, bytes)) else dims
        t = msgspec.json.decode(types) if isinstance(types, (str, bytes)) else types
    except msgspec.DecodeError:
        return None
    if not isinstance(d, list) or not isinstance(t, list) or len(d) != len(t):
        return None
    out: list[Tensor | None] = []
    for shape, ty in zip(d, t, strict=True):
        if (
            isinstance(ty, str)
            and dtype_size(ty) is not None
            and isinstance(shape, list)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in shape)
        ):
            out.append(Tensor(tuple(shape), dtype_key(ty) or ty))
        else:
            out.append(None)
    return out


def _arg(inputs: Sequence[Tensor | None], i: int) -> Tensor | None:
    return inputs[i] if i < len(inputs) else None


def _matmul_precision(dtype: str) -> str:
    p = _FLOAT_PRECISION.get(dtype)
    if p == "fp16":
        return "fp16_tensor"
    if dtype.startswith("float8"):
        return "fp8_tensor"
    return p or "fp32"


def _vector_precision(dtype: str) -> str:
    return "fp64" if _FLOAT_PRECISION.get(dtype) == "fp64" else "fp32"


def _bias_numel(t: Tensor | None) -> int:
    return t.numel if t is not None and len(t.shape) > 0 else 0


# --- GEMM ------------------------------------------------------------------------------------


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
    return OpCost(flops, nbytes, "gemm", _matmul_precision(out_dtype), True, note)


def _mm(x: list[Tensor | None]) -> OpCost | None:
    a, b = _arg(x, 0), _arg(x, 1)
    if len(x) != 2 or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    return gemm_cost(1, m, n, k, [a, b], a.dtype)


def _addmm(x: list[Tensor | None]) -> OpCost | None:
    c, a, b = _arg(x, 0), _arg(x, 1), _arg(x, 2)
    if len(x) > 5 or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        return None
    reads = [t for t in (c, a, b) if t is not None]
    return gemm_cost(1, m, n, k, reads, a.dtype, bias=c is not None)


def _bmm(x: list[Tensor | None]) -> OpCost | None:
    a, b = _arg(x, 0), _arg(x, 1)
    if len(x) != 2 or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    return gemm_cost(bt, m, n, k, [a, b], a.dtype)


def _baddbmm(x: list[Tensor | None]) -> OpCost | None:
    c, a, b = _arg(x, 0), _arg(x, 1), _arg(x, 2)
    if len(x) > 5 or a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (bt, m, k), (bt2, k2, n) = a.shape, b.shape
    if k != k2 or bt != bt2:
        return None
    reads = [t for t in (c, a, b) if t is not None]
    return gemm_cost(bt, m, n, k, reads, a.dtype, bias=c is not None)


def _linear(x: list[Tensor | None]) -> OpCost | None:
    a, w, bias = _arg(x, 0), _arg(x, 1), _arg(x, 2)
    if len(x) > 3 or a is None or w is None or len(a.shape) < 1 or len(w.shape) != 2:
        return None
    n, k = w.shape
    if a.shape[-1] != k:
        return None
    m = math.prod(a.shape[:-1])
    has_bias = _bias_numel(bias) > 0
    reads = [a, w] + ([bias] if has_bias and bias is not None else [])
    return gemm_cost(1, m, n, k, reads, a.dtype, bias=has_bias)


def _matmul(x: list[Tensor | None]) -> OpCost | None:
    a, b = _arg(x, 0), _arg(x, 1)
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


# --- convolution -----------------------------------------------------------------------------


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
    return OpCost(flops, nbytes, "conv", _matmul_precision(inp.dtype), exact, note)


def _conv_fwd(x: list[Tensor | None]) -> OpCost | None:
    inp, w, bias = _arg(x, 0), _arg(x, 1), _arg(x, 2)
    if inp is None or w is None or len(inp.shape) < 3 or len(inp.shape) != len(w.shape):
        return None
    if inp.shape[1] % max(w.shape[1], 1) != 0:
        return None
    return conv_cost(
        inp,
        w,
        inp.shape[2:],
        _bias_numel(bias) > 0,
        exact=False,
        note="stride/padding not recorded: output size taken equal to input size",
    )


def _conv_bwd(x: list[Tensor | None]) -> OpCost | None:
    go, inp, w = _arg(x, 0), _arg(x, 1), _arg(x, 2)
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


# --- attention -------------------------------------------------------------------------------


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
        _matmul_precision(q.dtype),
        False,
        "causal flag not recorded: full L×S product counted",
    )


def _attention(layout: str, backward: bool) -> Callable[[list[Tensor | None]], OpCost | None]:
    def model(x: list[Tensor | None]) -> OpCost | None:
        off = 1 if backward else 0
        q, k, v = _arg(x, off), _arg(x, off + 1), _arg(x, off + 2)
        if q is None or k is None or v is None:
            return None
        reads = [t for t in x if t is not None]
        return attention_cost(q, k, v, layout, reads, backward)

    return model


# --- elementwise and reductions -------------------------------------------------------------


def _promote(tensors: Sequence[Tensor]) -> str:
    floats = [t.dtype for t in tensors if t.dtype in _FLOAT_PRECISION]
    pool = floats or [t.dtype for t in tensors]
    return max(pool, key=lambda d: dtype_size(d) or 0)


def _elementwise(flop_per_elem: int) -> Callable[[list[Tensor | None]], OpCost | None]:
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
            _vector_precision(out_dtype),
            True,
        )

    return model


def _inplace(flop_per_elem: int) -> Callable[[list[Tensor | None]], OpCost | None]:
    """``op_(self, other...)``: reads every tensor input, writes ``self``."""

    def model(x: list[Tensor | None]) -> OpCost | None:
        self_t = _arg(x, 0)
        if self_t is None:
            return None
        ts = [t for t in x if t is not None]
        nbytes = sum(t.nbytes for t in ts) + self_t.nbytes
        return OpCost(
            flop_per_elem * self_t.numel,
            nbytes,
            "elementwise",
            _vector_precision(self_t.dtype),
            True,
        )

    return model


def _copy(x: list[Tensor | None]) -> OpCost | None:
    """``copy_(self, src)``: reads ``src``, writes ``self`` (dtype conversion included)."""
    dst, src = _arg(x, 0), _arg(x, 1)
    if dst is None or src is None:
        return None
    return OpCost(0, src.nbytes + dst.nbytes, "elementwise", "fp32", True)


def _clone(x: list[Tensor | None]) -> OpCost | None:
    src = _arg(x, 0)
    if src is None:
        return None
    return OpCost(0, 2 * src.nbytes, "elementwise", "fp32", True)


def _fill(x: list[Tensor | None]) -> OpCost | None:
    dst = _arg(x, 0)
    if dst is None:
        return None
    return OpCost(0, dst.nbytes, "elementwise", "fp32", True)


def _softmax(x: list[Tensor | None]) -> OpCost | None:
    t = _arg(x, 0)
    if t is None:
        return None
    return OpCost(5 * t.numel, 2 * t.nbytes, "reduction", _vector_precision(t.dtype), True)


def _reduce(x: list[Tensor | None]) -> OpCost | None:
    t = _arg(x, 0)
    if t is None:
        return None
    return OpCost(
        t.numel,
        t.nbytes,
        "reduction",
        _vector_precision(t.dtype),
        False,
        "reduced dims not recorded: output bytes not counted",
    )


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
    "aten::mm": _mm,
    "aten::addmm": _addmm,
    "aten::bmm": _bmm,
    "aten::baddbmm": _baddbmm,
    "aten::linear": _linear,
    "aten::matmul": _matmul,
    "aten::conv1d": _conv_fwd,
    "aten::conv2d": _conv_fwd,
    "aten::conv3d": _conv_fwd,
    "aten::convolution": _conv_fwd,
    "aten::_convolution": _conv_fwd,
    "aten::cudnn_convolution": _conv_fwd,
    "aten::convolution_backward": _conv_bwd,
    "aten::scaled_dot_product_attention": _attention("bhld", False),
    "aten::_scaled_dot_product_flash_attention": _attention("bhld", False),
    "aten::_scaled_dot_product_efficient_attention": _attention("bhld", False),
    "aten::_scaled_dot_product_cudnn_attention": _attention("bhld", False),
    "aten::_flash_attention_forward": _attention("blhd", False),
    "aten::_efficient_attention_forward": _attention("blhd", False),
    "aten::_scaled_dot_product_flash_attention_backward": _attention("bhld", True),
    "aten::_scaled_dot_product_efficient_attention_backward": _attention("bhld", True),
    "aten::_scaled_dot_product_cudnn_attention_backward": _attention("bhld", True),
    "aten::_flash_attention_backward": _attention("blhd", True),
    "aten::_efficient_attention_backward": _attention("blhd", True),
    "aten::copy_": _copy,
    "aten::clone": _clone,
    "aten::fill_": _fill,
    "aten::zero_": _fill,
    "aten::softmax": _softmax,
    "aten::_softmax": _softmax,
    "aten::log_softmax": _softmax,
    "aten::_log_softmax": _softmax,
    **{f"aten::{r}": _reduce for r in ("sum", "mean", "amax", "amin", "prod", "norm")},
    **{f"aten::{op}": _elementwise(1) for op in (*_BINARY, *_UNARY)},
    **{f"aten::{op}_": _inplace(1) for op in (*_BINARY, *_UNARY)},
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


# --- attribution ------------------------------------------------------------------------------

TF32_KERNEL = r"tf32|tensorop_s\d{4,5}"
"""Kernel names of TF32 tensor-core GEMMs/convolutions (cuBLAS ``..._tf32f32_...``, CUTLASS
``tensorop_s1688gemm``): an fp32 op that launched one is compared with the TF32 peak."""


def _sweep_parents(host: pd.DataFrame, ops: np.ndarray, launches: np.ndarray) -> dict[int, int]:
    """Innermost enclosing CPU op (host row position) for every op and launch row position.

    The profiler's call stack on each (pid, tid): half-open ``[start, end)``, an op's parent
    ordered before it (start, then end descending, then row) — :mod:`collectors.linking`, as
    compare's op view; collectives link inclusively of the end.
    """
    h_pid, h_tid = host["pid"].to_numpy(), host["tid"].to_numpy()
    start = host["start_ns"].to_numpy()
    end = host["end_ns"].to_numpy()
    groups = (h_pid[ops], h_tid[ops])
    op_parent = enclosing_parents(start[ops], end[ops], groups)
    launch_parent = innermost_range(
        start[ops], end[ops], groups, start[launches], (h_pid[launches], h_tid[launches])
    )
    parent: dict[int, int] = {}
    for rows, pos in ((ops, op_parent), (launches, launch_parent)):
        owner = np.where(pos >= 0, ops[np.maximum(pos, 0)], -1)
        parent.update(zip(rows.tolist(), owner.tolist(), strict=True))
    return parent


_SHAPE_COLUMNS = ("op", "input_dims", "input_types", "kind", "precision", "exact")
_WORK_COLUMNS = ("flops", "bytes", "kernels", "kernel_time_ns", "host_copy")
OP_COST_COLUMNS = ("host_row", *_SHAPE_COLUMNS, "note", *_WORK_COLUMNS)
"""Columns of :func:`op_costs`."""
OP_GROUP_COLUMNS = (*_SHAPE_COLUMNS, "calls", *_WORK_COLUMNS)
"""Columns of :func:`op_groups`."""


def op_costs(trace: Trace) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work.

    Columns: host_row, op, input_dims, input_types, kind, precision, exact, note, flops,
    bytes, kernels (number of GPU activities), kernel_time_ns (sum of their durations),
    host_copy (the op's GPU work includes a copy to or from host memory: PCIe-bound, so the
    DRAM roof does not apply).
    """
    cols = list(OP_COST_COLUMNS)
    host, gpu = trace.host, trace.gpu
    if host.empty or gpu.empty:
        return pd.DataFrame(columns=cols)
    cat = host["cat"].astype(object).to_numpy()
    ops = np.flatnonzero(cat == "cpu_op")
    launches = np.flatnonzero(launch_mask(host))
    if len(ops) == 0 or len(launches) == 0:
        return pd.DataFrame(columns=cols)

    names = host["name"].astype(object).to_numpy()
    dims = host["input_dims"].to_numpy()
    types = host["input_types"].to_numpy()
    costs: dict[int, OpCost] = {}
    for i in ops.tolist():
        if names[i] in MODELS:
            c = model_op(names[i], dims[i], types[i])
            if c is not None:
                costs[i] = c
    if not costs:
        return pd.DataFrame(columns=cols)

    parent = _sweep_parents(host, ops, launches)
    start = host["start_ns"].to_numpy()
    end = host["end_ns"].to_numpy()
    tid = host["tid"].to_numpy()
    ext = host["external_id"].to_numpy()
    op_by_ext: dict[int, int] = {}
    for i in ops.tolist():
        if ext[i] >= 0:
            op_by_ext.setdefault(int(ext[i]), i)

    # outermost modelled ancestor-or-self of each op; parents precede children in start order
    top: dict[int, int] = {}
    for i in sorted(ops.tolist(), key=lambda r: (start[r], -end[r], r)):
        p = parent.get(i, -1)
        up = top.get(p, -1) if p >= 0 else -1
        top[i] = up if up >= 0 else (i if i in costs else -1)

    owner_of_launch: dict[int, int] = {}
    for r in launches.tolist():
        linked = parent.get(r, -1)
        cand = op_by_ext.get(int(ext[r])) if ext[r] >= 0 else None
        if cand is not None and tid[cand] == tid[r] and start[cand] <= start[r] < end[cand]:
            linked = cand
        owner = top.get(linked, -1) if linked >= 0 else -1
        if owner >= 0:
            owner_of_launch[r] = owner

    g = gpu[gpu["kind"].isin(GPU_WORK_KINDS) & (gpu["correlation"] >= 0)]
    calls = launching_calls(host, g["correlation"].to_numpy())
    owners = pd.Series(calls, index=g.index).map(owner_of_launch)
    g = g.assign(owner=owners, dur=g["end_ns"] - g["start_ns"]).dropna(subset=["owner"])
    if g.empty:
        return pd.DataFrame(columns=cols)
    agg = g.groupby("owner").agg(kernels=("dur", "size"), kernel_time_ns=("dur", "sum"))
    tf32_owners = set(
        g.loc[g["name"].astype(str).str.contains(TF32_KERNEL, regex=True), "owner"].astype(int)
    )
    copy_kind = g["copy_kind"].astype(object).fillna("").astype(str)
    host_owners = set(
        g.loc[(g["kind"] == "memcpy") & copy_kind.str.contains("H"), "owner"].astype(int)
    )
    rows = []
    for owner, k, t in zip(agg.index, agg["kernels"], agg["kernel_time_ns"], strict=True):
        i = int(owner)
        c = costs[i]
        prec = c.precision
        if prec == "fp32" and c.kind in ("gemm", "conv", "attention") and i in tf32_owners:
            prec = "tf32_tensor"
        rows.append(
            (
                i,
                names[i],
                _text(dims[i]),
                _text(types[i]),
                c.kind,
                prec,
                c.exact,
                c.note,
                c.flops,
                c.bytes,
                int(k),
                int(t),
                i in host_owners,
            )
        )
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values("host_row", kind="stable").reset_index(drop=True)


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (str, bytes)):
        return v.decode() if isinstance(v, bytes) else v
    return msgspec.json.encode(v).decode()


def op_groups(costs: pd.DataFrame) -> pd.DataFrame:
    """Calls of the same op with the same shapes and dtypes, summed: op, input_dims,
    input_types, kind, precision, exact, calls, flops, bytes, kernels, kernel_time_ns,
    host_copy; sorted by kernel time, longest first."""
    cols = list(OP_GROUP_COLUMNS)
    if costs.empty:
        return pd.DataFrame(columns=cols)
    g = (
        costs.groupby(["op", "input_dims", "input_types", "precision"], sort=False, observed=True)
        .agg(
            kind=("kind", "first"),
            exact=("exact", "all"),
            calls=("flops", "size"),
            flops=("flops", "sum"),
            bytes=("bytes", "sum"),
            kernels=("kernels", "sum"),
            kernel_time_ns=("kernel_time_ns", "sum"),
            host_copy=("host_copy", "any"),
        )
        .reset_index()
    )
    return g.sort_values(["kernel_time_ns", "op"], ascending=[False, True], kind="stable")[
        cols
    ].reset_index(drop=True)
