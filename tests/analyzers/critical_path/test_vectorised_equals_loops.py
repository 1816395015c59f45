"""The array passes of the critical path equal the per-element loops that define them: edge
labels (the cause table of blame's docstring), the path walk and its segments, the measured
replay without a pass, the topological order by time.  The loops here are the definitions the
array code replaced (kept as references, run on the same graphs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path import rank_graph as rg
from analyzers.critical_path import replay as replay_module
from analyzers.critical_path import waits
from analyzers.critical_path.blame import Segment, step_paths
from analyzers.critical_path.paths import (
    NO_ANCHOR,
    first_latest_in_edges,
    forward_order,
    in_edges,
    in_groups,
    measured_why,
    settled,
)
from analyzers.critical_path.replay import chain_roots, replay
from analyzers.critical_path.simulate import Change, anchors, delays, run
from analyzers.critical_path.sources import COMMUNICATION, MEMORY
from analyzers.critical_path.step_graph import KINDS, build_step_graph
from collectors.load import load_traces
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES, shared_path


def _runs() -> list[tuple[str, list]]:
    return [
        ("late rank", training_run(late_rank=1, delay=150_000)),
        ("launch gaps", training_run(n_small=40, small_host=20_000)),
        ("exposed comm", training_run(overlapped=False)),
        ("synthetic_2rank", load_traces([SAMPLES / "synthetic_2rank"])),
        ("torch_cpu", load_traces([SAMPLES / "torch_cpu"])),
    ]


RUNS = _runs()


def _labels_loop(kind, ev_u, ev_v, ev_name, names, ev_cat, cats, step_event, launching, unresolved):
    """The per-edge loop :func:`labels.edge_labels` replaced (strings, edge by edge)."""
    m = len(kind)
    cause, detail = np.empty(m, dtype=object), np.empty(m, dtype=object)
    names_out, category = np.empty(m, dtype=object), np.empty(m, dtype=object)
    for e in range(m):
        k = rg.KINDS[int(kind[e])]
        u, v = int(ev_u[e]), int(ev_v[e])
        at = v if v >= 0 else u
        name = str(names[ev_name[at]]) if at >= 0 else ""
        c = str(cats[ev_cat[u]]) if k == "gpu" else ""
        names_out[e], category[e] = name, c
        if k == "gpu":
            if c == COMMUNICATION:
                cause[e], detail[e] = "exposed_communication", name.split("(")[0][:60]
            elif c == MEMORY:
                cause[e], detail[e] = "memory", name.split(" (")[0]
            else:
                cause[e], detail[e] = "compute", c
        elif k in ("launch", "stream"):
            late = " after an unresolved cross-stream wait" if unresolved[e] else ""
            cause[e], detail[e] = "launch_gap", k + late
        elif k == "sync":
            cause[e], detail[e] = "synchronisation", name
        elif k == "wait":
            cause[e], detail[e] = "synchronisation", "cross-stream wait"
        elif k == "complete":
            cause[e], detail[e] = "cpu", k
        elif v < 0:
            cause[e], detail[e] = "cpu", ""
        elif name in rg.SYNC_CALL_NAMES:
            cause[e], detail[e] = "synchronisation", name
        elif rg.DATA_LOADING.search(name):
            cause[e], detail[e] = "data_loading", name
        elif launching[e] and not (step_event[v] or (u >= 0 and step_event[u])):
            cause[e], detail[e] = "launch_gap", "host"
        else:
            cause[e], detail[e] = "cpu", ""
    return cause, detail, names_out, category


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_edge_labels_equal_the_per_edge_loop(label, traces, monkeypatch) -> None:
    seen = []
    real = rg.edge_labels

    def spy(*args):
        got = real(*args)
        seen.append((got, _labels_loop(*args)))
        return got

    monkeypatch.setattr(rg, "edge_labels", spy)
    for t in traces:
        rg.rank_graph(t)
    assert seen
    for got, want in seen:
        assert len(set(got.table.tolist())) == len(got.table)  # distinct strings
        codes = (got.cause, got.detail, got.name, got.category)
        for a, b in zip(codes, want, strict=True):
            assert a.dtype.kind == "i"
            assert got.table[a].tolist() == b.tolist()


def _paths_loop(g, times, why):
    """The path walk :func:`blame.step_paths` replaced, without the late-rank relabelling:
    ``(step, rank, segments, unresolved waits, joins on the path)``."""
    per_step: dict[int, list[tuple[int, int, int]]] = {}
    for st_ in g.steps:
        per_step.setdefault(st_.num, []).append((st_.rank, st_.start, st_.done))
    out = []
    transfer = KINDS.index("transfer")
    for num in sorted(per_step):
        rows = per_step[num]
        durs = {r: int(times[c] - times[s]) for r, s, c in rows}
        rank, s_node, c_node = max(rows, key=lambda x: (durs[x[0]], -x[0]))
        lo, v, segs, on_path, unresolved = int(times[s_node]), c_node, [], set(), 0
        while v != s_node:
            e = int(why[v])
            if e < 0:
                if times[v] > lo:
                    segs.append(
                        Segment(int(g.node_rank[v]), lo, int(times[v]), "cpu", "untracked", "")
                    )
                break
            u = int(g.src[e])
            if g.kind[e] == transfer:
                on_path.add(u)
            unresolved += bool(g.unresolved[e])
            a, b = max(int(times[u]), lo), int(times[v])
            if b > a:
                r = int(g.node_rank[v]) if g.node_rank[v] >= 0 else int(g.node_rank[u])
                segs.append(Segment(r, a, b, str(g.cause[e]), str(g.detail[e]), str(g.name[e])))
            if times[u] <= lo:
                break
            v = u
        segs.reverse()
        out.append((num, rank, segs, unresolved, on_path))
    return out


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_path_segments_equal_the_walk_loop(label, traces) -> None:
    g = build_step_graph(traces)
    times, why = run(g)
    paths = step_paths(g, (times, why))
    want = _paths_loop(g, times, why)
    assert [(p.step, p.rank, p.unresolved_waits) for p in paths] == [(*w[:2], w[3]) for w in want]
    for p, (_, _, segs, _, on_path) in zip(paths, want, strict=True):
        late = any(j.lateness_ns > 0 and j.node in on_path for j in g.joins)
        if not late:  # relabelled segments are checked by the what-if tests
            assert p.segments == segs
        totals: dict[tuple[str, str, int], int] = {}
        for s in p.segments:
            k = (s.cause, s.detail, s.rank if s.cause == "late_rank" else -1)
            totals[k] = totals.get(k, 0) + s.duration_ns
        assert list(p.by_cause().items()) == list(totals.items())
        longest = sorted(p.segments, key=lambda s: -s.duration_ns)[:10]
        assert p.longest(10) == longest
        assert p.n_segments == len(p.segments)


def _replay_loop_of(g, delay, anchor):
    """The pass over every node in topological order (what :func:`replay` compresses)."""
    src, dst = g.src.tolist(), g.dst.tolist()
    pred: list[list[int]] = [[] for _ in range(len(g.node_time))]
    for e, v in enumerate(dst):
        pred[v].append(e)
    t = anchor.tolist()
    why = [-1] * len(t)
    for v in g.topo.tolist():
        for e in pred[v]:
            c = t[src[e]] + int(delay[e])
            if c > t[v]:
                t[v], why[v] = c, e
    return t, why


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_what_if_replays_equal_the_pass_over_every_node(label, traces) -> None:
    from analyzers.critical_path.analysis import candidate_changes

    g = build_step_graph(traces)
    changes = [*candidate_changes(g, step_paths(g)), Change("overlap_comm"), Change("none")]
    for c in changes:
        d = delays(g, c)
        got = replay(len(g.node_time), g.topo, g.pred, g.src, d, anchors(g))
        t, why = _replay_loop_of(g, d, anchors(g))
        assert got[0].tolist() == t and got[1].tolist() == why, c.label


@pytest.mark.parametrize(("label", "traces"), RUNS, ids=[r[0] for r in RUNS])
def test_measured_replay_without_a_pass_equals_the_pass(label, traces) -> None:
    g = build_step_graph(traces)
    anchor = anchors(g)
    want = replay(len(g.node_time), g.topo, g.pred, g.src, g.delay, anchor)
    got = settled(g.node_time, g.src, g.dst, g.delay, anchor)
    assert got is not None
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(g.measured[0], want[0]) and np.array_equal(g.measured[1], want[1])
    changed = delays(g, Change("cuda_graphs"))
    if not np.array_equal(changed, g.delay):  # a what-if: the measured times no longer solve it
        assert settled(g.node_time, g.src, g.dst, changed, anchor) is None


dags = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60),
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.integers(-3, 5), min_size=60, max_size=60),
    )
)


def _loop_replay(n, src, dst, delay, anchor):
    pred: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (u, v) in enumerate(zip(src, dst, strict=True)):
        pred[v].append((u, e))
    order = sorted(range(n), key=lambda v: v)  # nodes numbered in topological order below
    t, why = list(anchor), [-1] * n
    for v in order:
        best, arg = t[v], -1
        for u, e in pred[v]:
            if t[u] + delay[e] > best:
                best, arg = t[u] + delay[e], e
        t[v], why[v] = best, arg
    return t, why


@settings(max_examples=400, deadline=None, derandomize=True)
@given(dags)
def test_replay_and_forward_order_on_random_dags(dag) -> None:
    _check_replay(dag)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(dags)
def test_replay_gathering_in_blocks_of_three_equals_the_loop(dag) -> None:
    """The replay's gathers go block by block (``replay.BLOCK`` entries, 65,536 in use): with
    blocks of three, every graph here has block edges inside its chains."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_module, "BLOCK", 3)
        _check_replay(dag)


