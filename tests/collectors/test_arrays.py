"""collectors.arrays: the fast paths return exactly what numpy's own calls return."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from collectors.arrays import dense_codes, sort_runs, sorted_unique


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


@given(
    st.one_of(
        hnp.arrays(np.int64, st.integers(1, 200), elements=st.integers(-5, 40)),  # table path
        hnp.arrays(np.int64, st.integers(1, 50), elements=st.integers(-(2**62), 2**62)),
        hnp.arrays(np.uint8, st.integers(1, 50)),
        hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(allow_nan=True)),
    )
)
def test_dense_codes_equal_np_unique_inverse(a: np.ndarray) -> None:
    got = dense_codes(a)
    want = np.asarray(np.unique(a, return_inverse=True)[1], np.int64).reshape(-1)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
