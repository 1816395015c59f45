"""FLOP and byte models of PyTorch ops from their recorded arguments, attributed to the GPU
work each op launched.

Inputs are the host table's ``input_dims`` / ``input_types`` / ``concrete_inputs`` /
``input_strides`` (Kineto ``Input Dims``, ``Input type``, ``Concrete Inputs``, ``Input Strides``,
recorded with ``record_shapes=True``).  Conventions (``docs/efficiency.md`` "Op models"; each
family's module docstring has its formulas):

* **bytes** = every tensor input read once (its distinct elements: a stride-0 ``expand``-ed
  dimension once) + the output written once, at each tensor's dtype size (a lower bound of
  DRAM traffic);
* **GEMM** (:mod:`~analyzers.op_models.gemm`: ``mm``, ``bmm``, ``matmul``, ``linear``,
  ``addmm``, ``baddbmm``, their ``out=`` / ``dtype`` overloads, vendor GEMMs): ``2·B·M·N·K``
  (+ ``B·M·N`` for a bias / ``self`` term);
* **convolution** (:mod:`~analyzers.op_models.conv`): ``2·MACs`` with the output size from
  the recorded stride, padding, dilation, groups, transposition and output padding;
* **attention** (:mod:`~analyzers.op_models.attention`): ``2·B·H·P·(E + Ev)`` over the
  ``P`` (query, key) pairs the causal mask keeps; backward 2.5 × forward;
* **precision** (which peak applies): the dtype of the first tensor input — fp16/bf16 GEMM,
  convolution and attention → ``fp16_tensor``, fp8 → ``fp8_tensor``, fp64 → ``fp64``, else
  ``fp32``; an fp32 GEMM/convolution whose kernels are TF32 tensor-core kernels (name matches
  :data:`TF32_KERNEL`) → ``tf32_tensor``; elementwise/reductions → ``fp32`` (``fp64`` for
  doubles);
* **elementwise**, softmax, reductions: :mod:`~analyzers.op_models.elementwise`.

Every cost is **exact** (every argument its formula needs was recorded) or an **estimate**
(:attr:`OpCost.exact` False, :attr:`OpCost.note` naming the missing argument and the
assumption made).  A call whose recorded arguments fit none of the op's overloads (more inputs
than it takes, inner dimensions that differ — seen in real traces) is not modelled.

Attribution (:mod:`~analyzers.op_models.attribution`): GPU work → its runtime call → the
launching CPU op → that op's outermost modelled ancestor.

    =====================  ======================  =====================
    op, Input Dims         FLOP                    bytes (fp32)
    =====================  ======================  =====================
    mm [[2,3],[3,4]]       2·2·4·3 = 48            (6+12+8)·4 = 104
    addmm [[4],[2,3],...]  48 + 2·4 = 56           (4+6+12+8)·4 = 120
    =====================  ======================  =====================
"""

from analyzers.op_models.args import (
    DTYPE_BYTES,
    OpArgs,
    OpCost,
    Tensor,
    dtype_key,
    dtype_size,
    parse_args,
    parse_inputs,
)
from analyzers.op_models.attribution import (
    GPU_TIME,
    GPU_WORK_KINDS,
    OP_COST_COLUMNS,
    OP_GROUP_COLUMNS,
    TF32_KERNEL,
    gpu_work_time_ns,
    op_costs,
    op_groups,
)
from analyzers.op_models.registry import MODELS, ModelFn, model_op

__all__ = [
    "DTYPE_BYTES",
    "GPU_TIME",
    "GPU_WORK_KINDS",
    "MODELS",
    "OP_COST_COLUMNS",
    "OP_GROUP_COLUMNS",
    "TF32_KERNEL",
    "ModelFn",
    "OpArgs",
    "OpCost",
    "Tensor",
    "dtype_key",
    "dtype_size",
    "gpu_work_time_ns",
    "model_op",
    "op_costs",
    "op_groups",
    "parse_args",
    "parse_inputs",
]
