"""Distributions per group: the sort by (group, value) and the observed quantiles against
numpy's own ``lexsort`` and ``quantile(method="inverted_cdf")``, on random groups, including
values whose range does not fit the combined key."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.distributions import distribution, group_distributions, sorted_by_group

values = st.one_of(st.integers(-(10**6), 10**6), st.integers(-(2**62), 2**62))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), values), max_size=60))
def test_values_sorted_by_group_are_the_lexsort_order(pairs: list[tuple[int, int]]) -> None:
    codes = np.array([c for c, _ in pairs], dtype=np.int64)
    v = np.array([x for _, x in pairs], dtype=np.int64)
    got_v, got_c = sorted_by_group(codes, v)
    order = np.lexsort((v, codes))
    assert got_v.tolist() == v[order].tolist() and got_c.tolist() == codes[order].tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**9)), min_size=1, max_size=80))
def test_group_distributions_are_each_groups_distribution(pairs: list[tuple[int, int]]) -> None:
    codes = np.array([c for c, _ in pairs], dtype=np.int64)
    v = np.array([x for _, x in pairs], dtype=np.int64)
    present = sorted(set(codes.tolist()))
    dense = np.searchsorted(present, codes)
    got = group_distributions(dense, v)
    for k, c in enumerate(present):
        want = distribution(v[codes == c])
        assert {key: int(got[key][k]) for key in want} == want
