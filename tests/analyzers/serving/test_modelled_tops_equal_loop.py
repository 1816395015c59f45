"""The serving FLOP attribution's op pass (:func:`analyzers.serving.flops._modelled_tops`: one
model call per modelled op, the outermost modelled ancestor-or-self and the recomputation
marks by pointer jumping) equals the per-op loop it replaced, on real serving traces and a
hand-built nest."""

from __future__ import annotations

import numpy as np
import pytest

from analyzers.op_models import MODELS, model_op
from analyzers.serving.flops import RECOMPUTE_RE, _modelled_tops
from collectors.kineto import read_kineto
from collectors.linking import enclosing_parents
from tests.support.serving_builders import Call, Op, serving_trace
from tests.support.serving_data import SERVING, inference

ARGS = ("input_dims", "input_types", "concrete_inputs", "input_strides")


def _loop(host):
    """The loop: every cpu_op row in (start, -end, row) order, parents before children."""
    cat = host["cat"].astype(object).to_numpy()
    ops = np.flatnonzero(cat == "cpu_op")
    names = host["name"].astype(object).to_numpy()
    cols = {c: host[c].to_numpy() if c in host else None for c in ARGS}
    costs = {}
    for i in ops.tolist():
        if names[i] in MODELS:
            c = model_op(names[i], *(None if v is None else v[i] for v in cols.values()))
            if c is not None:
                costs[i] = c
    start, end = host["start_ns"].to_numpy()[ops], host["end_ns"].to_numpy()[ops]
    parent = enclosing_parents(
        start, end, (host["pid"].to_numpy()[ops], host["tid"].to_numpy()[ops])
    )
    marker = [bool(RECOMPUTE_RE.search(str(names[i]))) for i in ops.tolist()]
    top: dict[int, int] = {}
    inside: set[int] = set()
    for p in np.lexsort((ops, -end, start)).tolist():
        i, up = int(ops[p]), int(parent[p])
        above = top.get(int(ops[up]), -1) if up >= 0 else -1
        top[i] = above if above >= 0 else (i if i in costs else -1)
        if marker[p] or (up >= 0 and int(ops[up]) in inside):
            inside.add(i)
    return {k: v for k, v in top.items() if v >= 0}, costs, inside


def _check(trace) -> tuple[dict, dict, set]:
    top, costs, inside = _modelled_tops(trace)
    want_top, want_costs, want_inside = _loop(trace.host)
    assert want_costs  # the case has modelled ops
    assert {i: int(t) for i, t in enumerate(top.tolist()) if t >= 0} == want_top
    assert costs == want_costs
    assert set(np.flatnonzero(inside).tolist()) == want_inside
    return want_top, want_costs, want_inside


def test_nested_modelled_ops_and_a_recomputation_region() -> None:
    lin = "[[64,128],[256,128],[256]]"
    bf16 = '["c10::BFloat16","c10::BFloat16","c10::BFloat16"]'
    host = [
        Op("CheckpointFunctionBackward", 0, 40, "[]", "[]"),
        Op("aten::linear", 1, 10, lin, bf16),
        Op("aten::addmm", 2, 9, "[[256],[64,128],[128,256]]", bf16),
        Op("aten::relu", 11, 12, "[[64,256]]", '["c10::BFloat16"]'),
        Call("hipLaunchKernel", 3, 4, 1),
        Op("aten::linear", 50, 60, lin, bf16),
        Op("aten::linear", 50, 60, lin, bf16),  # the same interval twice: nested by row
    ]
    top, _, inside = _check(serving_trace(host, []))
    assert len(inside) == 4 and len(set(top.values())) == 3  # linear owns addmm; two alike


@pytest.mark.parametrize("name", sorted(SERVING))
def test_real_serving_traces(name: str) -> None:
    _check(read_kineto(inference(SERVING[name])))
