"""The vectorised call-stack walk equals the loop that defines it (HTA's stack: a start is
pushed under the top, an end pops the top whichever event it is), on random intervals with
ties, nesting and partial overlaps."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.callstack import _threads, _walk, walk_arrays, walk_lane

intervals = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12)), max_size=25)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(intervals, st.randoms(use_true_random=False))
def test_walk_arrays_equal_the_stack_loop(iv: list[tuple[int, int]], rnd) -> None:
    n = len(iv)
    ts = np.array([a for a, _ in iv], np.int64)
    end = np.array([a + b for a, b in iv], np.int64)
    order = np.array(rnd.sample(range(100), n), np.int64)
    grp = np.arange(n, dtype=np.int64)
    e, entering, parent = walk_arrays(ts, end, order, grp)
    got = list(zip(e.tolist(), entering.tolist(), parent.tolist(), strict=True))
    assert got == _walk(ts, end, order, grp)


def _nested(draw_sizes: list[int], gaps: list[int]) -> list[tuple[int, int]]:
    """Properly nested intervals from a preorder of subtree sizes: each interval opens, holds
    its children and closes; *gaps* (≥ 0) between boundaries make ties."""
    out: list[tuple[int, int]] = []
    t = 0
    g = iter(gaps * 4)

    def build(lo: int, hi: int) -> None:  # intervals lo..hi-1 of the preorder, siblings
        nonlocal t
        i = lo
        while i < hi:
            size = max(1, min(draw_sizes[i], hi - i))
            t += next(g, 1)
            start = t
            out.append((start, 0))
            k = len(out) - 1
            build(i + 1, i + size)
            t += next(g, 1) + (1 if t == start else 0)  # positive duration
            out[k] = (start, t - start)
            i += size

    build(0, len(draw_sizes))
    return out


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(1, 6), max_size=25),
    st.lists(st.integers(0, 2), min_size=1, max_size=10),
    st.randoms(use_true_random=False),
)
def test_walk_arrays_of_nested_events_equal_the_stack_loop(sizes, gaps, rnd) -> None:
    """Events that nest (every end pops its own event: the walk is the boundaries' order),
    with ties between a parent's and its children's boundaries."""
    iv = _nested(sizes, gaps)
    n = len(iv)
    ts = np.array([a for a, _ in iv], np.int64)
    end = np.array([a + b for a, b in iv], np.int64)
    order = np.array(rnd.sample(range(100), n), np.int64)
    grp = np.array(rnd.sample(range(n), n), np.int64)  # any order of the thread's events
    e, entering, parent = walk_arrays(ts, end, order, grp)
    got = list(zip(e.tolist(), entering.tolist(), parent.tolist(), strict=True))
    assert got == _walk(ts, end, order, grp)


def _holding_loop(walk, flagged: np.ndarray) -> list[int]:
    """The flagged events and their ancestors, climbing the stack loop's parents."""
    parent = {e: p for e, entering, p in walk if entering}
    out: set[int] = set()
    for e in parent:
        x = e if flagged[e] else -1
        while x >= 0 and x not in out:
            out.add(x)
            x = parent[x]
    return sorted(out)


def _innermost_op(ts, end, grp, is_op, x: int) -> int:
    """The op holding *x*'s start that is last by (start, end descending, position): the
    rule of collectors.linking.innermost_range."""
    t = int(ts[x])
    held = [o for o in grp.tolist() if is_op[o] and ts[o] <= t < end[o]]
    return max(held, key=lambda o: (int(ts[o]), -int(end[o]), o), default=-1)


def _check_lane(iv: list[tuple[int, int]], rnd) -> int:
    """Checks the lane of *iv*; returns how many asked events it resolved."""
    n = len(iv)
    ts = np.array([a for a, _ in iv], np.int64)
    end = np.array([a + b for a, b in iv], np.int64)
    order = np.array(rnd.sample(range(100), n), np.int64)
    grp = np.array(rnd.sample(range(n), n), np.int64)
    flagged = np.array([rnd.random() < 0.2 for _ in range(n)], bool)
    is_op = np.array([rnd.random() < 0.6 for _ in range(n)], bool)
    asked = np.array([rnd.random() < 0.5 for _ in range(n)], bool)
    lane = walk_lane(ts, end, order, grp, flagged, asked, is_op)
    want = _walk(ts, end, order, grp)
    got = list(zip(lane.event.tolist(), lane.entering.tolist(), strict=True))
    assert got == [(x, s) for x, s, _ in want]
    holding = lane.holding.tolist()
    assert sorted(holding) == _holding_loop(want, flagged)
    assert holding == [x for x in grp.tolist() if x in set(holding)]
    assert set(lane.asked.tolist()) <= {x for x in grp.tolist() if asked[x] and not is_op[x]}
    for x, op in zip(lane.asked.tolist(), lane.op.tolist(), strict=True):
        assert op == _innermost_op(ts, end, grp, is_op, x)
    return len(lane.asked)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(intervals, st.randoms(use_true_random=False))
def test_walk_lane_equals_the_stack_loop(iv: list[tuple[int, int]], rnd) -> None:
    """The walk and the events that hold a flagged one, on intervals that overlap."""
    _check_lane(iv, rnd)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(1, 6), max_size=25),
    st.lists(st.integers(0, 2), min_size=1, max_size=10),
    st.randoms(use_true_random=False),
)
def test_walk_lane_of_nested_events_equals_the_stack_loop(sizes, gaps, rnd) -> None:
    """Events that nest: the holders from a running count of flagged starts, the innermost
    op at an asked event's start from the op depth (ties between boundaries, equal ranges)."""
    _check_lane(_nested(sizes, gaps), rnd)


def test_walk_lane_resolves_the_asked_events_of_nested_ops_without_ties() -> None:
    """Nested events at distinct times: every asked event gets its op from the walk."""
    iv = [(0, 100), (10, 50), (12, 3), (20, 10), (22, 2), (60, 30), (61, 1), (70, 5)]
    n = len(iv)
    ts = np.array([a for a, _ in iv], np.int64)
    end = np.array([a + b for a, b in iv], np.int64)
    is_op = np.array([True, True, False, True, False, False, False, True])
    asked = ~is_op
    lane = walk_lane(ts, end, np.arange(n), np.arange(n), np.zeros(n, bool), asked, is_op)
    assert sorted(lane.asked.tolist()) == [2, 4, 5, 6]
    assert dict(zip(lane.asked.tolist(), lane.op.tolist(), strict=True)) == {2: 1, 4: 3, 5: 0, 6: 0}


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 12)), min_size=1, max_size=60),
    st.sampled_from([1, 2**61]),
    st.randoms(use_true_random=False),
)
def test_threads_split_as_the_sort_of_pid_and_tid(pairs, scale, rnd) -> None:
    """Few threads (masks) and many (sorted codes); pids spread over 2**62 (the pair sort)."""
    pid = np.array([p for p, _ in pairs], np.int64) * scale
    tid = np.array([t for _, t in pairs], np.int64)
    members = np.array(sorted(rnd.sample(range(len(pairs)), rnd.randint(1, len(pairs)))))
    keys = np.lexsort((tid[members], pid[members]))
    m = members[keys]
    cut = np.flatnonzero((pid[m][1:] != pid[m][:-1]) | (tid[m][1:] != tid[m][:-1])) + 1
    want = [g.tolist() for g in np.split(m, cut)]
    assert [g.tolist() for g in _threads(pid, tid, members)] == want
