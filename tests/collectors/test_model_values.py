"""collectors.model.object_values / str_values give exactly pandas' own ``astype(object)`` and
``astype(str)`` of a column (made once per category of a categorical)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from collectors.model import object_values, str_values

COLUMNS = {
    "categorical strings with a missing value": pd.Series(pd.Categorical(["a", None, "b", "a"])),
    "string dtype": pd.Series(["x", None], dtype="str"),
    "categorical numbers": pd.Series(pd.Categorical([1, 2, None])),
    "empty categorical": pd.Series(pd.Categorical([], categories=pd.Index([], dtype=str))),
    "object strings": pd.Series(["p", "q"], dtype=object),
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
