"""``compare --by category`` and graph replays in ``compare --by op`` (docs/compare.md §3,
docs/inference.md "Compare").

Hand cases check the view's entries and the split of ``other`` into GPU work in no entry
(``unattributed_ns``) and the rest; the shared serving pairs check that with their capture
traces less than 5 % of the change is GPU work without an op:

* SGLang Qwen3-8B decode (its decode graph replayed once, capture beside it) → SGLang
  prefill (eager);
* SGLang decode (capture) → vLLM gpt-oss mixed prefill/decode (25 piecewise graph replays,
  96 % of its GPU time; capture beside it) — two graph-replayed sides;

and that without the captures the vLLM pair leaves most of its replayed time unattributed.
"""

from __future__ import annotations

import pytest

from analyzers.compare import compare
from analyzers.compare_sides import side_from_traces
from analyzers.serving.graphs import Capture
from collectors.kineto import read_kineto
from tests.support.serving_builders import Call, Kernel, Op, captured_graph, launched, serving_trace
from tests.support.serving_data import CAPTURED, SERVING, inference


def _replay(kernel: str, dur: float) -> object:
    return serving_trace(
        [Call("hipGraphLaunch", 1000, 1001, 900), *launched("aten::add", "add_K", 1002, 7)],
        [Kernel(kernel, 1010, 1010 + dur, 900), Kernel("vectorized_add", 1100, 1105, 7)],
    )


CAP = serving_trace(
    captured_graph(0, launched("aten::mm", "gemm_A", 10, 101, "[[4,8],[8,16]]"), 100)
)


def test_category_view_entries_share_out_the_gpu_work_change_exactly():
    base = side_from_traces([_replay("gemm_A", 10)], "B")
    cur = side_from_traces([_replay("gemm_A", 30)], "C")
    v = compare(base, cur).view("category")
    assert v.available
    got = {e.key: e.delta_ns for e in v.entries}
    assert got == {"GEMM": 20_000, "elementwise": 0}
    assert v.work_change_ns == 20_000 and v.unattributed_ns == 0


def test_op_view_gives_graph_replays_their_capture_op():
    caps = {0: (Capture(CAP),)}
    base = side_from_traces([_replay("gemm_A", 10)], "B", captures=caps)
    cur = side_from_traces([_replay("gemm_A", 30)], "C", captures=caps)
    v = compare(base, cur).view("op")
    mm = next(e for e in v.entries if e.key == "aten::mm [[4,8],[8,16]]")
    assert (mm.status, mm.base_count, mm.delta_ns) == ("matched", 1, 20_000)
    assert v.unattributed_ns == 0
    # without the capture the replayed GEMM is GPU work in no op entry
    blind = compare(
        side_from_traces([_replay("gemm_A", 10)], "B"),
        side_from_traces([_replay("gemm_A", 30)], "C"),
    ).view("op")
    assert all(e.key != "aten::mm [[4,8],[8,16]]" for e in blind.entries)
    assert blind.unattributed_ns == 20_000


def test_a_graph_launch_inside_an_op_is_counted_once_for_its_capture_op():
    caps = {0: (Capture(CAP),)}
    t = serving_trace(
        [Op("runner::forward", 990, 1010), Call("hipGraphLaunch", 1000, 1001, 900)],
        [Kernel("gemm_A", 1010, 1020, 900)],
    )
    side = side_from_traces([t], "S", captures=caps)
    ops = side.ranks[0].events["op"]
    assert ops["key"].tolist() == ["aten::mm [[4,8],[8,16]]"] and ops["dur_ns"].tolist() == [10_000]


def _side(rel: str, with_capture: bool, label: str):
    t = read_kineto(inference(rel))
    caps = {}
    if with_capture:
        cap_rel = next(c for e, c in CAPTURED.values() if e == rel)
        caps = {t.rank: (Capture(read_kineto(inference(cap_rel))),)}
    return side_from_traces([t], label, captures=caps)


PAIRS = {
    "sglang decode -> sglang prefill": (SERVING["sglang_decode"], SERVING["sglang_prefilldecode"]),
    "sglang decode -> vllm mixed": (SERVING["sglang_decode"], SERVING["vllm"]),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_shared_serving_pairs_leave_under_5_percent_of_the_change_without_an_op(pair):
    base_rel, cur_rel = PAIRS[pair]
    base = _side(base_rel, True, "B")
    cur = _side(cur_rel, cur_rel in {e for e, _ in CAPTURED.values()}, "C")
    cmp = compare(base, cur)
    op = cmp.view("op")
    assert cmp.total_change_ns != 0 and op.unattributed_ns is not None
    assert abs(op.unattributed_ns) < 0.05 * abs(cmp.total_change_ns)
    # the category view accounts for every GPU work event: nothing unattributed
    assert cmp.view("category").unattributed_ns == 0
    # the decode graph's GEMMs are op entries that left (BASE only) or changed
    gemms = [e for e in op.entries if e.key.startswith("aten::mm") and e.base_count > 0]
    assert sum(e.base_total_ns for e in gemms) > 5_000_000


def test_without_captures_the_replayed_vllm_time_is_gpu_work_in_no_op():
    base = _side(SERVING["sglang_decode"], False, "B")
    cur = _side(SERVING["vllm"], False, "C")
    cmp = compare(base, cur)
    op = cmp.view("op")
    assert op.unattributed_ns is not None
    assert abs(op.unattributed_ns) > 0.3 * abs(cmp.total_change_ns)
