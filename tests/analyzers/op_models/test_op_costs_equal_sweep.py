"""The op costs from the memoised call stack (:mod:`analyzers.op_models.calls`: each GPU row's
launching call and the innermost op there, looked up once per distinct call and shared with
the serving rows; per-owner columns as arrays) equal the sweep over every launch call and the
per-owner row loop they replaced, exactly (values and dtypes), on hand-built traces (external
ids, a launch directly under a ProfilerStep, TF32 kernels, a copy from host memory) and on
the shared traces with input shapes.  The serving rows' ops equal the innermost non-step op at
each launching call; the op models keyed by codes (one call per distinct op and arguments,
also on the model's object columns of str and None) equal the call on each row's own
arguments, and the owners' argument texts equal the texts taken one by one."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzers.op_models import model_op, op_costs
from analyzers.op_models.arg_columns import arg_codes, inferred, text, texts, texts_at
from analyzers.op_models.attribution import (
    ARG_COLUMNS,
    GPU_TIME,
    OP_COST_COLUMNS,
    TF32_KERNEL,
    gpu_work_time_ns,
    modelled_costs,
    modelled_op_costs,
    outermost_modelled,
)
from analyzers.op_models.calls import cpu_op_rows
from analyzers.serving.ops import innermost_ops, kernel_ops, launch_rows
from collectors.linking import enclosing_parents, innermost_range, launch_mask, launching_calls
from collectors.model import GPU_WORK_KINDS, DeviceInfo, Trace, TraceMeta, make_trace
from tests.support.env import shared_path

F = '"float"'
MM = "[[64,128],[128,256]]"


def _sweep_costs(trace: Trace) -> pd.DataFrame:
    """The replaced op costs: every launch call swept, one row built per owner."""
    cols = list(OP_COST_COLUMNS)
    host, gpu = trace.host, trace.gpu

    def empty() -> pd.DataFrame:
        out = pd.DataFrame(columns=cols)
        out.attrs[GPU_TIME] = gpu_work_time_ns(trace)
        return out

    if host.empty or gpu.empty:
        return empty()
    ops = np.flatnonzero(np.asarray(host["cat"] == "cpu_op", dtype=bool))
    launches = np.flatnonzero(launch_mask(host))
    costs = modelled_op_costs(trace)
    if not len(ops) or not len(launches) or not costs:
        return empty()
    pid, tid = host["pid"].to_numpy(), host["tid"].to_numpy()
    start, end = host["start_ns"].to_numpy(), host["end_ns"].to_numpy()
    ext = host["external_id"].to_numpy()
    pos = enclosing_parents(start[ops], end[ops], (pid[ops], tid[ops]))
    parent = np.full(len(host), -1, dtype=np.int64)
    parent[ops] = np.where(pos >= 0, ops[np.maximum(pos, 0)], -1)
    lp = innermost_range(
        start[ops], end[ops], (pid[ops], tid[ops]), start[launches], (pid[launches], tid[launches])
    )
    parent[launches] = np.where(lp >= 0, ops[np.maximum(lp, 0)], -1)
    modelled = np.zeros(len(host), dtype=bool)
    modelled[list(costs)] = True
    top = outermost_modelled(ops, parent, modelled)
    linked = parent[launches]
    op_ext = ext[ops]
    with_ext = op_ext >= 0
    ext_ids, first = np.unique(op_ext[with_ext], return_index=True)
    if ext_ids.size:
        l_ext = ext[launches]
        at = np.minimum(np.searchsorted(ext_ids, l_ext), ext_ids.size - 1)
        found = (l_ext >= 0) & (ext_ids[at] == l_ext)
        cand = np.where(found, ops[with_ext][first][at], 0)
        ok = (
            found
            & (tid[cand] == tid[launches])
            & (start[cand] <= start[launches])
            & (start[launches] < end[cand])
        )
        linked = np.where(ok, cand, linked)
    owner_of_launch = np.full(len(host), -1, dtype=np.int64)
    owner_of_launch[launches] = np.where(linked >= 0, top[np.maximum(linked, 0)], -1)
    g = gpu[gpu["kind"].isin(GPU_WORK_KINDS) & (gpu["correlation"] >= 0)]
    calls = launching_calls(host, g["correlation"].to_numpy())
    owned = np.where(calls >= 0, owner_of_launch[np.maximum(calls, 0)], -1)
    owners = pd.Series(owned, index=g.index)
    if (owned < 0).any():
        owners = owners.where(owned >= 0)
    g = g.assign(owner=owners, dur=g["end_ns"] - g["start_ns"]).dropna(subset=["owner"])
    if g.empty:
        return empty()
    agg = g.groupby("owner").agg(kernels=("dur", "size"), kernel_time_ns=("dur", "sum"))
    names = g["name"].astype(object).to_numpy()
    tf32 = np.array([bool(re.search(TF32_KERNEL, str(n))) for n in names], dtype=bool)
    tf32_owners = set(g.loc[tf32, "owner"].astype(int))
    copy_kind = g["copy_kind"].astype(object).fillna("").astype(str)
    host_owners = set(
        g.loc[(g["kind"] == "memcpy") & copy_kind.str.contains("H"), "owner"].astype(int)
    )
    at = agg.index.to_numpy().astype(np.int64)

    def column(c: str) -> list[Any]:
        return host[c].take(at).tolist() if c in host else [None] * len(at)

    rows = []
    dims, types, concrete = (column(c) for c in ("input_dims", "input_types", "concrete_inputs"))
    for j, (i, k, t) in enumerate(
        zip(at.tolist(), agg["kernels"], agg["kernel_time_ns"], strict=True)
    ):
        c = costs[i]
        prec = c.precision
        if prec == "fp32" and c.kind in ("gemm", "conv", "attention") and i in tf32_owners:
            prec = "tf32_tensor"
        args = (text(dims[j]), text(types[j]), text(concrete[j]))
        work = (c.flops, c.bytes, int(k), int(t), i in host_owners)
        rows.append((i, column("name")[j], *args, c.kind, prec, c.exact, c.note, *work))
    out = pd.DataFrame(rows, columns=cols)
    out = out.sort_values("host_row", kind="stable").reset_index(drop=True)
    out.attrs[GPU_TIME] = gpu_work_time_ns(trace)
    return out


def _trace(host: list[tuple], gpu: list[tuple]) -> Trace:
    """Host rows (name, cat, start, end, tid, correlation, external id, dims, types) and GPU
    rows (name, kind, start, end, correlation, copy kind), times in ns."""
    meta = TraceMeta(
        rank=0,
        source_format="synthetic",
        devices=[DeviceInfo(id=0, name="NVIDIA A100-SXM4-40GB", compute_major=8, compute_minor=0)],
    )
    columns = list(zip(*host, strict=True))
    h: dict[str, list] = {
        k: list(columns[i])
        for i, k in enumerate(("name", "cat", "start_ns", "end_ns", "tid", "correlation"))
    }
    h.update(
        pid=[1] * len(host),
        external_id=list(columns[6]),
        input_dims=list(columns[7]),
        input_types=list(columns[8]),
    )
    gcols = list(zip(*gpu, strict=True))
    g: dict[str, list] = {
        k: list(gcols[i])
        for i, k in enumerate(("name", "kind", "start_ns", "end_ns", "correlation"))
    }
    g.update(device=[0] * len(gpu), stream=[7] * len(gpu), copy_kind=list(gcols[5]))
    return make_trace(meta, gpu=g, host=h)


def _hand() -> Trace:
    op, rt = "cpu_op", "cuda_runtime"
    host = [
        ("ProfilerStep#1", op, 0, 1000, 1, -1, -1, None, None),
        ("aten::linear", op, 10, 100, 1, -1, 1, "[[64,128],[256,128],[256]]", f"[{F},{F},{F}]"),
        ("aten::addmm", op, 20, 90, 1, -1, 2, f"[[256],{MM[1:-1]}]", f"[{F},{F},{F}]"),
        ("cudaLaunchKernel", rt, 30, 40, 1, 100, 2, None, None),
        ("cudaLaunchKernel", rt, 200, 210, 1, 101, -1, None, None),  # under the step only
        ("aten::mm", op, 300, 400, 1, -1, 3, MM, f"[{F},{F}]"),
        ("cudaMemcpyAsync", rt, 310, 320, 1, 102, 3, None, None),
        ("aten::mm", op, 500, 600, 2, -1, 9, MM, f"[{F},{F}]"),  # other thread, ext id 9
        ("cudaLaunchKernel", rt, 700, 710, 1, 103, 9, None, None),  # ext id of another thread
        ("aten::mm", op, 800, 900, 1, -1, 4, MM, f"[{F},{F}]"),
        ("cudaLaunchKernel", rt, 810, 820, 1, 104, 4, None, None),
        # the call's external id names an unmodelled op around the mm that encloses it
        ("aten::custom", op, 1000, 1100, 1, -1, 7, None, None),
        ("aten::mm", op, 1010, 1090, 1, -1, 8, MM, f"[{F},{F}]"),
        ("cudaLaunchKernel", rt, 1020, 1030, 1, 105, 7, None, None),
    ]
    gpu = [
        ("ampere_tf32_s1688gemm", "kernel", 2000, 2100, 100, None),
        ("stray", "kernel", 2100, 2200, 101, None),
        ("Memcpy HtoD", "memcpy", 2200, 2300, 102, "HtoD"),
        ("gemm", "kernel", 2300, 2400, 103, None),
        ("gemm", "kernel", 2400, 2450, 104, None),
        ("gemm", "kernel", 2450, 2460, 104, None),
        ("orphan", "kernel", 2500, 2600, 999, None),
        ("gemm", "kernel", 2600, 2700, 105, None),
    ]
    return _trace(host, gpu)


def _check(trace: Trace) -> pd.DataFrame:
    got = op_costs(trace)
    want = _sweep_costs(trace)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.attrs == want.attrs
    k = kernel_ops(trace)
    eager = (k["launch_row"].to_numpy() >= 0) & ~k["graph_launch"].to_numpy(dtype=bool)
    lr = launch_rows(trace)[k["gpu_row"].to_numpy()]
    assert np.array_equal(k["op_row"].to_numpy()[eager], innermost_ops(trace.host, lr[eager]))
    assert (k["op_row"].to_numpy()[~eager] == -1).all()
    return got


def test_hand_trace_external_ids_a_step_tf32_and_a_host_copy() -> None:
    c = _check(_hand())
    assert c["host_row"].tolist() == [1, 5, 9]
    assert c["precision"].tolist() == ["tf32_tensor", "fp32", "fp32"]
    assert c["host_copy"].tolist() == [False, True, False]
    assert c["kernels"].tolist() == [1, 1, 2]
    k = kernel_ops(_hand())
    assert k["op"].tolist()[:2] == ["aten::addmm", None]  # the step is no op


def test_an_op_around_the_step_owns_a_launch_under_the_step() -> None:
    op, rt = "cpu_op", "cuda_runtime"
    host = [
        ("aten::mm", op, 0, 2000, 1, -1, -1, MM, f"[{F},{F}]"),
        ("ProfilerStep#1", op, 0, 1000, 1, -1, -1, None, None),
        ("cudaLaunchKernel", rt, 200, 210, 1, 101, -1, None, None),
        ("ProfilerStep#2", op, 1000, 2000, 2, -1, -1, None, None),  # another thread's step
        ("cudaLaunchKernel", rt, 1500, 1510, 1, 102, -1, None, None),
    ]
    t = _trace(
        host, [("g", "kernel", 3000, 3100, 101, None), ("g", "kernel", 3100, 3200, 102, None)]
    )
    _check(t)
    assert kernel_ops(t)["op"].tolist() == ["aten::mm", "aten::mm"]


REAL = [
    ("hta", "trace_filter", "sampled_rank-0.json.gz"),
    ("hta", "negative_queue_length_values_check", "rank0.json.gz"),
    ("tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ("tracelens", "mi300", "facebook_timesformer-base-finetuned-k400__1016002.json.gz"),
    ("tracelens", "inference", "sglang_decode", "sglang_Qwen3-8B_decode.json.gz"),
    ("tracelens", "torch_compile_triton", "trace.json.gz"),
]


@pytest.mark.parametrize("parts", REAL, ids=[p[-1] for p in REAL])
def test_shared_traces(parts: tuple[str, ...]) -> None:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", *parts)])
    _check(t)


def _row_by_row_costs(host: pd.DataFrame, ops: np.ndarray) -> dict:
    """``model_op`` on each op row's recorded arguments (the replaced per-row loop)."""
    names = host["name"].astype(object).to_numpy()
    cols = [host[c].to_numpy() if c in host else None for c in ARG_COLUMNS]
    out = {}
    for i in ops.tolist():
        c = model_op(names[i], *(None if v is None else v[i] for v in cols))
        if c is not None:
            out[i] = c
    return out