def _check_replay(dag) -> None:
    n, pairs, gaps, ds = dag
    edges = [(min(u, v), max(u, v)) for u, v in pairs if u != v]  # acyclic: low → high
    src = np.array([u for u, _ in edges], np.int64)
    dst = np.array([v for _, v in edges], np.int64)
    time = np.cumsum(gaps).astype(np.int64)  # non-decreasing: ties and no edge back in time
    order = forward_order(n, src, dst, time)
    pos = np.empty(n, np.int64)
    pos[np.asarray(order, np.int64)] = np.arange(n)
    assert sorted(order) == list(range(n))
    assert all(pos[u] < pos[v] for u, v in edges)
    delay = np.array(ds[: len(edges)], np.int64)
    anchor = np.where(np.isin(np.arange(n), dst), -(2**62), time)
    t, why = replay(n, order, in_edges(n, dst), src, delay, anchor)
    want_t, want_why = _loop_replay(n, src.tolist(), dst.tolist(), delay.tolist(), anchor.tolist())
    assert t.tolist() == want_t and why.tolist() == want_why
    # the replay's own times solve its equation: settled gives the same without a pass
    got = settled(t, src, dst, delay, anchor)
    assert got is not None and got[0].tolist() == want_t and got[1].tolist() == want_why


# chain forests: node i of the topological order is a root or hangs from an earlier node,
# usually the one just before it (runs), sometimes further back (interleaved lanes, branches)
forests = st.integers(1, 80).flatmap(
    lambda n: st.tuples(
        st.permutations(range(n)),
        st.lists(st.tuples(st.integers(0, 6), st.integers(0, 79)), min_size=n, max_size=n),
        st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n),
    )
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(forests)
def test_chain_roots_equal_the_walk_down_every_chain(forest) -> None:
    """Runs + pointer jumping over runs give each chain node's root and Σ of steps from it,
    whatever the order the runs are cut along, as the walk in topological order does (steps
    near the int64 range: the cumulative sums wrap, their differences stay exact)."""
    _check_chain_roots(forest)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(forests)
