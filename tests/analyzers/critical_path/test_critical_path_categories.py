"""The GPU rows' op categories the critical path reads (:func:`analyzers.critical_path.sources.
gpu_category_codes`, from the rows' codes) equal the definition they replaced: the ``category``
column of :func:`analyzers.serving.ops.categorized_kernel_ops`, factorized in row order, and
``other`` for the rows that are not GPU work."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analyzers.critical_path import rank_graph
from analyzers.critical_path.sources import OTHER, gpu_category_codes
from analyzers.critical_path.sources import launch_rows as sources_launch_rows
from analyzers.serving.ops import categorized_kernel_ops
from collectors.kineto import read_kineto
from collectors.load import load_traces
from collectors.model import Trace
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES
from tests.support.serving_builders import Call, Kernel, Op, serving_trace
from tests.support.serving_data import SERVING, inference


def _reference(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The categories from the categorised kernel-op table (the replaced code)."""
    kops = categorized_kernel_ops(trace)
    codes, uniques = pd.factorize(np.asarray(kops["category"].to_numpy(dtype=object)))
    cats = [str(u) for u in uniques]
    if OTHER not in cats:
        cats.append(OTHER)
    out = np.full(len(trace.gpu), cats.index(OTHER), dtype=np.int32)
    out[kops["gpu_row"].to_numpy(dtype=np.int64)] = codes
    return out, np.asarray(cats, dtype=object)


def _assert_same(trace: Trace) -> None:
    codes, cats = gpu_category_codes(trace)
    want_codes, want_cats = _reference(trace)
    assert cats.tolist() == want_cats.tolist()
    assert codes.dtype == want_codes.dtype
    assert np.array_equal(codes, want_codes)
    _assert_same_part(trace)


def _assert_same_part(trace: Trace) -> None:
    """The graph part's labels with the launching ops found by its call-stack walk equal
    those with the categorised kernel-op table's categories."""
    got = rank_graph.rank_graph(trace)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rank_graph, "gpu_category_codes", lambda t, call_op=None: _reference(t))
        want = rank_graph.rank_graph(trace)
    assert got.labels.tolist() == want.labels.tolist()
    for f in ("category_code", "cause_code", "detail_code", "name_code"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f


def _mixed() -> Trace:
    """Launches inside ops, inside a ProfilerStep cpu_op only, inside a step inside an op (the
    op looked up again over the non-step ops), a graph launch inside an op, a memcpy and a
    memset, a kernel without a launching call, a launch outside every op and a sync row."""
    host = [
        Op("ProfilerStep#3", 0, 100),
        Op("aten::mm", 1, 5),
        Call("cudaLaunchKernel", 2, 3, 1),
        Call("cudaLaunchKernel", 6, 7, 2),  # inside the step only
        Op("aten::layer_norm", 8, 12),
        Call("cudaMemcpyAsync", 9, 10, 3),
        Op("aten::mm", 12.5, 14.5),  # a graph launch's op is not its kernels' op
        Call("cudaGraphLaunch", 13, 14, 4),
        Op("mystery_op", 15, 20),
        Call("cudaMemsetAsync", 16, 17, 5),
        Call("cudaLaunchKernel", 101, 102, 6),  # outside every op
        Op("aten::mm", 200, 300),  # holds a step holding a launch: the launch's op
        Op("ProfilerStep#4", 201, 250),
        Call("cudaLaunchKernel", 205, 206, 8),
    ]
    gpu = [
        Kernel("ampere_sgemm_128x64_nn", 20, 30, 1),
        Kernel("vectorized_elementwise_kernel", 31, 32, 2),
        Kernel("Memcpy HtoD (Pinned -> Device)", 33, 34, 3, kind="memcpy"),
        Kernel("fmha_fwd", 35, 36, 4),
        Kernel("Memset (Device)", 37, 38, 5, kind="memset"),
        Kernel("ncclKernel_AllReduce", 39, 40, 6),
        Kernel("orphan_kernel", 41, 42, 99),
        Kernel("Stream Sync", 43, 44, 7, kind="sync"),
        Kernel("mystery_kernel", 301, 302, 8),
    ]
    return serving_trace(host, gpu)


def test_launches_in_ops_steps_graphs_copies_and_orphans() -> None:
    _assert_same(_mixed())


@pytest.mark.parametrize("overlap", [False, True], ids=["nested", "overlapping ops"])
def test_launches_the_walk_leaves_to_the_exact_look_up(overlap: bool) -> None:
    """An op starting with its launch inside it, ops of equal ranges around a launch (the
    walk orders them by their position in the file, the look-up by row), and (*overlap*) ops
    that overlap without nesting, which leave the whole thread to the look-up over the ops."""
    host = [
        Op("ProfilerStep#1", 0, 1000),
        Call("cudaLaunchKernel", 500, 510, 1),
        Op("aten::add", 500, 505),  # starts with the launch, inside it
        Op("aten::mm", 600, 610),
        Op("aten::add", 600, 610),  # the same range: the later row is the innermost
        Call("cudaLaunchKernel", 602, 603, 2),
        Op("aten::mm", 700, 710),
        Call("cudaLaunchKernel", 701, 702, 3),
    ]
    if overlap:
        host.append(Op("aten::layer_norm", 705, 720))
    gpu = [Kernel("mystery_kernel", 800 + i, 801 + i, i + 1) for i in range(3)]
    t = serving_trace(host, gpu)
    # positions in the file: the equal ranges in the other order than their rows
    index = np.arange(len(t.host))
    index[[3, 4]] = [4, 3]
    t = dataclasses.replace(
        t,
        host=t.host.assign(event_index=index),
        gpu=t.gpu.assign(event_index=np.arange(len(t.gpu)) + len(t.host)),
    )
    _assert_same(t)


def test_graph_launches_are_named_as_the_serving_rows_name_them() -> None:
    from analyzers.critical_path.sources import GRAPH_LAUNCH
    from analyzers.serving.ops import GRAPH_LAUNCH_RE, launch_rows

    assert GRAPH_LAUNCH.pattern == GRAPH_LAUNCH_RE.pattern
    t = _mixed()
    assert np.array_equal(sources_launch_rows(t), launch_rows(t))


def test_a_trace_without_gpu_work_has_only_other() -> None:
    t = serving_trace([Op("aten::add", 0, 1)], [Kernel("Stream Sync", 2, 3, 1, kind="sync")])
    _assert_same(t)
    assert gpu_category_codes(t)[1].tolist() == [OTHER]


@pytest.mark.parametrize(
    "traces",
    [
        pytest.param(lambda: training_run(late_rank=1, delay=150_000), id="training_run"),
        pytest.param(lambda: load_traces([SAMPLES / "synthetic_2rank"]), id="synthetic_2rank"),
        pytest.param(lambda: load_traces([SAMPLES / "torch_cpu"]), id="torch_cpu"),
        pytest.param(
            lambda: load_traces([SAMPLES / "real" / "trace_compare_test"]), id="trace_compare"
        ),
    ],
)
def test_sample_traces(traces) -> None:
    for t in traces():
        _assert_same(t)


@pytest.mark.parametrize("name", sorted(SERVING))
def test_serving_traces_with_graph_launches(name: str) -> None:
    _assert_same(read_kineto(inference(SERVING[name])))
