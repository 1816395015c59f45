"""Serving phases: steps from the frameworks' annotations, their GPU work and per-phase rates.

The shared SGLang and vLLM traces are checked against a truth computed here from the raw JSON
(decoded with msgspec, times as exact decimals): the annotation text parsed by hand, the GPU
rows found through the runtime calls that start inside the step.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analyzers.serving.ops import kernel_ops
from analyzers.serving.phases import PHASE_RULES, PhaseRule, phase_summary, serving_steps
from collectors.kineto import read_kineto
from tests.support.raw_kineto import events
from tests.support.serving_builders import Call, Kernel, Range, launched, serving_trace
from tests.support.serving_data import SERVING, inference

EXECUTE_MIXED = "execute_40_context_1(sq32sk32sqsq1024sqsk1024)_generation_8(sq8sk800sqsq8sqsk800)"


def _trace():
    host = [
        *launched("aten::mm", "Cijk_a", 10, 1),  # prefill step [0, 100)
        *launched("aten::mm", "Cijk_b", 110, 2),  # decode step [100, 200)
        *launched("aten::mm", "Cijk_c", 210, 3),  # mixed step [200, 300)
        *launched("aten::mm", "Cijk_d", 400, 4),  # no step
        Call("hipGraphLaunch", 150, 151, 5),  # a graph replay in the decode step
    ]
    gpu = [
        Kernel("Cijk_a", 20, 50, 1),
        Kernel("Cijk_b", 160, 170, 2),
        Kernel("replayed_1", 170, 175, 5),
        Kernel("replayed_2", 180, 190, 5),
        Kernel("Cijk_c", 500, 540, 3),  # the GPU runs behind: still the mixed step's
        Kernel("Cijk_d", 600, 610, 4),
    ]
    ranges = [
        Range("step[EXTEND bs=2 toks=64]", 0, 100),
        Range("step[DECODE bs=4]", 100, 200),
        Range(EXECUTE_MIXED, 200, 300),
        Range("step[MIXED bs=9]", 205, 290),  # nested: same step, SGLang fields merged
    ]
    return serving_trace(host, gpu, ranges)


def test_steps_classified_and_fields_merged_from_nested_annotations():
    t = _trace()
    steps, owner = serving_steps(t, kernel_ops(t))
    assert steps["phase"].tolist() == ["prefill", "decode", "mixed"]
    assert steps["framework"].tolist() == ["SGLang step", "SGLang step", "vLLM/SGLang execute"]
    assert steps[["batch_size", "tokens"]].values.tolist() == [[2, 64], [4, 4], [9, 40]]
    mixed = steps.iloc[2]
    assert mixed["name"] == EXECUTE_MIXED
    assert [mixed[c] for c in ("prefill_tokens", "decode_tokens", "decode_kv_tokens")] == [
        32,
        8,
        800,
    ]
    assert steps.iloc[0]["decode_tokens"] == -1  # an EXTEND annotation does not say
    assert owner.tolist() == [0, 1, 1, 1, 2, -1]
    assert steps[["kernels", "kernel_ns", "gpu_span_ns", "busy_ns"]].values.tolist() == [
        [1, 30_000, 30_000, 30_000],
        [3, 25_000, 30_000, 25_000],
        [1, 40_000, 40_000, 40_000],
    ]


def test_phase_summary_rates_and_time_per_output_token():
    t = _trace()
    steps, _ = serving_steps(t, kernel_ops(t))
    steps["model_flops"] = [10, 20, 30]  # an extra per-step column (MFU's) is summed
    s = phase_summary(steps).set_index("phase")
    assert s.index.tolist() == ["prefill", "decode", "mixed"]
    assert s.loc["prefill", "tokens_per_s"] == 64 * 1e9 / 30_000
    assert pd.isna(s.loc["prefill", "output_tokens_per_s"])  # no step carries decode tokens
    assert pd.isna(s.loc["prefill", "time_per_output_token_ns"])
    assert s.loc["decode", "output_tokens_per_s"] == 4 * 1e9 / 25_000
    assert s.loc["decode", "time_per_output_token_ns"] == 25_000
    assert s.loc["mixed", "tokens_per_s"] == 40 * 1e9 / 40_000
    assert s.loc["mixed", "decode_tokens"] == 8
    assert s["model_flops"].tolist() == [10, 20, 30]


def test_rule_table_is_extended_by_the_user():
    t = serving_trace(
        launched("aten::mm", "Cijk_a", 10, 1),
        [Kernel("Cijk_a", 20, 30, 1)],
        [Range("my_server/decode_b16", 0, 100)],
    )
    assert serving_steps(t, kernel_ops(t))[0].empty
    rule = PhaseRule(
        "mine", r"my_server/(?P<mode>\w+)_b(?P<batch_size>\d+)", modes={"decode": "decode"}
    )
    steps, _ = serving_steps(t, kernel_ops(t), (*PHASE_RULES, rule))
    assert steps[["framework", "phase", "batch_size", "decode_tokens"]].values.tolist() == [
        ["mine", "decode", 16, 16]
    ]


def test_gpu_side_annotations_own_the_rows_that_start_in_them():
    t = serving_trace(
        launched("aten::mm", "Cijk_a", 10, 1),
        [Kernel("Cijk_a", 520, 530, 1), Kernel("Cijk_b", 540, 545, -1)],
        [Range("step[DECODE bs=2]", 500, 550, kind="gpu_user")],
    )
    steps, owner = serving_steps(t, kernel_ops(t))
    assert steps[["clock", "kernels", "kernel_ns", "busy_ns"]].values.tolist() == [
        ["gpu", 2, 15_000, 15_000]
    ]
    assert owner.tolist() == [0, 0]


def test_a_phase_rule_needs_a_valid_pattern():
    with pytest.raises(re.error):
        PhaseRule("bad", "step[")


# --- shared traces: truth from the raw JSON ----------------------------------------------------


def _raw_truth(path):
    """The step(s) of a raw trace: the outermost serving annotation, its fields parsed by hand
    and the GPU rows launched inside it."""
    evs = events(path)
    ann = [e for e in evs if e.get("cat") == "user_annotation"]
    execute = [e for e in ann if e["name"].startswith("execute_")]
    sgl = [e for e in ann if e["name"].startswith("step[")]
    assert len(execute) == 1 and len(sgl) <= 1
    outer = execute[0]
    nums = [int(x) for x in re.findall(r"\d+", outer["name"])]
    n, ctx, sq_c, sk_c, _, _, gen, sq_g, sk_g, _, _ = nums
    if sgl:
        inner = sgl[0]
        assert outer["ts_ns"] <= inner["ts_ns"] and inner["end_ns"] <= outer["end_ns"]
        word, *rest = inner["name"][len("step[") : -1].split(" ")
        kv = dict(x.split("=") for x in rest)
        phase = {"DECODE": "decode", "EXTEND": "prefill"}[word]
        batch = int(kv["bs"])
        assert int(kv.get("toks", n)) == n
    else:
        batch = ctx + gen
        phase = "mixed" if ctx and gen else ("prefill" if ctx else "decode")
    launches = {
        e["args"]["correlation"]
        for e in evs
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and "correlation" in (e.get("args") or {})
        and outer["ts_ns"] <= e["ts_ns"] < outer["end_ns"]
    }
    gpu = sorted(
        (e["ts_ns"], e["end_ns"])
        for e in evs
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e["args"].get("correlation") in launches
    )
    busy, hi = 0, None
    for s, e in gpu:
        if hi is None or s > hi:
            busy += e - s
            hi = e
        elif e > hi:
            busy += e - hi
            hi = e
    return {
        "phase": phase,
        "batch_size": batch,
        "tokens": n,
        "prefill_requests": ctx,
        "prefill_tokens": sq_c,
        "prefill_kv_tokens": sk_c,
        "decode_requests": gen,
        "decode_tokens": sq_g,
        "decode_kv_tokens": sk_g,
        "start_ns": outer["ts_ns"],
        "end_ns": outer["end_ns"],
        "kernels": len(gpu),
        "kernel_ns": sum(e - s for s, e in gpu),
        "gpu_span_ns": max(e for _, e in gpu) - min(s for s, _ in gpu),
        "busy_ns": busy,
    }


@pytest.mark.parametrize("key", sorted(SERVING))
def test_shared_serving_step_matches_its_annotation_and_raw_gpu_rows(key):
    path = inference(SERVING[key])
    want = _raw_truth(path)
    t = read_kineto(path)
    steps, _ = serving_steps(t, kernel_ops(t))
    assert len(steps) == 1
    got = steps.iloc[0]
    assert {k: got[k] for k in want} == want
    s = phase_summary(steps).iloc[0]
    assert s["phase"] == want["phase"]
    assert s["tokens_per_s"] == want["tokens"] * 1e9 / want["busy_ns"]
    if want["decode_tokens"]:
        assert s["output_tokens_per_s"] == want["decode_tokens"] * 1e9 / want["busy_ns"]
        assert s["time_per_output_token_ns"] == want["busy_ns"]
    else:
        assert pd.isna(s["time_per_output_token_ns"])


def test_shared_traces_cover_prefill_decode_and_mixed():
    phases = set()
    for rel in SERVING.values():
        t = read_kineto(inference(rel))
        phases |= set(serving_steps(t, kernel_ops(t))[0]["phase"])
    assert phases == {"prefill", "decode", "mixed"}