def test_chain_roots_gathering_in_blocks_of_three_equal_the_walk(forest) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_module, "BLOCK", 3)
        _check_chain_roots(forest)


def _check_chain_roots(forest) -> None:
    perm, picks, steps = forest
    n = len(perm)
    topo = np.asarray(perm, np.int64)  # node topo[i] is the i-th in topological order
    simple = np.zeros(n, bool)
    parent = np.full(n, -1, np.int64)
    for i, (kind, back) in enumerate(picks):
        if i and kind:  # kind 0: a root; 1-4: after the node just before; 5-6: further back
            simple[topo[i]] = True
            parent[topo[i]] = topo[i - 1] if kind <= 4 else topo[back % i]
    step = np.where(simple, np.asarray(steps, np.int64), 0)
    up, acc = list(range(n)), [0] * n
    for v in topo.tolist():
        if simple[v]:
            p = int(parent[v])
            up[v] = up[p]
            acc[v] = (acc[p] + int(step[v]) + 2**63) % 2**64 - 2**63  # int64 arithmetic
    got_up, got_acc = chain_roots(n, topo, simple, parent, step)
    assert got_up.tolist() == up and got_acc.tolist() == acc
    # any order of the nodes gives the same (only the runs differ): reversed, by node number
    for order in (topo[::-1], np.arange(n)):
        got_up, got_acc = chain_roots(n, order, simple, parent, step)
        assert got_up.tolist() == up and got_acc.tolist() == acc


