"""The replay's pass over the hubs as scans along chains (:mod:`analyzers.critical_path.scan`)
equals the pass edge by edge it replaces: on random hub graphs (chains with cross edges from a
few shared roots, several edges from one root, anchors) and on the run traces' what-ifs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.paths import NO_ANCHOR
from analyzers.critical_path.replay import replay_with
from analyzers.critical_path.scan import hub_times, scan_plan
from analyzers.critical_path.simulate import Change, delays
from analyzers.critical_path.step_graph import build_step_graph
from collectors.load import load_traces
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES


def _pass(anchor: list[int], hub: list[int], root: list[int], a: list[int]) -> list[int]:
    """The pass edge by edge (replay.replay_with's loop)."""
    t = list(anchor)
    for k, r, x in zip(hub, root, a, strict=True):
        t[k] = max(t[k], t[r] + x)
    return t


hub_graphs = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.just(n),
        # per hub: edges as (kind, pick): 0 the hub before, 1 a shared root, 2 any earlier hub
        st.lists(
            st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1000)), max_size=3),
            min_size=n,
            max_size=n,
        ),
        st.lists(st.integers(0, 3), min_size=4, max_size=4),  # the shared roots
        st.lists(st.integers(-20, 50), min_size=120, max_size=120),  # what the edges add
        st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=n, max_size=n),
    )
)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(hub_graphs)
def test_scans_equal_the_pass_on_random_hub_graphs(graph) -> None:
    n, per_hub, shared, adds, anchors = graph
    hub: list[int] = []
    root: list[int] = []
    for k, edges in enumerate(per_hub):
        for kind, pick in edges:
            if k == 0:
                continue
            r = k - 1 if kind == 0 else (shared[pick % 4] if kind == 1 else pick % k)
            hub.append(k)
            root.append(min(r, k - 1))
    a = adds[: len(hub)]
    has_edge = set(hub)
    anchor = [
        (x if x is not None else NO_ANCHOR) if k in has_edge else (x or 0)
        for k, x in enumerate(anchors)
    ]
    want = _pass(anchor, hub, root, a)
    plan = scan_plan(n, np.array(hub, np.int64), np.array(root, np.int64), min_edges=0)
    if not hub:
        assert plan is None
        return
    assert plan is not None
    got = hub_times(
        plan,
        np.array(anchor, np.int64),
        np.array(hub, np.int64),
        np.array(root, np.int64),
        np.array(a, np.int64),
    )
    assert got.tolist() == want


def test_scans_are_left_out_where_they_would_not_pay() -> None:
    hub = np.arange(1, 9, dtype=np.int64)
    root = np.zeros(8, np.int64)  # every hub from hub 0: nine stretches for eight edges
    assert scan_plan(9, hub, root) is None
    assert scan_plan(9, hub, root, min_edges=0) is not None


RUNS = [
    ("late rank", lambda: training_run(late_rank=1, delay=150_000)),
    ("launch gaps", lambda: training_run(n_small=40, small_host=20_000)),
    ("exposed comm", lambda: training_run(overlapped=False)),
    ("synthetic_2rank", lambda: load_traces([SAMPLES / "synthetic_2rank"])),
    ("torch_cpu", lambda: load_traces([SAMPLES / "torch_cpu"])),
]


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_what_if_replays_by_scans_equal_the_pass(label, traces) -> None:
    g = build_step_graph(traces())
    plan = g.replay_plan
    forced = dataclasses.replace(
        plan, scan=scan_plan(len(plan.hubs), plan.loop_hub, plan.loop_root, min_edges=0)
    )
    changes = [
        Change("cuda_graphs"),
        Change("overlap_comm"),
        Change("faster", category="GEMM", factor=2.0),
        Change("none"),
    ]
    for c in changes:
        d = delays(g, c)
        want, _ = replay_with(plan, d, binding=True)
        got, why = replay_with(forced, d, binding=False)
        assert why is None
        assert np.array_equal(got, want), c.label
