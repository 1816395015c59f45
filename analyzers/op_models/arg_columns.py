"""The host table's recorded-argument columns (``input_dims``, ``input_types``,
``concrete_inputs``, ``input_strides``) read for the op models: as codes, so that a model is
called once per distinct value (:func:`arg_codes`), and as the texts the cost tables show
(:func:`texts_at`), each without a Python object per row where the column is one of strings
and missing values."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np
import pandas as pd


def arg_codes(
    host: pd.DataFrame, column: str, rows: np.ndarray
) -> tuple[np.ndarray, list[Any]] | None:
    """``(codes, values)`` of *column* at *rows*, ``values[code]`` being what the column's
    ``to_numpy()`` holds there (a missing value: NaN in pandas' string column, None in the
    model's object column; None for every row of an absent column); None for a column of
    anything else (:func:`string_codes`: then the rows are keyed one by one)."""
    if column not in host:
        return np.zeros(len(rows), dtype=np.int64), [None]
    coded = string_codes(host[column].take(rows))
    if coded is None:
        return None
    codes, uniques, missing = coded
    return np.where(codes < 0, len(uniques), codes), [*uniques, missing]


def string_codes(col: pd.Series) -> tuple[np.ndarray, list[str], Any] | None:
    """``(codes, distinct strings, missing value)`` of a column of strings: pandas' string
    column (missing: NaN) or the model's object column of str and None (missing: None, also
    for a column of None only); code −1 marks a missing row.  None for any other column (an
    object column holding anything else, NaN included)."""
    if isinstance(col.dtype, pd.StringDtype) and col.dtype.na_value is np.nan:
        codes, uniques = pd.factorize(col)
        return np.asarray(codes, np.int64), list(uniques), np.nan
    if col.dtype != object:
        return None
    values = col.to_numpy()
    try:
        raw, distinct = pd.factorize(values)
    except TypeError:  # unhashable values
        return None
    strings = distinct.tolist()
    if not all(type(u) is str for u in strings):
        return None
    codes = np.asarray(raw, np.int64)
    gaps = codes < 0
    if gaps.any() and not all_none(values[gaps]):  # NaN, not None, somewhere
        return None
    return codes, strings, None


def inferred(values: list[Any]) -> Any:
    """The column ``pd.DataFrame`` infers from the list *values*, built without a Python
    object per row where it can: all strings → pandas' string column, from one pyarrow string
    per distinct value; all ints within int64 or all bools → their numpy array; anything else
    → the list itself."""
    if not values:
        return values
    kind = type(values[0])
    if kind is str:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        if (codes >= 0).all() and all(type(u) is str for u in uniques):
            return pd.Series(pd.Categorical.from_codes(codes, pd.Index(uniques))).astype("str")
    elif (kind is int or kind is bool) and all(type(v) is kind for v in values):
        arr = np.asarray(values)
        if arr.dtype == (np.int64 if kind is int else np.bool_):
            return arr
    return values


def names_at(col: pd.Series, rows: np.ndarray) -> Any:
    """The column pandas infers from ``col.take(rows).tolist()``: for a categorical of
    strings, taken as pandas' string column without a Python object per row."""
    if isinstance(col.dtype, pd.CategoricalDtype) and isinstance(
        col.cat.categories.dtype, pd.StringDtype
    ):
        return col.take(rows).astype("str").reset_index(drop=True)
    return inferred(col.take(rows).tolist())


def all_none(values: np.ndarray) -> bool:
    """Every value of an object array is None (not NaN, not a string)."""
    return bool((values == np.full(1, None, dtype=object)).all())


def texts_at(host: pd.DataFrame, column: str, rows: np.ndarray) -> Any:
    """The column pandas infers from :func:`texts`: for a pyarrow string column, the values
    taken with "" for a missing one (what :func:`text` gives) without a Python object per
    row."""
    if column in host and len(rows):
        col = host[column]
        if isinstance(col.dtype, pd.StringDtype) and col.dtype.na_value is np.nan:
            return col.take(rows).fillna("").reset_index(drop=True)
        coded = string_codes(col.take(rows))
        if coded is not None:  # the model's object column of str and None
            codes, uniques, _ = coded
            if not uniques:
                return [""] * len(rows)  # None (not recorded): "" each
            if "" not in uniques:
                uniques.append("")
            codes[codes < 0] = uniques.index("")
            return pd.Series(pd.Categorical.from_codes(codes, pd.Index(uniques))).astype("str")
    return inferred(texts(host, column, rows))


def texts(host: pd.DataFrame, column: str, rows: np.ndarray) -> list[str]:
    """:func:`text` of *column*'s value at each of *rows* ("" when the table lacks it), once
    per distinct value."""
    if column not in host:
        return [""] * len(rows)
    values = host[column].take(rows)
    if not isinstance(values.dtype, pd.StringDtype):  # objects (lists, numbers): one by one
        return [text(v) for v in values.tolist()]
    codes, uniques = pd.factorize(values)
    shown = [text(v) for v in list(uniques)] + [""]
    return [shown[i] for i in codes.tolist()]


def text(v: Any) -> str:
    """A recorded argument as the cost tables show it: a string as it is, "" for a missing
    value, anything else as compact JSON."""
    if type(v) is str:
        return v
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (str, bytes)):
        return v.decode() if isinstance(v, bytes) else v
    return msgspec.json.encode(v).decode()
