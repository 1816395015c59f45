"""The ``serving`` JSON section and its console tables, on every shared trace and hand cases."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from analyzers.serving.graphs import Capture
from analyzers.serving.ops import range_owner
from collectors.kineto import read_kineto
from reports.serving_console import print_serving_section, serving_tables
from reports.serving_section import serving_section
from tests.support.builders import trace_us
from tests.support.raw_kineto import events
from tests.support.serving_builders import Call, Kernel, Op, Range, serving_trace
from tests.support.serving_data import CAPTURED, inference, tracelens_root

OPTS = AnalysisOptions()
NONE = AnalysisInputs()


def _check_sums(s: dict) -> None:
    total = s["gpu_work_ns"]
    assert sum(r["time_ns"] for r in s["categories"]) == total
    assert sum(s["attribution_ns_by_source"].values()) == total
    assert sum(s["graphs"][k] for k in ("graph_kernel_ns",)) <= total
    for step in s["steps"]:
        assert sum(r["time_ns"] for r in step["categories"]) == step["kernel_ns"]


def test_every_shared_trace_gives_strict_json_whose_parts_add_up():
    paths = sorted(tracelens_root().rglob("*.json.gz"))
    assert len(paths) >= 15
    for p in paths:
        s = serving_section(read_kineto(p), OPTS, NONE)
        json.dumps(s, allow_nan=False)
        _check_sums(s)
        assert s["capture_trace"] == ("capture_traces" in p.parts), p


@pytest.mark.parametrize("key", sorted(CAPTURED))
def test_captures_given_per_rank_attribute_the_replays(key):
    ex_path, cap_path = (inference(p) for p in CAPTURED[key])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    s = serving_section(ex, OPTS, AnalysisInputs(graph_captures={ex.rank: (Capture(cap),)}))
    json.dumps(s, allow_nan=False)
    _check_sums(s)
    g = s["graphs"]
    assert g["method"] == "capture" and g["captures"] == 1
    assert s["attribution_ns_by_source"]["capture"] == g["attributed_ns"]
    if key == "xdit" and "launch_kernel" not in cap.host.columns:  # needs the kernel names
        assert g["coverage"] == 0.0 and any("count differs" in n for n in s["notes"])
    else:
        assert g["coverage"] == 1.0 and s["attribution_ns_by_source"]["graph"] == 0
    other_rank = serving_section(
        ex, OPTS, AnalysisInputs(graph_captures={ex.rank + 1: (Capture(cap),)})
    )
    assert other_rank["graphs"]["method"] == "kernel-name"
    assert any("by kernel name only" in n for n in other_rank["notes"])


def test_capture_trace_alone_is_recognised_with_its_graph_count():
    _, cap_rel = CAPTURED["vllm"]
    path = inference(cap_rel)
    s = serving_section(read_kineto(path), OPTS, NONE)
    begins = sum(
        e.get("cat") == "cuda_runtime" and "StreamBeginCapture" in e["name"] for e in events(path)
    )
    assert s["capture_trace"] is True and s["capture"]["graphs"] == begins == 25
    assert s["notes"][-1].startswith("capture trace: 25 graphs captured")


def _moe_trace():
    host = [
        Op("[bold]evil::moe[/bold]", 0, 50),
        Call("hipLaunchKernel", 1, 2, 1),
        Call("hipLaunchKernel", 3, 4, 2),
    ]
    gpu = [Kernel("_matmul_ogs_x", 100, 140, 1), Kernel("[red]k[/red]", 140, 150, 2)]
    return serving_trace(host, gpu, [Range("step[EXTEND bs=3 toks=99]", 0, 60)])


def test_unknown_values_are_null_and_phases_carry_categories():
    s = serving_section(_moe_trace(), OPTS, NONE)
    json.dumps(s, allow_nan=False)
    (p,) = s["phases"]
    assert p["phase"] == "prefill" and p["decode_tokens"] is None
    assert p["time_per_output_token_ns"] is None and p["output_tokens_per_s"] is None
    assert p["tokens_per_s"] == 99 * 1e9 / 50_000
    assert [(r["category"], r["time_ns"]) for r in p["categories"]] == [("MoE", 50_000)]
    assert s["steps"][0]["decode_tokens"] is None and s["steps"][0]["batch_size"] == 3
    assert s["moe"]["layers"][0]["layer"] == "[bold]evil::moe[/bold]"


def test_console_prints_every_table_and_names_as_plain_text():
    rank = {"rank": 0, "serving": serving_section(_moe_trace(), OPTS, NONE)}
    assert len(serving_tables(rank)) == 4  # categories, phases, MFU, MoE (no graph launches)
    c = Console(record=True, width=220)
    print_serving_section(rank, c)
    out = c.export_text()
    for title in ("GPU time by op category", "serving phases", "model FLOPs", "MoE layers"):
        assert title in out
    assert "– (no FLOP model)" in out  # MFU without a modelled op
    assert "[bold]evil::moe[/bold]" in out


def test_console_shows_graph_replays_and_the_no_capture_note():
    ex_path, _ = CAPTURED["vllm"]
    rank = {"rank": 0, "serving": serving_section(read_kineto(inference(ex_path)), OPTS, NONE)}
    c = Console(record=True, width=220)
    print_serving_section(rank, c)
    out = c.export_text()
    assert "graph replays (no capture trace: by kernel name only)" in out
    assert "note: 25 graph launches, no capture trace" in out


def test_profiler_steps_own_the_work_they_launched_however_late_it_runs():
    t = trace_us(
        gpu=[("Cijk_a", 7, 50, 150, 1), ("void at::native::add", 7, 150, 160, 2)],
        host=[
            ("aten::mm", "cpu_op", 10, 20, 1, -1),
            ("hipLaunchKernel", "cuda_runtime", 11, 12, 1, 1),
            ("aten::add", "cpu_op", 110, 120, 1, -1),
            ("hipLaunchKernel", "cuda_runtime", 111, 112, 1, 2),
        ],
        steps=[(1, 0, 100), (2, 100, 200)],
    )
    s = serving_section(t, OPTS, NONE)
    for p in s["profiler_steps"]:
        assert p.pop("mfu")["gpu_ns"] == sum(r["time_ns"] for r in p["categories"])
    assert s["profiler_steps"] == [
        {
            "step": 1,
            "categories": [{"category": "GEMM", "kernels": 1, "time_ns": 100_000, "share": 1.0}],
        },
        {
            "step": 2,
            "categories": [
                {"category": "elementwise", "kernels": 1, "time_ns": 10_000, "share": 1.0}
            ],
        },
    ]


def test_overlapping_ranges_give_a_row_to_the_one_that_starts_last():
    got = range_owner([-1, 5, 15, 25, 35], [0, 10, 30], [20, 20, 40])
    assert got.tolist() == [-1, 0, 1, -1, 2]