@settings(max_examples=400, deadline=None, derandomize=True)
@given(dags)
def test_in_edges_and_binding_edges_equal_the_sorts_they_replace(dag) -> None:
    """``in_edges`` is the stable sort by end node and each node's first edge in it; the
    binding edges are the first of each node's group in ``np.lexsort((-time[src], dst))``."""
    n, pairs, gaps, _ = dag
    src = np.array([u for u, _ in pairs], np.int64)
    dst = np.array([v for _, v in pairs], np.int64)
    time = np.asarray(gaps, np.int64)  # ties between sources: the first edge wins
    ptr, edges, first = in_edges(n, dst)
    order = np.argsort(dst, kind="stable")
    assert edges.tolist() == order.tolist()
    assert ptr.tolist() == np.searchsorted(dst[order], np.arange(n + 1)).tolist()
    want_first = [next((e for e in range(len(dst)) if dst[e] == v), -1) for v in range(n)]
    assert first.tolist() == want_first
    want = []
    if len(src):
        seq = np.lexsort((-time[src], dst))
        want = sorted(seq[np.r_[True, dst[seq][1:] != dst[seq][:-1]]].tolist())
    got = first_latest_in_edges((ptr, edges, first), time[src])
    assert sorted(got.tolist()) == want


@settings(max_examples=400, deadline=None, derandomize=True)
@given(dags, st.lists(st.booleans(), min_size=30, max_size=30))
def test_measured_binding_edges_equal_the_checked_solution(dag, anchored) -> None:
    """With the step graph's measured delays (the gap on each node's binding edge, at most 0
    elsewhere) and anchors (measured times of the nodes without in-edges and of some others),
    :func:`measured_why` gives what :func:`settled` finds after checking the times solve the
    replay — times in any order, negative gaps, ties between sources."""
    n, pairs, gaps, _ = dag
    src = np.array([u for u, _ in pairs], np.int64)
    dst = np.array([v for _, v in pairs], np.int64)
    time = np.asarray(gaps, np.int64) * 3 - 4
    pred = in_edges(n, dst)
    binding = np.zeros(len(src), bool)
    binding[first_latest_in_edges(pred, time[src])] = True
    gap = time[dst] - time[src]
    delay = np.where(binding, gap, np.minimum(gap, 0))
    held = np.flatnonzero(np.asarray(anchored[:n], bool))
    anchor = np.where(np.isin(np.arange(n), dst), NO_ANCHOR, time)
    anchor[held] = time[held]
    want = settled(time, src, dst, delay, anchor)
    assert want is not None
    got = measured_why(n, in_groups(pred), binding, gap, held)
    assert got.tolist() == want[1].tolist()


def test_forward_order_raises_on_a_cycle_of_equal_times() -> None:
    with pytest.raises(ValueError, match="cycle"):
        forward_order(3, np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([5, 5, 5]))


def _next_launched_loop(ev, calls, streams):
    """The per-call loop :func:`waits.next_launched_rows` replaced."""
    launch = ev.is_host & ev.name_in(rg.LAUNCH_NAMES) & (ev.link >= 0)
    launches = np.flatnonzero(launch)
    launches = launches[ev.stream[ev.link[launches]] >= 0]
    out = np.full(len(calls), -1, np.int64)
    if not len(launches) or not len(calls):
        return out
    launches = launches[np.argsort(ev.ts[launches], kind="stable")]
    groups: dict = {}
    keys = zip(
        ev.pid[launches].tolist(),
        ev.tid[launches].tolist(),
        ev.stream[ev.link[launches]].tolist(),
        strict=True,
    )
    for pos, (p, t, s) in zip(launches.tolist(), keys, strict=True):
        groups.setdefault((p, t, s), []).append(pos)
        groups.setdefault((p, t, -1), []).append(pos)
    arrays = {k: np.asarray(v, np.int64) for k, v in groups.items()}
    for i, (c, s) in enumerate(zip(calls.tolist(), streams.tolist(), strict=True)):
        cand = arrays.get((int(ev.pid[c]), int(ev.tid[c]), int(s)))
        if cand is None:
            continue
        j = int(np.searchsorted(ev.ts[cand], ev.ts[c], side="right"))
        if j < len(cand):
            out[i] = int(ev.link[cand[j]])
    return out


