"""collectors.arrays: the fast paths return exactly what numpy's own calls return."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from collectors.arrays import sort_runs, sorted_unique


@given(hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint8, np.bool_]), st.integers(0, 300)))
def test_sorted_unique_of_integer_arrays_equals_np_unique(a: np.ndarray) -> None:
    got = sorted_unique(a)
    want = np.unique(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "values",
    [
        np.array([1.0, np.nan, 0.5, np.nan, 1.0]),  # numpy collapses the NaNs
        np.array(["b", "a", "b"], dtype=object),
        np.array(["b", "a", "b"]),
        np.zeros(0, np.int64),
    ],
)
def test_sorted_unique_of_other_arrays_equals_np_unique(values: np.ndarray) -> None:
    got = sorted_unique(values)
    want = np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_sorted_unique_does_not_return_its_input() -> None:
    a = np.array([3, 1, 2], np.int64)
    out = sorted_unique(a)
    out[0] = 99
    assert a.tolist() == [3, 1, 2]


@given(st.lists(hnp.arrays(np.int64, st.integers(0, 50)), min_size=0, max_size=4))
def test_sort_runs_of_concatenated_sorted_arrays_equals_np_sort(parts: list[np.ndarray]) -> None:
    runs = [np.sort(p) for p in parts]
    values = np.concatenate(runs) if runs else np.zeros(0, np.int64)
    np.testing.assert_array_equal(sort_runs(values), np.sort(values))
