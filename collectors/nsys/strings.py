"""Resolve ``StringIds`` references of an nsys export into interned (category) strings.

Every name in an export is an integer id into ``StringIds(id, value)``: kernel
``demangledName`` / ``shortName`` / ``mangledName``, runtime ``nameId``, NVTX ``textId``,
``ThreadNames.nameId``.  Only the ids a table uses are fetched (one query, the id list passed
as a JSON array), and a column of ids becomes a pandas ``Categorical`` without building one
Python string per row.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from collectors.arrays import sorted_unique
from collectors.kinds import strip_api_version
from collectors.nsys.schema import NsysDb


def lookup(db: NsysDb, ids: np.ndarray) -> dict[int, str]:
    """``{id: value}`` for the distinct non-negative *ids* found in ``StringIds``."""
    want = sorted_unique(ids[ids >= 0]) if ids.size else ids
    if want.size == 0:
        return {}
    db.require_table("StringIds")
    db.require("StringIds", ("id", "value"))
    rows = db.rows(
        "SELECT id, value FROM StringIds WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(want.tolist()),),
    )
    return {i: _text(v) for i, v in rows if i.__class__ is int}


def _text(v: object) -> str:
    """A ``StringIds`` value as text (a BLOB decoded as UTF-8, bad bytes replaced)."""
    if v is None:
        return ""
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    return str(v)


MISSING = "<missing string {}>"
"""Name of a row whose ``StringIds`` id has no entry (``<missing string 1234>``)."""


def categorical(
    db: NsysDb,
    ids: np.ndarray,
    *,
    transform: dict[int, str] | None = None,
    strip_version: bool = False,
    missing: str | None = None,
) -> pd.Categorical[Any]:
    """A Categorical of the strings behind *ids* (``-1`` or an unknown id → missing).

    *transform*, when given, is used instead of a ``StringIds`` lookup (id → string).
    *strip_version* removes the ``_v<N>`` API-version suffix.  With *missing* (what the names
    are, e.g. ``kernel names``), an id ≥ 0 that ``StringIds`` lacks is named :data:`MISSING`
    instead, and counted in ``db.missing_strings[missing]``.
    """
    if ids.size == 0:
        return pd.Categorical([])
    inverse, uniq = pd.factorize(ids)  # hashing: no sort of the whole column
    table = lookup(db, uniq) if transform is None else transform
    values = [table.get(int(i)) for i in uniq]
    if missing is not None:
        gone = [
            j for j, (i, v) in enumerate(zip(uniq, values, strict=True)) if v is None and i >= 0
        ]
        for j in gone:
            values[j] = MISSING.format(int(uniq[j]))
        if gone:
            db.missing_strings[missing] = db.missing_strings.get(missing, 0) + len(gone)
    if strip_version:
        values = [None if v is None else strip_api_version(v) for v in values]
    # distinct ids may carry equal strings: map ids to unique category positions
    cats: dict[str, int] = {}
    code_of_uniq = np.empty(len(values), dtype=np.int64)
    for j, v in enumerate(values):
        code_of_uniq[j] = -1 if v is None else cats.setdefault(v, len(cats))
    codes = code_of_uniq[inverse]
    return pd.Categorical.from_codes(codes, categories=pd.Index(list(cats)))


def concat_categoricals(items: list[pd.Categorical | int]) -> pd.Categorical[Any]:
    """Concatenate Categoricals (an int *n* stands for *n* missing values) into one.

    Unlike ``union_categoricals`` this accepts categories of different dtypes (an all-missing
    part has object categories) and never builds one Python object per row.
    """
    cats: dict[str, int] = {}
    codes = []
    for item in items:
        if isinstance(item, int):
            codes.append(np.full(item, -1, dtype=np.int64))
            continue
        remap = np.array(
            [cats.setdefault(str(v), len(cats)) for v in item.categories], dtype=np.int64
        )
        own = np.asarray(item.codes, dtype=np.int64)
        if remap.size:
            codes.append(np.where(own < 0, -1, remap[np.maximum(own, 0)]))
        else:
            codes.append(np.full(own.size, -1, dtype=np.int64))
    all_codes = np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)
    return pd.Categorical.from_codes(all_codes, categories=pd.Index(list(cats)))
