"""The vectorised call-stack walk equals the loop that defines it (HTA's stack: a start is
pushed under the top, an end pops the top whichever event it is), on random intervals with
ties, nesting and partial overlaps."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.callstack import _walk, walk_arrays

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
