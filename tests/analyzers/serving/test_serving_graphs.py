"""Graph attribution: replayed kernels back to their capture-time ops (docs/inference.md).

Hand-built captures check each alignment method and note; the shared vLLM, SGLang and xDiT
traces check coverage, and every attributed kernel against the capture trace's own links
(``args.kernel`` and ``External id`` of the launch calls, decoded from the raw JSON).
"""

from __future__ import annotations

import dataclasses

import msgspec
import pandas as pd
import pytest

from analyzers.serving.capture import capture_nodes, capture_regions, is_capture_trace
from analyzers.serving.graphs import Capture, attribute_graphs
from analyzers.serving.graphs import launch_kernel_names as launch_kernel_names_of_model
from analyzers.serving.ops import kernel_ops
from analyzers.serving.phases import step_ranges
from collectors.kineto import read_kineto
from tests.support.raw_kineto import capture_links, has_stream_capture, launch_kernel_names
from tests.support.serving_builders import (
    Call,
    Kernel,
    Op,
    Range,
    captured_graph,
    launched,
    serving_trace,
)
from tests.support.serving_data import CAPTURED, inference, tracelens_root


def _capture() -> tuple:
    """Two captured graphs; one launch inside the second ran (it has a GPU row): not a node."""
    host = [
        *captured_graph(
            0,
            [
                *launched("aten::mm", "gemm_A", 10, 101, "[[4,8],[8,16]]"),
                *launched("aiter::rmsnorm", "rmsnorm_K", 20, 102),
            ],
            100,
        ),
        *captured_graph(
            200,
            [
                *launched("vllm::moe_forward", "matmul_ogs_X", 210, 201),
                *launched("aten::add", "add_k", 220, 202),
                Op("aten::copy_", 230, 232),
                Call("hipMemcpyAsync", 230.5, 231.5, 203),
                *launched("aten::fill_", "fill_k", 240, 204),
            ],
            300,
        ),
    ]
    names = {101: "gemm_A", 102: "rmsnorm_K", 201: "matmul_ogs_X", 202: "add_k", 204: "fill_k"}
    return serving_trace(host, [Kernel("fill_k", 250, 251, 204)]), names


def _execution(g1: list[tuple[str, str]]) -> tuple:
    """Graph 0, graph 1 (kernels *g1*: (name, kind)), graph 0 again, an empty replay, and one
    eager launch."""
    host = [
        Call("hipGraphLaunch", 1000, 1001, 900),
        Call("hipGraphLaunch", 1100, 1101, 901),
        Call("hipGraphLaunch", 1200, 1201, 902),
        Call("hipGraphLaunch", 1250, 1251, 904),
        *launched("aten::mul", "mul_k", 1300, 903),
    ]
    gpu = [
        Kernel("gemm_A", 1010, 1015, 900),
        Kernel("rmsnorm_K", 1015, 1017, 900),
        *[Kernel(n, 1110 + 3 * i, 1112 + 3 * i, 901, kind=k) for i, (n, k) in enumerate(g1)],
        Kernel("gemm_A", 1210, 1215, 902),
        Kernel("rmsnorm_K", 1215, 1217, 902),
        Kernel("mul_k", 1310, 1311, 903),
    ]
    return serving_trace(host, gpu)


G1 = [("matmul_ogs_X", "kernel"), ("add_k", "kernel"), ("Memcpy DtoD", "memcpy")]


def _ops(res, trace) -> list:
    k = kernel_ops(trace, res)
    return list(zip(k["name"], k["op"], k["via"], strict=True))


def test_capture_trace_recognised_and_its_nodes_exclude_work_that_ran():
    cap, _ = _capture()
    assert is_capture_trace(cap)
    assert not is_capture_trace(_execution(G1))
    regions = capture_regions(cap)
    assert regions[["start_ns", "end_ns"]].values.tolist() == [[1000, 100000], [201000, 300000]]
    nodes = capture_nodes(cap)
    assert nodes.groupby("region")["correlation"].apply(list).tolist() == [
        [101, 102],
        [201, 202, 203],
    ]
    assert nodes["kind"].tolist() == ["kernel", "kernel", "kernel", "kernel", "memcpy"]


