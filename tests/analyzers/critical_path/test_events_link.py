"""HTA's correlation index (:func:`analyzers.critical_path.events._link`) by a table of
correlation ids or by a sorted search equals the loop that defines it: each CPU-side row
points at the last GPU-side row of its correlation, which points back at the last CPU-side
row pointing at it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.events import _link


def _loop(corr: list[int], gpu_side: list[bool]) -> list[int]:
    link = [-1] * len(corr)
    last_gpu: dict[int, int] = {}
    for i, (c, g) in enumerate(zip(corr, gpu_side, strict=True)):
        if c != -1 and g:
            last_gpu[c] = i
    for i, (c, g) in enumerate(zip(corr, gpu_side, strict=True)):
        if c != -1 and not g and c in last_gpu:
            link[i] = last_gpu[c]
            link[last_gpu[c]] = i
    return link


@settings(max_examples=800, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(-1, 12), st.booleans()), max_size=40),
    st.sampled_from([0, 1, 2**40]),  # ids near the rows (the table), or spread (the search)
)
def test_link_equals_the_loop(rows, spread) -> None:
    corr = [c if c < 0 else c * (spread or 1) + (5 if spread == 1 else 0) for c, _ in rows]
    gpu_side = [g for _, g in rows]
    got = _link(np.array(corr, np.int64), np.array(gpu_side, bool))
    assert got.tolist() == _loop(corr, gpu_side)
