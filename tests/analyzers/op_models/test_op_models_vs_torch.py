"""The op models against PyTorch itself: the argument positions the models read against the
ATen schemas (``torch.ops.aten``), and the FLOPs of ops recorded by ``torch.profiler`` on the
CPU (read back through gpuscope's Kineto reader) against ``torch.utils.flop_counter``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from analyzers.op_models import attention as att
from analyzers.op_models import conv, model_op
from tests.support.env import require_service

pytestmark = pytest.mark.torch


def _torch() -> Any:
    require_service(
        "torch", importlib.util.find_spec("torch") is not None, "pip install torch (CPU wheel)"
    )
    import torch

    return torch


def _schemas(torch: Any, op: str) -> list[list[str]]:
    """Argument names of every overload of ``aten::<op>``."""
    packet = getattr(torch.ops.aten, op.removeprefix("aten::"))
    return [[a.name for a in getattr(packet, o)._schema.arguments] for o in packet.overloads()]


def _fits(names: list[str], where: dict[str, int | None]) -> bool:
    return all(i is None or (i < len(names) and names[i] in want) for want, i in _norm(where))


def _norm(where: dict[str, int | None]) -> list[tuple[tuple[str, ...], int | None]]:
    return [(tuple(k.split("|")), v) for k, v in where.items()]


def test_convolution_argument_positions_match_the_aten_schemas() -> None:
    torch = _torch()
    for name, sig in conv.SIGNATURES.items():
        where = {
            "stride": sig.stride,
            "padding": sig.padding,
            "dilation": sig.dilation,
            "groups": sig.groups,
            "bias": sig.bias,
            "output_padding": sig.output_padding,
            "transposed": sig.transposed if not isinstance(sig.transposed, bool) else None,
        }
        assert any(_fits(n, where) for n in _schemas(torch, name)), name
    names = _schemas(torch, "aten::convolution_backward")[0]
    assert (names[7], names[9], names[10]) == ("transposed", "groups", "output_mask")


def test_attention_argument_positions_match_the_aten_schemas() -> None:
    torch = _torch()
    for name, sig in att.SIGNATURES.items():
        where = {
            "query": sig.q,
            "dropout_p": sig.dropout,
            "is_causal": sig.causal,
            "custom_mask_type": sig.mask_type,
            "cum_seq_q|cu_seqlens_q": sig.cum_q,
            "cum_seq_k|cu_seqlens_k": sig.cum_k,
            "max_q|max_seqlen_q": sig.max_q,
            "max_k|max_seqlen_k": sig.max_k,
            "block_table": sig.paged,
        }
        fits = [
            n
            for n in _schemas(torch, name)
            if _fits(n, where) and all(n[w].startswith("window_size") for w in sig.window)
        ]
        assert fits, name


def _record(torch: Any, tmp: Path) -> tuple[list[Any], Path]:
    """Run each call under the profiler (record_shapes) and under FlopCounterMode."""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode

    f = torch.nn.functional
    x, w, b = torch.randn(2, 4, 9, 9), torch.randn(6, 2, 3, 3), torch.randn(6)
    xt, wt = torch.randn(2, 6, 4, 4), torch.randn(6, 3, 3, 3)
    q, kv = torch.randn(1, 4, 5, 8), torch.randn(1, 2, 7, 8)
    qs = torch.randn(1, 2, 6, 8)
    a, m2, out = torch.randn(5, 6), torch.randn(6, 7), torch.empty(5, 7)
    x1, w1, bias7 = torch.randn(1, 4, 11), torch.randn(3, 4, 3), torch.randn(7)
    b1, b2 = torch.randn(3, 5, 6), torch.randn(3, 6, 2)
    xl, wl = torch.randn(2, 3, 6), torch.randn(4, 6)
    calls = [
        ("aten::conv2d", lambda: f.conv2d(x, w, b, stride=2, padding=1, dilation=2, groups=2)),
        ("aten::conv1d", lambda: f.conv1d(x1, w1, stride=3)),
        (
            "aten::conv_transpose2d",
            lambda: f.conv_transpose2d(
                xt, wt, None, stride=2, padding=1, output_padding=1, groups=2
            ),
        ),
        (
            "aten::scaled_dot_product_attention",
            lambda: f.scaled_dot_product_attention(q, kv, kv, enable_gqa=True),
        ),
        ("aten::scaled_dot_product_attention", lambda: f.scaled_dot_product_attention(qs, qs, qs)),
        (
            "aten::scaled_dot_product_attention",
            lambda: f.scaled_dot_product_attention(qs, qs, qs, is_causal=True),
        ),
        ("aten::mm", lambda: torch.mm(a, m2, out=out)),
        ("aten::addmm", lambda: torch.addmm(bias7, a, m2, out=out)),
        ("aten::bmm", lambda: torch.bmm(b1, b2)),
        ("aten::linear", lambda: f.linear(xl, wl)),
    ]

    def math_sdpa(q: Any, k: Any, v: Any) -> Any:
        """The matmuls of attention written out (torch counts no FLOPs for the CPU SDPA
        kernel); GQA's key/value heads repeated to the query heads."""
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        return torch.softmax(q @ k.transpose(-2, -1), -1) @ v

    references = {
        3: lambda: math_sdpa(q, kv, kv),
        4: lambda: math_sdpa(qs, qs, qs),
        5: lambda: math_sdpa(qs, qs, qs),  # the full product; the causal mask keeps 21 of 36
    }
    counted = []
    for i, (_, fn) in enumerate(calls):
        with FlopCounterMode(display=False) as fc:
            references.get(i, fn)()
        counted.append(fc.get_total_flops())
    path = tmp / "ops.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
        for _, fn in calls:
            fn()
    p.export_chrome_trace(str(path))
    return [(name, n) for (name, _), n in zip(calls, counted, strict=True)], path


def test_recorded_cpu_ops_match_torch_flop_counter(tmp_path: Path) -> None:
    torch = _torch()
    from collectors.kineto import read_kineto

    expected, path = _record(torch, tmp_path)
    h = read_kineto(path).host
    h = h[h["cat"].astype(str) == "cpu_op"].sort_values("start_ns")
    # the top-level call of each op, in call order (inner aten ops are not counted twice)
    tops = []
    end = -1
    for r in h.itertuples():
        if r.start_ns >= end:
            tops.append(r)
            end = r.end_ns
    assert [r.name for r in tops] == [name for name, _ in expected]
    for i, (r, (name, flops)) in enumerate(zip(tops, expected, strict=True)):
        c = model_op(name, r.input_dims, r.input_types, r.concrete_inputs, r.input_strides)
        assert c is not None and c.exact, name
        dims = json.loads(r.input_dims)
        # torch's counter leaves out bias adds (gpuscope counts one per output element)
        bias = {
            "aten::conv2d": 2 * 6 * 4 * 4,  # out [2, 6, 4, 4]: (9 + 2 − 2·2 − 1) // 2 + 1
            "aten::addmm": 5 * 7,
        }.get(name, 0)
        if name == "aten::linear":
            assert dims[2] == []
        if i == 5:  # is_causal: 6·7/2 = 21 of the 6·6 (query, key) pairs
            flops = flops * 21 // 36
        assert c.flops == flops + bias, (name, c.flops, flops)