def test_replays_attributed_by_position_and_a_reused_graph_wraps_around():
    cap, _ = _capture()
    ex = _execution(G1)
    res = attribute_graphs(ex, [cap])
    assert res.method == "capture"
    assert res.launches["region"].tolist() == [0, 1, 0, -1]
    assert res.launches["match"].tolist() == ["position", "position", "position", "no-kernels"]
    assert res.coverage == 1.0
    assert _ops(res, ex) == [
        ("gemm_A", "aten::mm", "capture"),
        ("rmsnorm_K", "aiter::rmsnorm", "capture"),
        ("matmul_ogs_X", "vllm::moe_forward", "capture"),
        ("add_k", "aten::add", "capture"),
        ("Memcpy DtoD", "aten::copy_", "capture"),
        ("gemm_A", "aten::mm", "capture"),
        ("rmsnorm_K", "aiter::rmsnorm", "capture"),
        ("mul_k", "aten::mul", "op"),
    ]
    assert kernel_ops(ex, res)["input_dims"].iloc[0] == "[[4,8],[8,16]]"
    assert res.notes == ("1 graph launches have no recorded GPU work (replay not recorded)",)


def test_reordered_replay_needs_kernel_names_and_is_aligned_by_name_group():
    cap, names = _capture()
    reordered = [G1[1], G1[0], G1[2]]
    ex = _execution(reordered)
    blind = attribute_graphs(ex, [cap])
    # by position alone the reordered kernels take each other's ops: that is why names matter
    assert _ops(blind, ex)[2][:2] == ("add_k", "vllm::moe_forward")
    res = attribute_graphs(ex, [Capture(cap, names)])
    assert res.launches["match"].tolist()[1] == "name-group"
    assert _ops(res, ex)[2:5] == [
        ("add_k", "aten::add", "capture"),
        ("matmul_ogs_X", "vllm::moe_forward", "capture"),
        ("Memcpy DtoD", "aten::copy_", "capture"),
    ]


def test_replay_missing_a_kernel_is_aligned_by_name_scan_and_noted():
    cap, names = _capture()
    ex = _execution([G1[0], G1[2]])
    blind = attribute_graphs(ex, [cap])
    assert blind.launches["match"].tolist()[1] == "count-mismatch"
    assert any("names of the capture's launch calls are unknown" in n for n in blind.notes)
    res = attribute_graphs(ex, [Capture(cap, names)])
    assert res.launches["match"].tolist()[1] == "name-scan"
    assert _ops(res, ex)[2:4] == [
        ("matmul_ogs_X", "vllm::moe_forward", "capture"),
        ("Memcpy DtoD", "aten::copy_", "capture"),
    ]
    assert res.coverage == 1.0
    assert (
        "1 graph launches recorded fewer kernels than their captured graph has nodes (1 missing)"
        in res.notes
    )


def test_without_capture_kernels_are_grouped_per_graph_by_kernel_name_only():
    ex = _execution(G1)
    res = attribute_graphs(ex)
    assert res.method == "kernel-name"
    assert res.launches["graph"].tolist()[:3] == [0, 1, 0]
    assert res.launches["kernels"].tolist() == [2, 3, 2, 0]
    assert res.coverage == 0.0
    assert "categorised by kernel name only" in res.notes[0]
    assert [v for _, _, v in _ops(res, ex)] == ["graph"] * 7 + ["op"]


# --- shared traces ----------------------------------------------------------------------------


