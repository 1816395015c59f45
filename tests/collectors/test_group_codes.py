"""The vectorised lookups behind the call-stack links equal their brute-force definition:
dense group codes of key tuples."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.linking import group_codes


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-2, 5), st.integers(0, 3), st.integers(0, 9)), min_size=1),
    st.integers(1, 3),
)
def test_group_codes_are_the_rank_of_each_key_tuple(
    rows: list[tuple[int, int, int]], n_cols: int
) -> None:
    cols = [np.array([r[i] for r in rows], np.int64) for i in range(n_cols)]
    half = len(rows) // 2
    a = [c[:half] for c in cols]
    b = [c[half:] for c in cols]
    got_a, got_b = group_codes(a if len(a) > 1 else a[0], b if len(b) > 1 else b[0])
    keys = np.stack(cols, axis=1)
    _, want = np.unique(keys, axis=0, return_inverse=True)
    want = np.asarray(want).reshape(-1)
    assert np.concatenate([got_a, got_b]).tolist() == want.tolist()
