"""The serving rows computed from codes equal the per-row code they replaced: categories matched
once per distinct kernel name, op and kind (:func:`analyzers.serving.categories.kernel_category`
and the memoised categorised kernel ops), launching calls from a table indexed by correlation id
(:func:`analyzers.serving.ops.launch_rows` against :func:`collectors.linking.launching_calls`),
and MoE layer ops climbed along the memoised op parents."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analyzers.serving.categories import KERNEL_RULES, MEMORY, OP_RULES, OTHER, kernel_category
from analyzers.serving.moe import LAYER_RE, _layer_ops
from analyzers.serving.ops import categorized_kernel_ops, kernel_ops, launch_rows
from collectors.kineto import read_kineto
from collectors.linking import enclosing_parents, launching_calls
from tests.support.serving_builders import Call, Kernel, Op, serving_trace
from tests.support.serving_data import CAPTURED, SERVING, inference


def _loop_category(names, ops, kinds) -> list[str]:
    """The per-row decision order (docs/inference.md "Op categories")."""
    out = []
    for n, o, k in zip(names, ops, kinds, strict=True):
        if k in ("memcpy", "memset"):
            out.append(MEMORY)
            continue
        got = None
        if isinstance(o, str):
            got = next((r.category for r in OP_RULES if re.search(r.pattern, o)), None)
        if got is None and isinstance(n, str):
            got = next((r.category for r in KERNEL_RULES if re.search(r.pattern, n)), None)
        out.append(got or OTHER)
    return out


def test_generated_names_ops_and_kinds_with_missing_values() -> None:
    rng = np.random.default_rng(5)
    pool = [
        "ampere_sgemm_128x64", "triton_poi_fused_add_0", "ncclKernel_AllReduce", "Memcpy HtoD",
        "fmha_fwd", "rms_norm_kernel", "vectorized_elementwise_kernel", "matmul_ogs_x", "mystery",
        "aten::mm", "aten::add", "vllm::moe_forward", "aten::layer_norm", "c10d::allreduce_",
        None, np.nan, 7,
    ]  # fmt: skip
    pick = np.empty(len(pool), dtype=object)
    pick[:] = pool
    n = 5_000
    names, ops = pick[rng.integers(0, len(pool), n)], pick[rng.integers(0, len(pool), n)]
    kinds = np.array(["kernel", "memcpy", "memset", None], dtype=object)[rng.integers(0, 4, n)]
    want = _loop_category(names, ops, kinds)
    assert kernel_category(names, ops, kinds).tolist() == want
    assert kernel_category(list(names), list(ops), list(kinds)).tolist() == want
    assert kernel_category(names).tolist() == _loop_category(names, [None] * n, [None] * n)


@pytest.mark.parametrize("name", sorted(SERVING))
def test_real_traces_categories_and_launching_calls(name: str) -> None:
    t = read_kineto(inference(SERVING[name]))
    k = categorized_kernel_ops(t)
    want = _loop_category(k["name"].tolist(), k["op"].tolist(), k["kind"].tolist())
    assert k["category"].tolist() == want
    assert kernel_ops(t)["op"].tolist() == k["op"].tolist()
    corr = t.gpu["correlation"].to_numpy()
    assert np.array_equal(launch_rows(t), launching_calls(t.host, corr))


@pytest.mark.parametrize(
    "ids",
    [
        (10, 11, 12),  # dense and unique: the table
        (10, 10_000_000, 12),  # sparse: the sort
        (10, 11, 11),  # one id of two calls: the sort, the earlier call wins
    ],
)
def test_launch_rows_equal_launching_calls(ids: tuple[int, int, int]) -> None:
    host = [Call("hipLaunchKernel", 5 + i, 6 + i, c) for i, c in enumerate(ids)]
    gpu = [Kernel("k", 10 + i, 11 + i, c) for i, c in enumerate((*ids, 13, -1))]
    t = serving_trace(host, gpu)
    got = launch_rows(t)
    assert np.array_equal(got, launching_calls(t.host, t.gpu["correlation"].to_numpy()))
    assert got[-2:].tolist() == [-1, -1]


def _loop_layer_ops(host: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """The climb over the op rows' parents in the ops' own positions (the replaced code)."""
    out = np.full(len(rows), -1, dtype=np.int64)
    is_op = np.flatnonzero(np.asarray(host["cat"] == "cpu_op", dtype=bool))
    names = host["name"].astype(object).to_numpy()
    match = np.array([bool(LAYER_RE.search(str(names[i]))) for i in is_op] + [False])
    start, end = host["start_ns"].to_numpy()[is_op], host["end_ns"].to_numpy()[is_op]
    parent = enclosing_parents(
        start, end, (host["pid"].to_numpy()[is_op], host["tid"].to_numpy()[is_op])
    )
    pos = pd.Series(np.arange(len(is_op)), index=is_op).reindex(rows).fillna(-1).to_numpy(int)
    while (pos >= 0).any():
        live = pos >= 0
        hit = live & match[np.where(live, pos, -1)]
        out[hit] = is_op[pos[hit]]
        pos = np.where(live, parent[np.maximum(pos, 0)], -1)
    return out


def test_layer_ops_of_nested_moe_ops_and_real_moe_traces() -> None:
    host = [
        Op("vllm::moe_forward", 0, 100),
        Op("FusedMoE", 1, 90),
        Op("aten::mm", 2, 10),
        Op("aten::add", 200, 210),
        Call("hipLaunchKernel", 3, 4, 1),
    ]
    t = serving_trace(host, [Kernel("k", 5, 6, 1)])
    rows = np.arange(len(t.host))
    assert np.array_equal(_layer_ops(t, rows), _loop_layer_ops(t.host, rows))
    assert (_layer_ops(t, rows) >= 0).sum() == 3
    for execution, capture in CAPTURED.values():
        for path in (execution, capture):
            tr = read_kineto(inference(path))
            rows = np.arange(len(tr.host))
            assert np.array_equal(_layer_ops(tr, rows), _loop_layer_ops(tr.host, rows))
