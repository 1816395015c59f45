"""collectors.model.object_values / str_values give exactly pandas' own ``astype(object)`` and
``astype(str)`` of a column (made once per category of a categorical); str_array is the column
a DataFrame builds from str_values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from collectors.model import object_values, str_array, str_values

COLUMNS = {
    "categorical strings with a missing value": pd.Series(pd.Categorical(["a", None, "b", "a"])),
    "string dtype": pd.Series(["x", None], dtype="str"),
    "categorical numbers": pd.Series(pd.Categorical([1, 2, None])),
    "empty categorical": pd.Series(pd.Categorical([], categories=pd.Index([], dtype=str))),
    "object strings": pd.Series(["p", "q"], dtype=object),
    "categorical strings all missing": pd.Series(pd.Categorical([None, None], categories=["a"])),
}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        len(a) == len(b)
        and all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=True))
        and [type(x) for x in a] == [type(x) for x in b]
    )


@pytest.mark.parametrize("col", COLUMNS.values(), ids=COLUMNS.keys())
def test_values_equal_pandas_conversions(col: pd.Series) -> None:
    assert _same(object_values(col), np.asarray(col.astype(object).to_numpy(), dtype=object))
    assert _same(str_values(col), col.astype(str).to_numpy(dtype=object))


@pytest.mark.parametrize("col", COLUMNS.values(), ids=COLUMNS.keys())
def test_str_array_is_the_column_a_frame_builds_from_str_values(col: pd.Series) -> None:
    got = pd.DataFrame({"c": str_array(col)})["c"]
    want = pd.DataFrame({"c": str_values(col)})["c"]
    assert got.dtype == want.dtype
    pd.testing.assert_series_equal(got, want)
    assert _same(got.to_numpy(dtype=object), want.to_numpy(dtype=object))


def test_str_array_of_a_large_categorical_takes_the_pyarrow_path() -> None:
    pytest.importorskip("pyarrow")
    codes = np.arange(10_000) % 7 - 1  # -1: missing
    col = pd.Series(pd.Categorical.from_codes(codes, categories=[f"k{i}" for i in range(6)]))
    got = str_array(col)
    assert not isinstance(got, np.ndarray)  # decoded by pyarrow, not one object per row
    pd.testing.assert_series_equal(pd.Series(got), pd.Series(str_values(col)))


@pytest.mark.parametrize("categorical", [True, False], ids=["categorical", "object"])
def test_names_matching_tests_each_distinct_name_once_and_never_a_missing_one(
    categorical: bool,
) -> None:
    import re

    from collectors.model import names_matching

    values = ["gemm_tf32", "add", None, "gemm_tf32", "sgemm", "nan"]
    col = pd.Series(values, dtype="category" if categorical else object)
    seen: list[str] = []

    def match(name: str) -> object:
        seen.append(name)
        return re.search("gemm|nan", name)

    got = names_matching(col, match)
    assert got.tolist() == [True, False, False, True, True, True]
    assert sorted(seen) == ["add", "gemm_tf32", "nan", "sgemm"]  # once each, never None


def test_trace_nbytes_counts_every_column_of_the_four_tables() -> None:
    from collectors.model import Trace, TraceMeta

    ints = pd.DataFrame({"a": np.arange(10, dtype=np.int64), "b": np.zeros(10, np.float32)})
    objs = pd.DataFrame({"o": np.array([None] * 3, dtype=object)})
    cats = pd.DataFrame({"c": pd.Categorical(["x", "y"] * 2)})
    empty = pd.DataFrame({"e": np.zeros(0, np.int64)})
    t = Trace(TraceMeta(rank=0, source_format="test"), ints, objs, cats, empty)
    # 10 int64 + 10 float32; 3 pointers; 4 int8 codes + the 2 categories' own bytes; nothing
    assert t.nbytes == 80 + 40 + 24 + int(cats["c"].memory_usage(index=False))
    assert int(cats["c"].memory_usage(index=False)) >= 4
