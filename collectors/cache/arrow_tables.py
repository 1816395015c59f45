"""Trace tables as Arrow record batches and back, exactly (docs/scale.md §2).

int64/float64 columns are stored as is; categoricals as Arrow dictionaries with the pandas
dtype of their categories recorded; object columns (``comm_args``, ``payload``,
``input_dims``...) of strings and None as Arrow dictionaries of their distinct strings (read
back as one object array whose equal strings are one Python string, as the Kineto reader's
are), of anything else as exact JSON text (:mod:`collectors.cache.exact_json`).  A value that
cannot be stored exactly raises :class:`~collectors.cache.errors.UnencodableError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

from collectors.cache.errors import CacheCorruptError, UnencodableError
from collectors.cache.exact_json import dumps_exact, loads_exact


def _object_column(values: np.ndarray) -> tuple[pa.Array, dict[str, Any]]:
    kinds = {type(v) for v in values}
    if kinds <= {type(None)}:
        return pa.nulls(len(values), pa.string()), {"kind": "none"}
    if kinds <= {str, type(None)}:
        strings = pa.array(values, type=pa.string(), from_pandas=False)
        return strings.dictionary_encode(), {"kind": "str"}
    enc = [None if v is None else dumps_exact(v) for v in values]
    return pa.array(enc, type=pa.string()), {"kind": "json"}


def _categorical_column(s: pd.Series) -> tuple[pa.Array, dict[str, Any]]:
    cats = s.cat.categories
    spec: dict[str, Any] = {
        "kind": "category",
        "categories_dtype": str(cats.dtype),
        "ordered": bool(s.cat.ordered),
    }
    if cats.dtype.kind in "iuf":
        dictionary = pa.array(cats.to_numpy())
    else:
        values = cats.to_numpy(dtype=object)
        if any(type(v) is not str for v in values):
            raise UnencodableError(f"categories of {s.name!r} are not all strings")
        dictionary = pa.array(values, type=pa.string())
    codes = s.cat.codes.to_numpy()
    spec["codes_dtype"] = str(codes.dtype)
    indices = pa.array(codes.astype(np.int32), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary), spec


def table_to_arrow(df: pd.DataFrame) -> tuple[pa.RecordBatch, dict[str, dict[str, Any]]]:
    """One trace table as an Arrow table, and per column how to rebuild it exactly.

    Raises:
        UnencodableError: a column holds values that cannot be stored exactly.
    """
    arrays = []
    specs: dict[str, dict[str, Any]] = {}
    for col in df.columns:
        s = df[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            arr, spec = _categorical_column(s)
        elif isinstance(s.dtype, pd.StringDtype):
            arr = pa.array(s.to_numpy(dtype=object, na_value=None), type=pa.string())
            spec = {"kind": "pdstr", "dtype": str(s.dtype)}
        elif s.dtype == np.dtype(object):
            arr, spec = _object_column(s.to_numpy())
        elif s.dtype.kind in "iufb":
            arr, spec = pa.array(s.to_numpy()), {"kind": "numpy", "dtype": str(s.dtype)}
        else:
            raise UnencodableError(f"column {col!r} has dtype {s.dtype}")
        arrays.append(arr)
        specs[str(col)] = spec
    if not isinstance(df.index, pd.RangeIndex) or df.index.start != 0 or df.index.step != 1:
        raise UnencodableError("table index is not a RangeIndex from 0")
    return pa.RecordBatch.from_arrays(arrays, names=[str(c) for c in df.columns]), specs


def _column_from_arrow(arr: pa.ChunkedArray, spec: dict[str, Any], n: int) -> Any:
    kind = spec["kind"]
    if kind == "numpy":
        return arr.to_numpy().astype(spec["dtype"], copy=False)
    if kind == "category":
        if arr.num_chunks != 1:
            raise CacheCorruptError("a categorical column is not one dictionary chunk")
        chunk = arr.chunk(0)
        codes = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        cats_dtype = spec["categories_dtype"]
        dictionary = chunk.dictionary
        if cats_dtype in ("object",) or cats_dtype.startswith(("str", "string")):
            values = dictionary.to_pylist()
        else:
            values = dictionary.to_numpy(zero_copy_only=False)
        cats = pd.Index(values, dtype=cats_dtype)
        cat = pd.Categorical.from_codes(
            codes.astype(spec["codes_dtype"]), categories=cats, ordered=spec["ordered"]
        )
        return cat
    if kind == "pdstr":
        got = arr.to_pandas().array
        if str(got.dtype) == spec["dtype"]:
            return got
        return pd.array(arr.to_pylist(), dtype=spec["dtype"])  # pragma: no cover - other pandas
    out = np.empty(n, dtype=object)
    if kind == "none" or arr.null_count == n:
        out[:] = None
        return pd.Series(out, dtype=object, copy=False)
    if kind == "str":
        at = 0
        for chunk in arr.chunks:  # a dictionary's distinct strings, taken by its indices
            out[at : at + len(chunk)] = _strings(chunk)
            at += len(chunk)
        return pd.Series(out, dtype=object, copy=False)
    values = arr.to_pylist()
    if kind == "json":
        values = [None if v is None else loads_exact(v) for v in values]
    out[:] = values
    return pd.Series(out, dtype=object, copy=False)  # a Series: no str-dtype inference


def _strings(chunk: pa.Array) -> np.ndarray | list[Any]:
    """The strings and None of a ``str`` column's chunk: a dictionary's distinct strings taken
    by its indices (one Python string per distinct value), a plain string array's values."""
    if not pa.types.is_dictionary(chunk.type):
        return chunk.to_pylist()
    words = np.empty(len(chunk.dictionary) + 1, dtype=object)
    words[:-1] = chunk.dictionary.to_pylist()  # the last entry: None, for a missing value
    return words[chunk.indices.fill_null(len(words) - 1).to_numpy()]


def table_from_arrow(
    tbl: pa.Table | pa.RecordBatch, specs: dict[str, dict[str, Any]]
) -> pd.DataFrame:
    """The DataFrame :func:`table_to_arrow` was given (same columns, dtypes and values)."""
    if isinstance(tbl, pa.RecordBatch):
        tbl = pa.Table.from_batches([tbl])
    n = tbl.num_rows
    index = pd.RangeIndex(n)
    data = {}
    for name in specs:
        col = _column_from_arrow(tbl.column(name), specs[name], n)
        if isinstance(col, pd.Series):
            col.index = index
        data[name] = col
    return pd.DataFrame(data, index=index)


def ipc_bytes(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)  # one batch even when empty: keeps the dictionaries
    return bytes(sink.getvalue())


def read_ipc(data: bytes) -> pa.Table:
    return ipc.open_file(pa.BufferReader(data)).read_all()
