"""Attention costs from every recorded argument: causal masks (top-left, bottom-right), GQA,
dropout, varlen, backward; and the causal SDPA of a TraceLens Qwen trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analyzers.op_models import model_op, op_costs
from analyzers.op_models.attention import causal_pairs
from tests.support.env import shared_path

H = "c10::BFloat16"


def _call(name, dims, concrete, types=None):
    types = types or [H if d else "Scalar" for d in dims]
    return model_op(name, json.dumps(dims), json.dumps(types), json.dumps(concrete))


@pytest.mark.parametrize(("lq", "sk"), [(1, 1), (4, 4), (2, 5), (5, 2), (7, 3), (3, 7), (559, 559)])
def test_causal_pairs_equal_a_brute_force_mask_count(lq: int, sk: int) -> None:
    i = np.arange(lq)[:, None]
    j = np.arange(sk)[None, :]
    assert causal_pairs(lq, sk) == int((j <= i).sum())  # torch's tril(ones(L, S))
    assert causal_pairs(lq, sk, bottom_right=True) == int((j <= i + sk - lq).sum())


def _sdpa_flash(q, k, v, causal: bool, dropout: str = "0."):
    # _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
    #                                     return_debug_mask, *, scale)
    return _call(
        "aten::_scaled_dot_product_flash_attention",
        [q, k, v, [], [], [], []],
        ["", "", "", dropout, str(causal), "False", "0.125"],
    )


def test_is_causal_counts_the_unmasked_pairs_only() -> None:
    q = [16, 16, 559, 64]
    full = _sdpa_flash(q, q, q, False)
    causal = _sdpa_flash(q, q, q, True)
    assert full is not None and causal is not None and full.exact and causal.exact
    assert full.flops == 2 * 16 * 16 * 559 * 559 * (64 + 64)
    assert causal.flops == 2 * 16 * 16 * (559 * 560 // 2) * (64 + 64)
    assert causal.bytes == full.bytes == 4 * 16 * 16 * 559 * 64 * 2  # q, k, v read; out written


def test_the_outer_sdpa_op_reads_is_causal_from_its_own_position() -> None:
    # scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, *,
    #                              scale, enable_gqa)
    q = [2, 4, 8, 16]
    c = _call(
        "aten::scaled_dot_product_attention",
        [q, q, q, [], [], [], [], []],
        ["", "", "", "", "0.", "True", "", "False"],
        [H, H, H, "", "Scalar", "Scalar", "", "Scalar"],
    )
    assert c is not None and c.flops == 2 * 2 * 4 * 36 * 32
    # efficient attention keeps is_causal at position 6
    eff = _call(
        "aten::_scaled_dot_product_efficient_attention",
        [q, q, q, [], [], [], [], []],
        ["", "", "", "", "False", "0.", "True", ""],
        [H, H, H, "", "Scalar", "Scalar", "Scalar", ""],
    )
    assert eff == c


def test_grouped_query_attention_uses_query_heads_and_reads_the_smaller_kv() -> None:
    q, kv = [1, 8, 10, 16], [1, 2, 10, 16]
    c = _sdpa_flash(q, kv, kv, False)
    assert c is not None
    assert c.flops == 2 * 1 * 8 * 100 * 32
    assert c.bytes == (8 * 10 * 16 + 2 * 2 * 10 * 16 + 8 * 10 * 16) * 2
    assert _sdpa_flash(q, [1, 3, 10, 16], [1, 3, 10, 16], False) is None  # 8 heads % 3


def test_dropout_does_not_change_the_matmul_flops() -> None:
    q = [1, 2, 6, 8]
    assert _sdpa_flash(q, q, q, True, "0.1") == _sdpa_flash(q, q, q, True, "0.")


def test_bottom_right_custom_mask_type_of_efficient_attention() -> None:
    # _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k,
    #   max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, compute_log_sumexp, ...)
    q, k = [1, 2, 4, 8], [1, 6, 4, 8]  # [B, L, H, E]: L = 2 queries, S = 6 keys
    dims = [q, k, k, [], [], [], [], [], [], [], []]
    base = ["", "", "", "", "", "", "", "", "0.", "2", "False"]
    c = _call("aten::_efficient_attention_forward", dims, base)
    assert c is not None and c.exact
    assert c.flops == 2 * 1 * 4 * (5 + 6) * 16  # query 0 sees 5 keys, query 1 all 6
    top_left = _call("aten::_efficient_attention_forward", dims, [*base[:9], "1", "False"])
    assert top_left is not None and top_left.flops == 2 * 4 * (1 + 2) * 16


def test_varlen_flash_is_an_estimate_from_the_longest_sequence() -> None:
    # _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k,
    #   dropout_p, is_causal, return_debug_mask, *, scale, window_size_left, ...)
    t = [10, 2, 8]  # 10 tokens in 3 sequences, longest 6: assumed 6 + 2 + 2
    dims = [t, t, t, [4], [4], [], [], [], [], [], [], [], [], [], []]
    types = [H, H, H, "int", "int"] + ["Scalar"] * 10
    concrete = ["", "", "", "", "", "6", "6", "0.", "False", "False", "", "", "", "", ""]
    c = _call("aten::_flash_attention_forward", dims, concrete, types)
    assert c is not None and not c.exact and "varlen" in c.note
    assert c.flops == 2 * 2 * (36 + 2 * 4) * 16
    # a sliding window is not modelled
    windowed = [*concrete[:11], "128", "0", "", ""]
    assert _call("aten::_flash_attention_forward", dims, windowed, types) is None


def test_backward_is_two_and_a_half_forwards() -> None:
    # _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out,
    #   logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
    q = [1, 2, 8, 16]
    dims = [q, q, q, q, q, [1, 2, 8], [], [], [], [], [], [], [], [], []]
    types = [H] * 5 + ["float"] + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", H, H, ""]
    concrete = [""] * 8 + ["8", "8", "0.", "True", "", "", ""]
    c = _call("aten::_scaled_dot_product_flash_attention_backward", dims, concrete, types)
    fwd = _sdpa_flash(q, q, q, True)
    assert c is not None and fwd is not None and c.exact
    assert c.flops == fwd.flops * 5 // 2


def test_without_concrete_inputs_causal_is_unknown_and_the_full_product_counted() -> None:
    q = [2, 4, 8, 16]
    c = model_op(
        "aten::_scaled_dot_product_flash_attention",
        json.dumps([q, q, q, [], [], [], []]),
        json.dumps([H, H, H, "Scalar", "Scalar", "Scalar", "Scalar"]),
    )
    assert c is not None and not c.exact and "causal flag not recorded" in c.note
    assert c.flops == 2 * 2 * 4 * 64 * 32


def test_qwen_causal_sdpa_is_counted_with_its_mask() -> None:
    from collectors.load import load_traces

    (t,) = load_traces(
        [shared_path("kineto", "tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")]
    )
    att = op_costs(t).query("kind == 'attention'")
    assert len(att) == 24 and att["exact"].all()
    # the outer aten::scaled_dot_product_attention owns the flash kernel; q = [16, 16, 559, 64]
    assert set(att["op"]) == {"aten::scaled_dot_product_attention"}
    assert set(att["flops"]) == {2 * 16 * 16 * (559 * 560 // 2) * 128}
