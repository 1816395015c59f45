"""Attention models: scaled-dot-product, flash and memory-efficient attention, forward and
backward.

With ``B`` batch, ``H`` query heads, ``L`` query and ``S`` key length, ``E`` / ``Ev`` the
query-key and value head sizes (docs/efficiency.md "Op models"):

* forward FLOP = ``2·B·H·P·(E + Ev)`` — ``QKᵀ`` and ``PV`` over the ``P`` (query, key) pairs
  the mask keeps: ``P = L·S`` without a causal mask; with ``is_causal`` exactly the pairs of a
  lower-triangular mask (top-left aligned for the SDPA ops, as ``torch.nn.functional.
  scaled_dot_product_attention`` documents; ``_efficient_attention_*``'s ``custom_mask_type``
  2 is bottom-right aligned): ``L·(L+1)/2`` when ``L = S``.  Softmax, scaling and dropout are
  not counted (elementwise, a ``1/E`` fraction), nor is an explicit ``attn_mask``'s sparsity;
* GQA / MQA (fewer key/value heads than query heads): FLOP use the query heads, bytes the
  key/value tensors as recorded;
* backward FLOP = 2.5 × forward (the FlashAttention convention: five ``L×S`` matmuls instead of
  two, the score recomputation included);
* bytes: forward every tensor input read once + the output ``[B, H, L, Ev]`` written once;
  backward every tensor input read once + the gradients of ``q``, ``k``, ``v`` written once;
* varlen (``_flash_attention_forward`` / ``_efficient_attention_forward`` with ``cum_seq`` /
  ``cu_seqlens`` tensors; ``q`` ``[T, H, E]``): only the totals, the number of sequences
  ``n`` and the longest lengths are recorded, so ``P`` is estimated as one longest sequence
  plus ``n − 1`` equal ones (a lower bound of ``Σ Lᵢ·Sᵢ``; TraceLens's estimate too);
* a recorded finite sliding window or a paged KV cache (``block_table``) is not modelled.

Traces without Concrete Inputs do not record ``is_causal``: the full ``L·S`` product is counted
and the cost is an estimate (as before).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from analyzers.op_models.args import OpArgs, OpCost, Tensor, dtype_size, matmul_precision

NO_CAUSAL = "causal flag not recorded: full L×S product counted"
VARLEN = (
    "varlen: per-sequence lengths not recorded (only totals, count and longest): one "
    "longest sequence + equal others assumed (a lower bound)"
)


def causal_pairs(lq: int, sk: int, bottom_right: bool = False) -> int:
    """(query, key) pairs a causal mask keeps: query ``i`` sees keys ``j ≤ i`` (top-left) or
    ``j ≤ i + S − L`` (bottom-right), clipped to ``[0, S)``.

        ====  ====  ========  ============
        L     S     top-left  bottom-right
        ====  ====  ========  ============
        4     4     10        10
        2     5     3         9
        5     2     9         3
        ====  ====  ========  ============
    """
    off = sk - lq if bottom_right else 0

    def ramp(n: int) -> int:  # Σ_{i<n} min(max(i + off + 1, 0), sk)
        if n <= 0:
            return 0
        lo = max(0, -off - 1)  # first i with a positive count
        hi = min(n, max(sk - off - 1, 0))  # i >= hi: the row sees every key
        total = 0
        if hi > lo:
            a, b = lo + off + 1, hi - 1 + off + 1
            total += (a + b) * (hi - lo) // 2
        total += max(0, n - max(hi, lo)) * sk
        return total

    return ramp(lq)


@dataclass(frozen=True)
class AttnSignature:
    """Argument positions of an attention op (None: not an argument of it)."""

    layout: str
    """``bhld`` (SDPA ops: ``[B, H, L, E]``) or ``blhd`` (flash / efficient kernels'
    ``[B, L, H, E]``, ``[T, H, E]`` when varlen)."""
    q: int = 0
    dropout: int | None = None
    causal: int | None = None
    mask_type: int | None = None
    """``custom_mask_type`` (0 none, 1 causal top-left, 2 causal bottom-right)."""
    cum_q: int | None = None
    cum_k: int | None = None
    max_q: int | None = None
    max_k: int | None = None
    window: tuple[int, ...] = ()
    paged: int | None = None
    backward: bool = False


SIGNATURES: dict[str, AttnSignature] = {
    "aten::scaled_dot_product_attention": AttnSignature("bhld", dropout=4, causal=5),
    "aten::_scaled_dot_product_flash_attention": AttnSignature("bhld", dropout=3, causal=4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": AttnSignature("bhld", dropout=3, causal=4),
    "aten::_scaled_dot_product_efficient_attention": AttnSignature("bhld", dropout=5, causal=6),
    "aten::_scaled_dot_product_cudnn_attention": AttnSignature("bhld", dropout=5, causal=6),
    "aten::_flash_attention_forward": AttnSignature(
        "blhd", dropout=7, causal=8, cum_q=3, cum_k=4, max_q=5, max_k=6, window=(11, 12), paged=15
    ),
    "aten::_efficient_attention_forward": AttnSignature(
        "blhd", dropout=8, mask_type=9, cum_q=4, cum_k=5, max_q=6, max_k=7, window=(13,)
    ),
    "aten::_scaled_dot_product_flash_attention_backward": AttnSignature(
        "bhld", q=1, dropout=10, causal=11, backward=True
    ),
    "aten::_scaled_dot_product_efficient_attention_backward": AttnSignature(
        "bhld", q=1, dropout=9, causal=11, backward=True
    ),
    "aten::_scaled_dot_product_cudnn_attention_backward": AttnSignature(
        "bhld", q=1, dropout=13, causal=14, backward=True
    ),
    "aten::_flash_attention_backward": AttnSignature(
        "blhd",
        q=1,
        dropout=10,
        causal=11,
        cum_q=6,
        cum_k=7,
        max_q=8,
        max_k=9,
        window=(15, 16),
        backward=True,
    ),
    "aten::_efficient_attention_backward": AttnSignature(
        "blhd",
        q=1,
        dropout=11,
        mask_type=14,
        cum_q=6,
        cum_k=7,
        max_q=8,
        max_k=9,
        window=(18,),
        backward=True,
    ),
}
"""Attention op → where its arguments are (the ATen schemas; a test checks them against
``torch.ops.aten``)."""


@dataclass(frozen=True)
class _Shape:
    batch: int
    """B (1 for varlen)."""
    heads: int
    heads_kv: int
    lq: int
    sk: int
    e: int
    ev: int


def _shape(q: Tensor, k: Tensor, v: Tensor, layout: str, varlen: bool) -> _Shape | None:
    nd = len(q.shape)
    if len(k.shape) != nd or len(v.shape) != nd:
        return None
    if varlen:
        if nd != 3:
            return None
        (lq, h, e), (sk, hk, e2), (sv, hv, ev) = q.shape, k.shape, v.shape
        b = bk = 1
    elif layout == "blhd":
        if nd != 4:
            return None
        (b, lq, h, e), (bk, sk, hk, e2), (_, sv, hv, ev) = q.shape, k.shape, v.shape
    else:
        if nd < 3:
            return None
        # [*B, H, L, E]; a 3-d [B·H, L, E] has one head per batch row
        b = math.prod(q.shape[:-3]) if nd > 3 else q.shape[0]
        bk = math.prod(k.shape[:-3]) if nd > 3 else k.shape[0]
        h, lq, e = (q.shape[-3] if nd > 3 else 1), q.shape[-2], q.shape[-1]
        hk, sk, e2 = (k.shape[-3] if nd > 3 else 1), k.shape[-2], k.shape[-1]
        hv, sv, ev = (v.shape[-3] if nd > 3 else 1), v.shape[-2], v.shape[-1]
    if e != e2 or sk != sv or hk != hv or b != bk or hk < 1 or h % hk:
        return None
    return _Shape(b, h, hk, lq, sk, e, ev)


def _pairs(sig: AttnSignature, x: OpArgs, s: _Shape, varlen: bool) -> tuple[int, bool, str]:
    """(pairs P summed over the batch's sequences ÷ B, exact?, note)."""
    causal: bool | None
    bottom_right = False
    if sig.mask_type is not None:
        mt = x.ints(sig.mask_type)
        causal = None if mt is None else mt[0] != 0
        bottom_right = mt is not None and mt[0] == 2
    else:
        causal = x.flag(sig.causal) if sig.causal is not None else False
    if causal is None:
        causal = False
        exact, note = False, NO_CAUSAL
    else:
        exact, note = True, ""

    def pairs(lq: int, sk: int) -> int:
        return causal_pairs(lq, sk, bottom_right) if causal else lq * sk

    if not varlen:
        return pairs(s.lq, s.sk), exact, note
    cq = x.tensor(sig.cum_q)
    n = cq.shape[0] - 1 if cq is not None and len(cq.shape) == 1 else 0
    if n <= 1:
        return pairs(s.lq, s.sk), exact, note
    mq, mk = x.ints(sig.max_q), x.ints(sig.max_k)
    max_q = mq[0] if mq else s.lq // n
    max_k = mk[0] if mk else s.sk // n
    rest = pairs((s.lq - max_q) // (n - 1), (s.sk - max_k) // (n - 1)) * (n - 1)
    return pairs(max_q, max_k) + rest, False, VARLEN


def attention(sig: AttnSignature) -> Callable[[OpArgs], OpCost | None]:
    """The model of an attention op with signature *sig*."""

    def model(x: OpArgs) -> OpCost | None:
        q, k, v = x.tensor(sig.q), x.tensor(sig.q + 1), x.tensor(sig.q + 2)
        if q is None or k is None or v is None:
            return None
        if x.tensor(sig.paged) is not None:
            return None  # paged KV cache: the key length is not in the shapes
        for w in sig.window:
            win = x.ints(w)
            if win is not None and win[0] >= 0:
                return None  # sliding window: not modelled
        varlen = x.tensor(sig.cum_q) is not None and len(q.shape) == 3
        s = _shape(q, k, v, sig.layout, varlen)
        if s is None:
            return None
        pairs, exact, note = _pairs(sig, x, s, varlen)
        fwd = 2 * s.batch * s.heads * pairs * (s.e + s.ev)
        reads = sum(t.nbytes for t in x.present())
        size = dtype_size(q.dtype) or 0
        if sig.backward:
            flops = fwd * 5 // 2
            written = (q.numel + k.numel + v.numel) * size
        else:
            flops = fwd
            written = s.batch * s.heads * s.lq * s.ev * size
        return OpCost(flops, reads + written, "attention", matmul_precision(q.dtype), exact, note)

    return model


ATTENTION_MODELS: dict[str, Callable[[OpArgs], OpCost | None]] = {
    name: attention(sig) for name, sig in SIGNATURES.items()
}
"""Op name → attention model."""
