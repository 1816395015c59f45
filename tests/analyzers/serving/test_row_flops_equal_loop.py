"""The serving rows' FLOPs (:func:`analyzers.serving.flops.row_flops`: one cost per modelled op,
taken by every row it owns, TF32 tested once per kernel name) equal the per-row loop it
replaced, on the real serving traces (graph replays with and without their capture) and on a
hand-built trace with TF32 and non-TF32 kernels of fp32 and bf16 GEMMs, a zero-length call and
a recomputation region."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analyzers.op_models import TF32_KERNEL
from analyzers.serving.flops import _modelled_tops, row_flops
from analyzers.serving.graphs import Capture, attribute_graphs
from analyzers.serving.ops import categorized_kernel_ops
from analyzers.serving.phases import step_ranges
from collectors.kineto import read_kineto
from tests.support.serving_builders import Call, Kernel, Op, launched, serving_trace
from tests.support.serving_data import CAPTURED, SERVING, inference

MM = "[[64,128],[128,256]]"
BF16 = '["c10::BFloat16","c10::BFloat16"]'
FP32 = '["float","float"]'


def _loop(trace, kops: pd.DataFrame, captures: tuple = ()) -> pd.DataFrame:
    """The per-row loop :func:`row_flops` replaced."""
    n = len(kops)
    owner = np.full(n, -1, dtype=np.int64)
    cost_of = {}
    recomputed = np.zeros(n, dtype=bool)
    src, op_row = kops["capture"].to_numpy(), kops["op_row"].to_numpy()
    for s, t in enumerate((trace, *captures), start=-1):
        sel = np.flatnonzero((src == s) & (op_row >= 0))
        if not len(sel):
            continue
        top, costs, inside = _modelled_tops(t)
        owner[sel] = top[op_row[sel]]
        recomputed[sel] = inside[op_row[sel]]
        cost_of.update({(s, r): c for r, c in costs.items()})
    modelled = owner >= 0
    replay = np.where(kops["graph_launch"].to_numpy(dtype=bool), kops["launch_row"].to_numpy(), -1)
    dur = kops["dur_ns"].to_numpy(dtype=np.int64)
    flops, nbytes = np.zeros(n), np.zeros(n)
    precision = np.full(n, None, dtype=object)
    exact = np.zeros(n, dtype=bool)
    if modelled.any():
        idx = np.flatnonzero(modelled)
        calls = pd.DataFrame(
            {"src": src[idx], "owner": owner[idx], "replay": replay[idx], "dur": dur[idx]}
        )
        grp = calls.groupby(["src", "owner", "replay"], sort=False)
        call_dur = grp["dur"].transform("sum").to_numpy()
        call_n = grp["dur"].transform("size").to_numpy()
        weight = np.where(call_dur > 0, dur[idx] / np.maximum(call_dur, 1), 1.0 / call_n)
        names = kops["name"].astype(object).to_numpy()
        tf32 = pd.Series([bool(re.search(TF32_KERNEL, str(x))) for x in names[idx]])
        call_tf32 = tf32.groupby(grp.ngroup().to_numpy()).transform("any").to_numpy()
        pairs = zip(idx.tolist(), src[idx].tolist(), owner[idx].tolist(), strict=True)
        for j, (i, s, o) in enumerate(pairs):
            c = cost_of[(int(s), int(o))]
            flops[i], nbytes[i] = c.flops * weight[j], c.bytes * weight[j]
            p = c.precision
            if p == "fp32" and c.kind in ("gemm", "conv", "attention") and call_tf32[j]:
                p = "tf32_tensor"
            precision[i], exact[i] = p, c.exact
    out = kops.copy()
    out["flops"], out["bytes"], out["precision"] = flops, nbytes, pd.Series(precision, dtype=object)
    out["exact"], out["modelled"], out["recomputed"] = exact, modelled, recomputed & modelled
    return out


def _check(trace, captures: tuple = ()) -> pd.DataFrame:
    graphs = attribute_graphs(trace, captures, step_ranges(trace)) if captures else None
    kops = categorized_kernel_ops(trace, graphs)
    caps = graphs.captures if graphs is not None else ()
    got = row_flops(trace, kops, caps)
    pd.testing.assert_frame_equal(got, _loop(trace, kops, caps), check_exact=True)
    return got


def test_tf32_and_bf16_gemms_zero_length_calls_and_recomputation() -> None:
    host = [
        *launched("aten::mm", "ampere_tf32_s1688gemm", 0, 1, MM, FP32),
        *launched("aten::mm", "ampere_sgemm_128x64", 10, 2, MM, FP32),
        *launched("aten::mm", "gemm_bf16", 20, 3, MM, BF16),
        Op("CheckpointFunctionBackward", 30, 50),
        Op("aten::mm", 31, 40, MM, FP32),
        Call("hipLaunchKernel", 32, 33, 4),
        Call("hipLaunchKernel", 34, 35, 5),
    ]
    gpu = [
        Kernel("ampere_tf32_s1688gemm", 100, 110, 1),
        Kernel("ampere_sgemm_128x64", 110, 130, 2),
        Kernel("gemm_bf16", 130, 130, 3),  # zero length: the call's rows share its FLOPs evenly
        Kernel("cutlass_tensorop_s1688gemm", 140, 150, 4),
        Kernel("reduce_kernel", 150, 155, 5),
    ]
    got = _check(serving_trace(host, gpu))
    assert got["precision"].tolist() == [
        "tf32_tensor", "fp32", "fp16_tensor", "tf32_tensor", "tf32_tensor"
    ]  # fmt: skip
    assert got["recomputed"].tolist() == [False, False, False, True, True]


@pytest.mark.parametrize("name", sorted(SERVING))
def test_real_serving_traces(name: str) -> None:
    _check(read_kineto(inference(SERVING[name])))


@pytest.mark.parametrize("key", sorted(CAPTURED))
def test_real_replays_with_their_capture(key: str) -> None:
    execution, capture = CAPTURED[key]
    got = _check(read_kineto(inference(execution)), (Capture(read_kineto(inference(capture))),))
    assert got["modelled"].any()