def _check_against_capture_links(res, ex, cap_path) -> int:
    """Every attributed kernel: its name is the ``args.kernel`` of the capture launch it was
    given, and its op (and input dims) are those of the ``cpu_op`` with that launch's External
    id.  Returns the number checked."""
    links = capture_links(cap_path)
    k = res.kernels[res.kernels["op_row"] >= 0]
    names = ex.gpu["name"].astype(object).to_numpy()
    kinds = ex.gpu["kind"].astype(object).to_numpy()
    checked = 0
    for r in k.itertuples(index=False):
        if kinds[r.gpu_row] != "kernel":
            continue
        kernel, op, dims = links[r.capture_correlation]
        assert names[r.gpu_row] == kernel
        assert r.op == op
        assert msgspec.json.decode(r.input_dims) == dims
        checked += 1
    return checked


@pytest.mark.parametrize("key", ["vllm", "sglang_decode"])
def test_shared_replay_attributed_to_capture_ops_by_position(key):
    ex_path, cap_path = (inference(p) for p in CAPTURED[key])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    res = attribute_graphs(ex, [cap])
    assert res.graph_kernel_ns > 0
    assert res.coverage is not None and res.coverage >= 0.99
    assert (res.launches["match"] == "position").all()
    assert _check_against_capture_links(res, ex, cap_path) == int(
        (res.kernels["op_row"] >= 0).sum()
    )


def test_vllm_piecewise_every_one_of_its_25_graph_replays_fully_attributed():
    ex_path, cap_path = (inference(p) for p in CAPTURED["vllm"])
    res = attribute_graphs(read_kineto(ex_path), [read_kineto(cap_path)])
    assert len(res.launches) == 25
    assert res.launches["region"].tolist() == list(range(25))
    assert res.attributed_ns == res.graph_kernel_ns
    assert res.notes == ()


def test_xdit_replays_missing_a_kernel_need_the_capture_kernel_names():
    ex_path, cap_path = (inference(p) for p in CAPTURED["xdit"])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    if "launch_kernel" not in cap.host.columns:  # the reader does not give the names yet
        blind = attribute_graphs(ex, [cap])
        assert blind.coverage == 0.0
        assert set(blind.launches["match"]) == {"count-mismatch"}
    res = attribute_graphs(ex, [Capture(cap, launch_kernel_names(cap_path))])
    assert res.coverage is not None and res.coverage >= 0.99
    assert (res.launches["nodes"] - res.launches["kernels"]).tolist() == [1, 1, 1, 1]
    assert _check_against_capture_links(res, ex, cap_path) > 6000


def test_every_shared_trace_is_a_capture_trace_exactly_when_its_raw_json_has_a_capture():
    root = tracelens_root()
    paths = sorted(root.rglob("*.json.gz"))
    assert len(paths) >= 15
    seen = 0
    for p in paths:
        raw = has_stream_capture(p)
        assert is_capture_trace(read_kineto(p)) == raw, p
        seen += raw
    assert seen == 3


def _sized_capture(dims: str) -> object:
    return serving_trace(captured_graph(0, launched("aten::mm", "gemm_A", 10, 101, dims), 100))


def _step(tokens: int) -> str:
    return (
        f"execute_{tokens}_context_0(sq0sk0sqsq0sqsk0)_generation_{tokens}(sq{tokens}sk9sqsq1sqsk9)"
    )


@pytest.mark.parametrize(("tokens", "want"), [(20, "[[32,4]]"), (8, "[[8,4]]"), (40, "[[8,4]]")])
def test_capture_chosen_by_the_steps_batch_size(tokens, want):
    caps = [
        Capture(_sized_capture("[[8,4]]"), batch_size=8, mode="FULL"),
        Capture(_sized_capture("[[32,4]]"), batch_size=32, mode="FULL"),
    ]
    ex = serving_trace(
        [Call("hipGraphLaunch", 1000, 1001, 900)],
        [Kernel("gemm_A", 1010, 1015, 900)],
        [Range(_step(tokens), 990, 1100)],
    )
    assert attribute_graphs(ex, caps).kernels["input_dims"].tolist() == ["[[8,4]]"]
    # the smallest captured batch >= the step's tokens; none that large: any capture
    got = attribute_graphs(ex, caps, step_ranges(ex))
    assert got.kernels["input_dims"].tolist() == [want]