class _FakeEvents:
    """The columns :func:`waits.next_launched_rows` reads: *n* host rows (some of them
    launches, linked to one of *n* GPU rows on a stream) followed by the GPU rows."""

    def __init__(self, data) -> None:
        n = data.draw(st.integers(1, 40))
        ints = lambda lo, hi: np.asarray(  # noqa: E731
            data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), np.int64
        )
        # ties on purpose; times spread over 2**62 where (group, time) pairs are ranked
        scale = data.draw(st.sampled_from([1, 2**57]))
        self.ts = np.concatenate([ints(0, 30), ints(0, 30)]) * scale
        self.pid = np.concatenate([ints(0, 2), ints(0, 2)])
        self.tid = np.concatenate([ints(0, 2), ints(0, 2)])
        self.stream = np.concatenate([np.full(n, -1, np.int64), ints(-1, 2)])
        linked = ints(-1, n - 1)
        self.link = np.concatenate([np.where(linked >= 0, linked + n, -1), np.full(n, -1)])
        self.is_host = np.arange(2 * n) < n
        self._launch = np.concatenate([ints(0, 1).astype(bool), np.zeros(n, bool)])
        self.n = n

    def name_in(self, names) -> np.ndarray:
        assert names is waits.LAUNCH_NAMES
        return self._launch


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_next_launched_rows_equal_the_per_call_loop(data) -> None:
    ev = _FakeEvents(data)
    calls = np.asarray(data.draw(st.lists(st.integers(0, ev.n - 1), max_size=20)), np.int64)
    streams = np.asarray(
        data.draw(st.lists(st.integers(-1, 2), min_size=len(calls), max_size=len(calls))),
        np.int64,
    )
    got = waits.next_launched_rows(ev, calls, streams)
    np.testing.assert_array_equal(got, _next_launched_loop(ev, calls, streams))


def test_next_launched_rows_on_a_real_trace_with_stream_waits_equal_the_loop(monkeypatch) -> None:
    # HTA's nccl_parser_config trace: 84 stream waits whose next launch is looked up
    traces = load_traces([shared_path("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz")])
    seen = []
    real = waits.next_launched_rows

    def spy(ev, calls, streams):
        got = real(ev, calls, streams)
        seen.append((got, _next_launched_loop(ev, calls, streams)))
        return got

    monkeypatch.setattr(waits, "next_launched_rows", spy)
    for t in traces:
        rg.rank_graph(t)
    assert sum(int((got >= 0).sum()) for got, _ in seen) > 0
    for got, want in seen:
        np.testing.assert_array_equal(got, want)


def _pair_edges_loop(p) -> dict[int, int]:
    """The dict over every gpu edge that :func:`step_graph._pair_edges` replaced."""
    gpu = np.flatnonzero(p.kind == KINDS.index("gpu"))
    by_pair = {(int(p.src[e]), int(p.dst[e])): int(e) for e in gpu.tolist()}
    return {
        i: by_pair[(s, t)]
        for i, (s, t) in enumerate(zip(p.coll_start.tolist(), p.coll_end.tolist(), strict=True))
        if (s, t) in by_pair
    }


def test_collective_kernel_edges_equal_the_dict_over_every_gpu_edge() -> None:
    from analyzers.critical_path.step_graph import _pair_edges

    found = 0
    for _, traces in RUNS:
        for t in traces:
            p = rg.rank_graph(t)
            assert _pair_edges(p) == _pair_edges_loop(p)
            found += len(_pair_edges(p))
    assert found > 0


# binding forests: each node's predecessor is an earlier node, mostly the one just before it
# (runs), sometimes further back or none; times non-decreasing along ids (runs walked whole)
walk_forests = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.tuples(st.integers(0, 7), st.integers(0, 59)), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.tuples(*[st.integers(0, 59)] * 3, st.integers(-1, 1)), max_size=8),
    )
)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(walk_forests)
def test_walk_by_runs_equals_the_walk_node_by_node(forest) -> None:
    from analyzers.critical_path.blame import _Walk

    picks, gaps, queries = forest
    n = len(picks)
    up = np.full(n, -1, np.int64)
    for v, (kind, back) in enumerate(picks):
        if v and kind:  # 0: no predecessor; 1-5: the node just before; 6-7: further back
            up[v] = v - 1 if kind <= 5 else back % v
    times = np.cumsum(gaps).astype(np.int64)
    walk = _Walk(up, times)
    assert walk.by_runs
    for c, s, x, d in queries:  # stop times at, just before and just after a node's
        c, s, lo = c % n, s % n, int(times[x % n]) + d
        got, got_untracked = walk.back(c, s, lo)
        want, want_untracked = walk._nodes(c, s, lo)
        assert got.tolist() == want.tolist() and got_untracked == want_untracked
