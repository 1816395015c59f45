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

Attribution (HTA call-stack semantics): a GPU activity → the runtime call with the same
``correlation`` → the CPU op with the call's ``external_id`` if that op encloses the call in
time on the same thread, else the innermost CPU op enclosing the call → that op's **outermost
modelled ancestor** (so ``aten::linear`` owns the GEMM that its inner ``aten::addmm`` launched,
and no kernel is counted twice).

    =====================  ======================  =====================
    op, Input Dims         FLOP                    bytes (fp32)
    =====================  ======================  =====================
    mm [[2,3],[3,4]]       2·2·4·3 = 48            (6+12+8)·4 = 104
    addmm [[4],[2,3],...]  48 + 2·4 = 56           (4+6+12+8)·4 = 120
    =====================  ======================  =====================
"""

from analyzers.op_models.args import (
    DTYPE_BYTES,
    OpCost,
    Tensor,
    dtype_key,
    dtype_size,
    parse_inputs,
)
from analyzers.op_models.attribution import (
    GPU_WORK_KINDS,
    OP_COST_COLUMNS,
    OP_GROUP_COLUMNS,
    TF32_KERNEL,
    op_costs,
    op_groups,
)
from analyzers.op_models.registry import MODELS, ModelFn, model_op

__all__ = [
    "DTYPE_BYTES",
    "GPU_WORK_KINDS",
    "MODELS",
    "OP_COST_COLUMNS",
    "OP_GROUP_COLUMNS",
    "TF32_KERNEL",
    "ModelFn",
    "OpCost",
    "Tensor",
    "dtype_key",
    "dtype_size",
    "model_op",
    "op_costs",
    "op_groups",
    "parse_inputs",
]