@pytest.mark.parametrize("parts", REAL, ids=[p[-1] for p in REAL])
def test_modelled_costs_keyed_by_codes_equal_the_row_loop(parts: tuple[str, ...]) -> None:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", *parts)])
    ops = cpu_op_rows(t.host)
    got = modelled_costs(t.host, ops)
    assert got == _row_by_row_costs(t.host, ops)
    assert list(got) == sorted(got)


def test_modelled_costs_of_list_arguments_are_keyed_row_by_row() -> None:
    host = _hand().host.copy()
    host["input_strides"] = pd.Series([[[1, 2]], None] * (len(host) // 2) + [None], dtype=object)
    ops = cpu_op_rows(host)
    got = modelled_costs(host, ops)
    assert got and got == _row_by_row_costs(host, ops)


def test_modelled_costs_of_calls_differing_in_one_argument_only() -> None:
    conv_dims = json.dumps([[1, 3, 32, 32], [8, 3, 3, 3], [], [], [], [], []])
    conv_types = json.dumps(
        [*(["float"] * 2), "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    )
    op, ops_rows = "cpu_op", []
    for stride in (1, 2):  # the output size, so the FLOPs, from the Concrete Inputs
        concrete = json.dumps(["", "", "", f"[{stride}, {stride}]", "[0, 0]", "[1, 1]", "1"])
        ops_rows.append(
            ("aten::conv2d", op, 10 * stride, 10 * stride + 5, conv_dims, conv_types, concrete)
        )
    for dtype in ("float", "c10::Half"):  # the bytes and the precision from the types
        ops_rows.append(("aten::mm", op, 100, 105, MM, json.dumps([dtype, dtype]), None))
    n = len(ops_rows)
    host = pd.DataFrame(
        {
            "name": pd.Series([r[0] for r in ops_rows], dtype="category"),
            "cat": pd.Series([r[1] for r in ops_rows], dtype="category"),
            "input_dims": pd.Series([r[4] for r in ops_rows], dtype="str"),
            "input_types": pd.Series([r[5] for r in ops_rows], dtype="str"),
            "concrete_inputs": pd.Series([r[6] for r in ops_rows], dtype="str"),
            "input_strides": pd.Series([None] * n, dtype=object),
        }
    )
    got = modelled_costs(host, np.arange(n))
    assert len(got) == 4 and got == _row_by_row_costs(host, np.arange(n))
    assert got[0].flops != got[1].flops and got[2].precision != got[3].precision


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_modelled_costs_of_an_object_column_of_missing_values(missing: object) -> None:
    host = _hand().host.copy()
    host["concrete_inputs"] = pd.Series([missing] * len(host), dtype=object)
    host["input_strides"] = pd.Series([None] * len(host), dtype=object)
    ops = cpu_op_rows(host)
    got = modelled_costs(host, ops)
    assert got and got == _row_by_row_costs(host, ops)
    assert op_costs(_hand()).equals(_sweep_costs(_hand()))


def test_launches_outside_every_op() -> None:
    op, rt = "cpu_op", "cuda_runtime"
    host = [
        ("aten::mm", op, 0, 100, 1, -1, -1, MM, f"[{F},{F}]"),
        ("cudaLaunchKernel", rt, 200, 210, 1, 101, -1, None, None),  # after the op ended
        ("cudaLaunchKernel", rt, 50, 60, 2, 102, -1, None, None),  # on another thread
    ]
    gpu = [("g", "kernel", 3000, 3100, 101, None), ("g", "kernel", 3100, 3200, 102, None)]
    t = _trace(host, gpu)
    assert _check(t).empty
    assert kernel_ops(t)["via"].tolist() == ["no-op", "no-op"]


OBJECT_ARGS = {
    "strings and None": (["[[1]]", None, "[[2]]", "[[1]]"], True),
    "None only": ([None, None], True),
    "an empty string and None": (["", None, "x"], True),
    "a NaN among strings": (["[[1]]", float("nan")], False),
    "a list among strings": (["[[1]]", [[1]]], False),
    "a number among strings": (["[[1]]", 1], False),
}


@pytest.mark.parametrize(("values", "coded"), OBJECT_ARGS.values(), ids=OBJECT_ARGS.keys())
def test_argument_codes_of_the_models_object_columns(values: list, coded: bool) -> None:
    host = pd.DataFrame({"input_dims": pd.Series(values, dtype=object)})
    rows = np.arange(len(values))
    got = arg_codes(host, "input_dims", rows)
    if not coded:  # anything but str and None: keyed row by row
        assert got is None
        return
    assert got is not None
    codes, distinct = got
    assert [distinct[c] for c in codes.tolist()] == values  # None stays None, not NaN


@pytest.mark.parametrize(
    "col",
    [
        pd.Series(["[[1]]", None, "", "[[2]]", None], dtype=object),
        pd.Series(["[[1]]", None, "[[2]]"], dtype=object),
        pd.Series([None, None], dtype=object),
        pd.Series(["[[1]]", None], dtype="str"),
        pd.Series(["[[1]]", [[1]], None], dtype=object),
    ],
    ids=["object with an empty string", "object", "None only", "str dtype", "object with a list"],
)
def test_texts_at_rows_equal_the_texts_one_by_one(col: pd.Series) -> None:
    host = pd.DataFrame({"input_dims": col})
    rows = np.arange(len(col))[::-1].copy()
    got = texts_at(host, "input_dims", rows)
    want = inferred(texts(host, "input_dims", rows))
    if isinstance(want, list):
        assert got == want
    else:  # the values and dtype a frame's column gets (its name is the frame's)
        pd.testing.assert_series_equal(pd.Series(got), pd.Series(want), check_names=False)


def test_modelled_costs_of_an_object_column_of_strings_and_none() -> None:
    host = _hand().host.copy()
    for c in ("input_dims", "input_types", "concrete_inputs"):
        host[c] = pd.Series(host[c].astype(object).where(host[c].notna(), None), dtype=object)
    assert arg_codes(host, "input_dims", np.arange(len(host))) is not None
    ops = cpu_op_rows(host)
    got = modelled_costs(host, ops)
    assert got and got == _row_by_row_costs(host, ops)
