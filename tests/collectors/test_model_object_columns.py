"""The model's object columns (a host row's recorded arguments, ``comm_args``, ``payload``) stay
``object`` as collectors/model.py defines them, a missing value None, whatever pandas would
infer: pandas ≥ 3 would store a column of strings and None as its ``str`` dtype (a copy of
every string, NaN for None)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from collectors.model import HOST_ARG_COLUMNS, annotation_table, host_table
from tests.support.env import SAMPLES


def test_a_host_table_keeps_argument_strings_and_none_as_objects() -> None:
    dims = np.array(["[[2, 3]]", None, "[[4]]"], dtype=object)
    host = host_table({"input_dims": dims, "start_ns": [0, 1, 2], "end_ns": [1, 2, 3]})
    col = host["input_dims"]
    assert col.dtype == np.dtype(object)
    assert col.tolist() == ["[[2, 3]]", None, "[[4]]"]
    assert col.to_numpy()[1] is None


def test_an_owned_object_array_is_kept_without_a_copy() -> None:
    dims = np.array(["[[1]]", None], dtype=object)
    host = host_table({"input_dims": dims, "start_ns": [0, 1], "end_ns": [1, 2]}, owned=True)
    assert np.shares_memory(host["input_dims"].to_numpy(), dims)


def test_annotation_payload_strings_stay_objects() -> None:
    table = annotation_table(
        {"name": ["a", "b"], "start_ns": [0, 1], "end_ns": [1, 2], "payload": ["p", None]}
    )
    assert table["payload"].dtype == np.dtype(object)
    assert table["payload"].tolist() == ["p", None]


def test_a_kineto_trace_with_shapes_has_object_argument_columns() -> None:
    from collectors.load import load_traces

    (t,) = load_traces([SAMPLES / "torch_cpu"])
    for c in HOST_ARG_COLUMNS:
        col = t.host[c]
        assert col.dtype == np.dtype(object), c
        values = col.to_numpy()
        assert all(v is None or type(v) is str for v in values.tolist()), c
        assert pd.notna(col).sum() > 0, c
