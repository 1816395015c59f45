"""Op FLOP/byte models on hand-computed cases, attribution to launched GPU work on a hand-built
trace, and both checked on real Kineto traces that carry input shapes (against formulas and a
brute-force attribution computed here from the raw JSON)."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analyzers.gpu_peaks import find_peaks, peaks_named
from analyzers.op_models import MODELS, OP_GROUP_COLUMNS, model_op, op_costs, op_groups
from analyzers.roofline import op_roofline
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from collectors.peaks import load_peaks
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

F = '"float"'
H = '"c10::Half"'


def cost(name: str, dims: str, types: str):
    c = model_op(name, dims, types)
    assert c is not None, name
    return c


# --- hand-computed models -------------------------------------------------------------------


def test_mm_is_2mnk_and_reads_inputs_once_writes_output_once() -> None:
    c = cost("aten::mm", "[[2,3],[3,4]]", f"[{F},{F}]")
    assert (c.flops, c.bytes, c.kind, c.precision) == (
        2 * 2 * 4 * 3,
        (6 + 12 + 8) * 4,
        "gemm",
        "fp32",
    )


def test_addmm_counts_one_bias_add_per_output_element() -> None:
    c = cost("aten::addmm", "[[4],[2,3],[3,4],[],[]]", f'[{F},{F},{F},"Scalar","Scalar"]')
    assert c.flops == 48 + 2 * 4
    assert c.bytes == (4 + 6 + 12 + 8) * 4


def test_bmm_and_baddbmm_multiply_by_the_batch() -> None:
    c = cost("aten::bmm", "[[5,2,3],[5,3,4]]", f"[{H},{H}]")
    assert c.flops == 2 * 5 * 2 * 4 * 3
    assert c.bytes == (30 + 60 + 40) * 2
    assert c.precision == "fp16_tensor"
    d = cost("aten::baddbmm", "[[5,2,4],[5,2,3],[5,3,4],[],[]]", f'[{H},{H},{H},"Scalar","Scalar"]')
    assert d.flops == 2 * 5 * 2 * 4 * 3 + 5 * 2 * 4
    assert d.bytes == (40 + 30 + 60 + 40) * 2


def test_linear_flattens_leading_dims_and_counts_bias_when_present() -> None:
    with_bias = cost("aten::linear", "[[2,3,8],[16,8],[16]]", f"[{F},{F},{F}]")
    m, n, k = 6, 16, 8
    assert with_bias.flops == 2 * m * n * k + m * n
    assert with_bias.bytes == (48 + 128 + 16 + m * n) * 4
    no_bias = cost("aten::linear", "[[2,3,8],[16,8],[]]", f'[{F},{F},""]')
    assert no_bias.flops == 2 * m * n * k
    assert no_bias.bytes == (48 + 128 + m * n) * 4


def test_matmul_broadcasts_batch_dims_and_promotes_vectors() -> None:
    c = cost("aten::matmul", "[[7,1,2,3],[5,3,4]]", f"[{F},{F}]")
    assert c.flops == 2 * (7 * 5) * 2 * 4 * 3
    v = cost("aten::matmul", "[[3],[3,4]]", f"[{F},{F}]")
    assert v.flops == 2 * 1 * 4 * 3


def test_mismatched_gemm_shapes_are_not_modelled() -> None:
    assert model_op("aten::mm", "[[2,3],[4,5]]", f"[{F},{F}]") is None
    assert model_op("aten::mm", "[[2,3]]", f"[{F},{F}]") is None
    assert model_op("aten::mm", "not json", f"[{F},{F}]") is None
    assert model_op("aten::unknown_op", "[[2,3]]", f"[{F}]") is None


def test_convolution_forward_assumes_same_size_output_and_says_so() -> None:
    # N=2, C_in=4, 8x8, C_out=6, groups=2 (weight [6, 2, 3, 3]), bias
    c = cost(
        "aten::convolution",
        "[[2,4,8,8],[6,2,3,3],[6],[],[],[],[],[],[]]",
        f'[{F},{F},{F},"ScalarList","ScalarList","ScalarList","Scalar","ScalarList","Scalar"]',
    )
    out = 2 * 6 * 8 * 8
    assert c.flops == 2 * out * 2 * 9 + out
    assert c.bytes == (2 * 4 * 64 + 6 * 2 * 9 + 6 + out) * 4
    assert not c.exact and "stride" in c.note


def test_convolution_backward_takes_the_output_size_from_grad_output() -> None:
    c = cost(
        "aten::convolution_backward",
        "[[2,6,4,4],[2,4,8,8],[6,2,3,3],[],[],[],[],[],[],[],[]]",
        f"[{F},{F},{F}" + ',"ScalarList"' * 8 + "]",
    )
    out = 2 * 6 * 4 * 4
    assert c.flops == 2 * (2 * out * 2 * 9)
    assert c.bytes == (out + 2 * 2 * 4 * 64 + 2 * 6 * 2 * 9) * 4


def test_attention_forward_and_backward() -> None:
    # B=2, H=3, L=5, S=7, E=8, Ev=8, bf16
    q, k, v = "[2,3,5,8]", "[2,3,7,8]", "[2,3,7,8]"
    t = '"c10::BFloat16"'
    fwd = cost(
        "aten::_scaled_dot_product_flash_attention",
        f"[{q},{k},{v},[],[],[],[]]",
        f'[{t},{t},{t},"Scalar","Scalar","Scalar",""]',
    )
    flops = 2 * 6 * 5 * 7 * 8 * 2
    assert fwd.flops == flops
    assert fwd.bytes == (240 + 336 + 336 + 6 * 5 * 8) * 2
    assert fwd.precision == "fp16_tensor" and not fwd.exact
    bwd = cost(
        "aten::_scaled_dot_product_flash_attention_backward",
        f"[{q},{q},{k},{v},{q},[2,3,5]]",
        f"[{t},{t},{t},{t},{t},{F}]",
    )
    assert bwd.flops == flops * 5 // 2
    # flash kernels' own op takes (B, L, H, E)
    blhd = cost(
        "aten::_flash_attention_forward", "[[2,5,3,8],[2,7,3,8],[2,7,3,8]]", f"[{t},{t},{t}]"
    )
    assert blhd.flops == flops


def test_elementwise_broadcasts_and_inplace_writes_self() -> None:
    c = cost("aten::add", "[[4,1],[1,3],[]]", f'[{F},{F},"Scalar"]')
    assert (c.flops, c.bytes) == (12, (4 + 3 + 12) * 4)
    d = cost("aten::mul_", "[[4,3],[4,3]]", f"[{F},{F}]")
    assert (d.flops, d.bytes) == (12, (12 + 12 + 12) * 4)
    copy = cost("aten::copy_", "[[10],[10],[]]", f'[{H},{F},"Scalar"]')
    assert (copy.flops, copy.bytes) == (0, 10 * 4 + 10 * 2)
    sm = cost("aten::_softmax", "[[4,8],[],[]]", f'[{F},"Scalar","Scalar"]')
    assert (sm.flops, sm.bytes) == (5 * 32, 2 * 32 * 4)
    red = cost("aten::sum", "[[4,8],[],[],[]]", f'[{F},"","Scalar",""]')
    assert (red.flops, red.bytes, red.exact) == (32, 32 * 4, False)


# --- attribution on a hand-built trace --------------------------------------------------------


def _hand_trace() -> Trace:
    meta = TraceMeta(
        rank=0,
        source_format="synthetic",
        devices=[DeviceInfo(id=0, name="NVIDIA A100-SXM4-40GB", compute_major=8, compute_minor=0)],
    )
    host = {
        "name": [
            "aten::linear",
            "aten::t",
            "aten::addmm",
            "cudaLaunchKernel",
            "aten::mm",
            "aten::copy_",
            "cudaMemcpyAsync",
            "cudaLaunchKernel",
            "cudaLaunchKernel",
            "aten::add",
            "cudaLaunchKernel",
        ],
        "cat": ["cpu_op"] * 3
        + ["cuda_runtime", "cpu_op", "cpu_op"]
        + ["cuda_runtime"] * 3
        + ["cpu_op", "cuda_runtime"],
        "start_ns": [0, 1, 10, 20, 200, 210, 215, 250, 400, 500, 510],
        "end_ns": [100, 5, 90, 30, 300, 240, 220, 260, 410, 600, 520],
        "pid": [1] * 11,
        "tid": [1] * 9 + [2, 2],
        "correlation": [-1, -1, -1, 100, -1, -1, 101, 102, 103, -1, 104],
        # row 7's external id names the op of another thread (old Kineto: id = correlation):
        # the link is rejected because that op does not enclose the call
        "external_id": [1, 2, 3, 3, 4, 5, 5, 9, -1, 9, 9],
        "input_dims": [
            "[[4,8],[16,8],[16]]",
            "[[16,8]]",
            "[[16],[4,8],[8,16],[],[]]",
            None,
            "[[2,3],[3,4]]",
            "[[2,3],[2,3],[]]",
            None,
            None,
            None,
            "[[3],[3],[]]",
            None,
        ],
        "input_types": [
            f"[{F},{F},{F}]",
            f"[{F}]",
            f'[{F},{F},{F},"Scalar","Scalar"]',
            None,
            f"[{F},{F}]",
            f'[{F},{F},"Scalar"]',
            None,
            None,
            None,
            f'[{F},{F},"Scalar"]',
            None,
        ],
    }
    gpu = {
        "name": ["gemm_a", "memcpy", "gemm_b", "orphan", "add_kernel"],
        "kind": ["kernel", "memcpy", "kernel", "kernel", "kernel"],
        "start_ns": [1000, 1200, 1300, 1400, 1600],
        "end_ns": [1100, 1210, 1350, 1500, 1605],
        "correlation": [100, 101, 102, 103, 104],
        "device": [0] * 5,
        "stream": [7] * 5,
    }
    return make_trace(meta, gpu=gpu, host=host)


def test_kernels_are_attributed_to_the_outermost_modelled_op_once() -> None:
    c = op_costs(_hand_trace())
    got = {r.op: (r.kernels, r.kernel_time_ns, r.flops, r.bytes) for r in c.itertuples()}
    assert got == {
        # linear owns the GEMM its inner addmm launched: 2MNK + MN, bias counted once
        "aten::linear": (1, 100, 2 * 4 * 16 * 8 + 4 * 16, (32 + 128 + 16 + 64) * 4),
        # mm owns its inner copy_ (memcpy) and its own kernel
        "aten::mm": (2, 10 + 50, 48, (6 + 12 + 8) * 4),
        "aten::add": (1, 5, 3, 9 * 4),
    }
    # the launch outside any op is not attributed
    assert c["kernels"].sum() == 4


def test_op_roofline_rates_and_bound_from_the_peak_table() -> None:
    t = _hand_trace()
    groups = op_groups(op_costs(t))
    peaks = find_peaks(load_peaks(), t.gpu_device.name)
    points = {p.name: p for p in op_roofline(groups, peaks)}
    lin = points["aten::linear"]
    flops, nbytes, secs = 1088, 960, 100e-9
    assert lin.flops_per_s_total == pytest.approx(flops / secs)
    assert lin.bandwidth["dram"] == pytest.approx(nbytes / secs)
    ai = flops / nbytes
    assert lin.bound == ("memory" if ai < 19.5e12 / 1555e9 else "compute")
    assert lin.pct_of_attainable == pytest.approx(100 * (flops / secs) / min(19.5e12, ai * 1555e9))
    # shares of the trace's GPU time (265 ns of kernels and copies), not of the modelled 165
    assert {n: p.time_share for n, p in points.items()} == pytest.approx(
        {"aten::linear": 100 / 265, "aten::mm": 60 / 265, "aten::add": 5 / 265}
    )


# --- real Kineto traces with input shapes ----------------------------------------------------

REAL = [
    ("trace_filter", "sampled_rank-0.json.gz"),
    ("negative_queue_length_values_check", "rank0.json.gz"),
]


@cache
def _load(parts: tuple[str, ...]) -> Trace:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", "hta", *parts)])
    return t


@cache
def _raw_events(parts: tuple[str, ...]) -> list[dict]:
    return trace_events(shared_path("kineto", "hta", *parts))


def _gemm_expected(op: str, dims: list[list[int]]) -> tuple[int, int]:
    """(FLOP, elements read+written) by the textbook formulas, written out per op."""
    if op == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k, m * k + k * n + m * n
    if op == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return 2 * b * m * n * k, b * (m * k + k * n + m * n)
    if op == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return 2 * m * n * k + m * n, math.prod(dims[0]) + m * k + k * n + m * n
    if op == "aten::linear":
        m, k = math.prod(dims[0][:-1]), dims[0][-1]
        n = dims[1][0]
        bias = math.prod(dims[2]) if len(dims) > 2 and dims[2] else 0
        return 2 * m * n * k + (m * n if bias else 0), m * k + n * k + bias + m * n
    if op == "aten::matmul" and len(dims[0]) == 2 and len(dims[1]) == 2:
        (m, k), (_, n) = dims
        return 2 * m * n * k, m * k + k * n + m * n
    raise KeyError(op)


@pytest.mark.parametrize("parts", REAL, ids=[p[0] for p in REAL])
def test_real_trace_gemm_flops_and_bytes_equal_the_formulas(parts: tuple[str, ...]) -> None:
    c = op_costs(_load(parts))
    checked = 0
    for r in c.itertuples():
        dims = json.loads(r.input_dims)
        try:
            flops, elems = _gemm_expected(r.op, dims)
        except KeyError:
            continue
        assert json.loads(r.input_types)[0] == "float"
        assert (r.flops, r.bytes) == (flops, elems * 4), (r.op, r.input_dims)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("parts", REAL, ids=[p[0] for p in REAL])
def test_real_trace_attribution_equals_a_brute_force_call_stack_walk(
    parts: tuple[str, ...],
) -> None:
    ev = _raw_events(parts)
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    rt = {
        e["args"]["correlation"]: e
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    modelled = {
        id(o)
        for o in ops
        if o["name"] in MODELS
        and model_op(
            o["name"],
            json.dumps(o["args"].get("Input Dims")),
            json.dumps(o["args"].get("Input type")),
        )
    }
    by_thread: dict[tuple, list[dict]] = {}
    for o in ops:
        by_thread.setdefault((o["pid"], o["tid"]), []).append(o)
    arrays = {
        key: (
            np.array([o["ts"] for o in lst], dtype=float),
            np.array([o["ts"] + o["dur"] for o in lst], dtype=float),
            np.array([id(o) in modelled for o in lst]),
        )
        for key, lst in by_thread.items()
    }
    expected: dict[tuple, list[int]] = {}
    for k in gpu:
        r = rt.get(k["args"].get("correlation"))
        if r is None or (r["pid"], r["tid"]) not in arrays:
            continue
        lst = by_thread[(r["pid"], r["tid"])]
        starts, ends, is_mod = arrays[(r["pid"], r["tid"])]
        # every modelled op whose interval encloses the runtime call, by brute force
        idx = np.flatnonzero((starts <= r["ts"]) & (r["ts"] < ends) & is_mod)
        if idx.size == 0:
            continue
        top = min((lst[i] for i in idx), key=lambda o: (o["ts"], -(o["ts"] + o["dur"])))
        key = (top["name"], round(top["ts"] * 1000), top["tid"])
        acc = expected.setdefault(key, [0, 0])
        acc[0] += 1
        acc[1] += round(k["dur"] * 1000)
    t = _load(parts)
    c = op_costs(t)
    h = t.host
    origin = _origin(t, ev)
    got = {
        (r.op, int(h.at[r.host_row, "start_ns"]) - origin, int(h.at[r.host_row, "tid"])): [
            r.kernels,
            r.kernel_time_ns,
        ]
        for r in c.itertuples()
    }
    assert got == {k: v for k, v in expected.items()}
    assert len(got) > 100


def _origin(t: Trace, ev: list[dict]) -> int:
    """Offset between the reader's ns clock and the raw µs timestamps × 1000 (0 if none)."""
    first = min((e for e in ev if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    h = t.host[t.host["cat"] == "cpu_op"]
    return int(h["start_ns"].min()) - round(first["ts"] * 1000)


def test_fp32_gemms_on_tf32_tensor_core_kernels_use_the_tf32_peak() -> None:
    parts = REAL[0]
    t = _load(parts)
    c = op_costs(t)
    gemms = c[c["kind"] == "gemm"]
    assert set(gemms["precision"]) <= {"fp32", "tf32_tensor"}
    assert (gemms["precision"] == "tf32_tensor").any()
    assert (gemms["precision"] == "fp32").any()  # e.g. ampere_sgemm kernels


def test_real_trace_op_roofline_is_ranked_and_json_ready() -> None:
    t = _load(REAL[1])
    peaks = find_peaks(load_peaks(), t.gpu_device.name)
    assert peaks is not None and peaks.name == "A100 SXM4 80 GB"
    points = op_roofline(op_groups(op_costs(t)), peaks)
    host = [p for p in points if any("host memory" in m for m in p.missing)]
    assert host and all(p.bound is None for p in host)  # the trace has HtoD/DtoH copies
    assert all(p.bound in ("memory", "compute") for p in points if p.time_ns and p not in host)
    heads = [p.headroom_ns for p in points if p.headroom_ns is not None]
    assert heads == sorted(heads, reverse=True)
    json.dumps([p.to_dict() for p in points], allow_nan=False)


def test_a_copy_without_flops_is_memory_bound_at_its_bandwidth_fraction() -> None:
    import pandas as pd

    groups = pd.DataFrame(
        [
            (
                "aten::copy_",
                "[[250000],[250000],[]]",
                "[]",
                "",
                "elementwise",
                "fp32",
                True,
                "",
                1,
                0,
                2_000_000,
                1,
                1000,
                False,
            ),
            (
                "aten::copy_",
                "[[10],[10],[]]",
                "[]",
                "",
                "elementwise",
                "fp32",
                True,
                "",
                1,
                0,
                80,
                1,
                500,
                True,
            ),
        ],
        columns=list(OP_GROUP_COLUMNS),
    )
    a, b = op_roofline(groups, peaks_named(load_peaks(), "A100 SXM4 40 GB"))
    # 2 MB in 1 us = 2e12 B/s against 1555e9: above the datasheet roof -> 128.6 %: a model
    # error, without headroom (never counted as achieved)
    assert a.bound == "memory"
    assert a.pct_of_attainable == pytest.approx(100 * 2e12 / 1555e9)
    assert a.headroom_ns is None and a.model_error is not None
    assert b.bound is None and b.headroom_ns is None  # host copy: no DRAM roof


def test_trace_without_shapes_or_launches_gives_no_rows(tmp_path: Path) -> None:
    meta = TraceMeta(rank=0, source_format="synthetic")
    assert op_costs(make_trace(meta)).empty


def test_a_group_of_calls_keeps_its_first_estimate_note() -> None:
    from analyzers.op_models.attribution import OP_COST_COLUMNS

    def call(op: str, note: str, t: int) -> dict[str, object]:
        return {
            "host_row": t, "op": op, "input_dims": "[[1]]", "input_types": "",
            "concrete_inputs": "", "kind": "gemm", "precision": "fp32", "exact": not note,
            "note": note, "flops": 2.0, "bytes": 4.0, "kernels": 1, "kernel_time_ns": t,
            "host_copy": False,
        }  # fmt: skip

    rows = [
        call("a", "", 1), call("a", "first", 2), call("a", "second", 3),
        call("b", "", 10), call("b", "", 20),
        call("c", "only", 5),
    ]  # fmt: skip
    costs = pd.DataFrame(rows, columns=list(OP_COST_COLUMNS))
    costs.attrs["gpu_time_ns"] = 100
    groups = op_groups(costs).set_index("op")
    assert groups["note"].to_dict() == {"b": "", "a": "first", "c": "only"}
    assert groups["calls"].to_dict() == {"b": 2, "a": 3, "c": 1}
    assert list(groups.index) == ["b", "a", "c"]  # longest kernel time first
    assert groups["note"].dtype == costs["note"].dtype