def test_capture_mode_follows_the_number_of_graph_launches_in_the_step():
    caps = [
        Capture(_sized_capture("piecewise"), batch_size=32, mode="PIECEWISE"),
        Capture(_sized_capture("full"), batch_size=32, mode="FULL"),
    ]
    one = serving_trace(
        [Call("hipGraphLaunch", 1000, 1001, 900)],
        [Kernel("gemm_A", 1010, 1015, 900)],
        [Range(_step(32), 990, 1100)],
    )
    assert attribute_graphs(one, caps, step_ranges(one)).kernels["input_dims"].tolist() == ["full"]
    two = serving_trace(
        [Call("hipGraphLaunch", 1000, 1001, 900), Call("hipGraphLaunch", 1020, 1021, 901)],
        [Kernel("gemm_A", 1010, 1015, 900), Kernel("gemm_A", 1030, 1035, 901)],
        [Range(_step(32), 990, 1100)],
    )
    got = attribute_graphs(two, caps, step_ranges(two)).kernels["input_dims"].tolist()
    assert got == ["piecewise", "piecewise"]


def test_the_launch_kernel_column_of_the_model_gives_the_capture_kernel_names():
    """When the reader fills the host column ``launch_kernel`` (Kineto ``args.kernel``), a plain
    ``Capture(trace)`` aligns by name, as with the names passed explicitly."""
    ex_path, cap_path = (inference(p) for p in CAPTURED["xdit"])
    ex, cap = read_kineto(ex_path), read_kineto(cap_path)
    names = launch_kernel_names(cap_path)
    corr = cap.host["correlation"].tolist()
    column = [names.get(int(c)) if c >= 0 else None for c in corr]
    with_column = dataclasses.replace(cap, host=cap.host.assign(launch_kernel=column))
    assert launch_kernel_names_of_model(with_column) == {
        c: n for c, n in names.items() if c in set(corr)
    }
    res = attribute_graphs(ex, [with_column])
    want = attribute_graphs(ex, [Capture(cap, names)])
    assert res.coverage == want.coverage and res.coverage is not None and res.coverage >= 0.99
    assert res.kernels["op_row"].tolist() == want.kernels["op_row"].tolist()
    # an empty column (no args.kernel recorded) is no names: position alignment, as without it
    blank = dataclasses.replace(cap, host=cap.host.assign(launch_kernel=None))
    assert launch_kernel_names_of_model(blank) is None
    assert set(attribute_graphs(ex, [blank]).launches["match"]) == {"count-mismatch"}


def test_kernel_ops_are_not_kept_and_each_caller_gets_its_own_table():
    from analyzers import memo
    from analyzers.serving.categories import categorize
    from analyzers.serving.ops import categorized_kernel_ops

    cap, _ = _capture()
    ex = _execution(G1)
    res = attribute_graphs(ex, [cap])
    plain = kernel_ops(ex)
    kept = memo._slots.get(id(ex), {}).values()  # as long as the GPU work: not memoised
    assert not any(isinstance(v, pd.DataFrame) and "via" in v for v in kept)
    before = plain.copy()
    attributed = categorized_kernel_ops(ex, res)  # patches its own columns only
    assert attributed["via"].tolist().count("capture") == 7
    assert attributed["category"].tolist() == categorize(kernel_ops(ex, res)).tolist()
    plain["via"] = "changed by a caller"
    again = kernel_ops(ex)
    pd.testing.assert_frame_equal(again, before)
    assert not again["via"].eq("capture").any()
    mine = categorized_kernel_ops(ex)
    mine["category"] = "changed"
    assert categorized_kernel_ops(ex)["category"].tolist() == categorize(before).tolist()


def test_no_gpu_work_has_no_categories():
    from analyzers.serving.categories import kernel_category

    assert kernel_category([], [], []).tolist() == []
