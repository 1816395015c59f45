"""The table form of a :class:`~analyzers.critical_path.rank_graph.RankGraph` (one rank's part
of the step graph): what the engine's workers send back and the results cache stores, about 25
bytes per edge (docs/critical-path.md §7).  :func:`part_from_table` inverts :func:`part_table`
exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzers.critical_path.labels import distinct
from analyzers.critical_path.rank_graph import RankGraph

PART_COLUMNS = (
    "row",
    "a",
    "b",
    "t",
    "kind",
    "cause",
    "detail",
    "name",
    "category",
    "flag_launching",
    "flag_unresolved",
)
"""Columns of :func:`part_table`, one row per: ``part`` (first row; a = rank, t = node
count), ``edge`` (a → b, t = the time of node b, kind, labels, flags), ``node`` (a node no edge
ends in: a = id, t = time), ``step`` (a = start node, b = completion node, t = number),
``collective`` (a / b = kernel start / end node, detail = key, name = kernel, category =
collective, cause = message bytes, group size and link peak GB/s as exact float reprs)."""
ROWS = ("part", "node", "edge", "step", "collective")
LABEL_COLUMNS = ("cause", "detail", "name", "category")


def _cat(labels: np.ndarray, codes: np.ndarray, n_blank: int, n_mid: int, tail: object) -> Any:
    """One categorical column: *n_blank* ``""``, the *labels* of *codes*, *n_mid* ``""``, then
    the strings *tail* (None → ""); its categories the sorted distinct strings (each label
    string made once, not once per row)."""
    tail_s = ["" if t is None else str(t) for t in np.asarray(tail, dtype=object).reshape(-1)]
    used = np.flatnonzero(np.bincount(codes, minlength=len(labels)) if len(codes) else [])
    present = [str(x) for x in labels[used].tolist()]
    categories = sorted({"", *present, *tail_s})
    where = {c: i for i, c in enumerate(categories)}
    code = np.int16 if len(categories) < 2**15 else np.int32  # as pandas stores them
    remap = np.zeros(len(labels), code)
    remap[used] = [where[c] for c in present]
    out = np.concatenate(
        [
            np.full(n_blank, where[""], code),
            remap[codes],
            np.full(n_mid, where[""], code),
            np.asarray([where[t] for t in tail_s], code),
        ]
    )
    # every code is a position in the categories by construction: no validation pass
    return pd.Categorical.from_codes(out, categories=pd.Index(categories), validate=False)


def part_table(p: RankGraph) -> pd.DataFrame:
    """*p* as one table (:data:`PART_COLUMNS`; about 30 bytes per edge)."""
    has_in = np.zeros(p.n_nodes, bool)
    has_in[p.dst] = True
    sources = np.flatnonzero(~has_in)
    n, m, s, c = len(sources), len(p.src), len(p.step_num), len(p.coll_key)
    facts = [" ".join(repr(float(x)) for x in f) for f in p.coll_facts.tolist()]
    i32 = np.int32
    row = np.repeat(np.arange(len(ROWS), dtype=np.int8), [1, n, m, s, c])
    lab = p.labels
    return pd.DataFrame(
        {
            "row": pd.Categorical.from_codes(row, categories=pd.Index(list(ROWS))),
            "a": np.concatenate([[p.rank], sources, p.src, p.step_start, p.coll_start]).astype(i32),
            "b": np.concatenate([[-1], np.full(n, -1), p.dst, p.step_done, p.coll_end]).astype(i32),
            "t": np.concatenate(
                [
                    [p.n_nodes],
                    p.node_time[sources],
                    p.node_time[p.dst],
                    p.step_num,
                    np.zeros(c, np.int64),
                ]
            ).astype(np.int64),
            "kind": np.concatenate([np.full(1 + n, -1), p.kind, np.full(s + c, -1)]).astype(
                np.int8
            ),
            "cause": _cat(lab, p.cause_code, 1 + n, s, facts),
            "detail": _cat(lab, p.detail_code, 1 + n, s, p.coll_key),
            "name": _cat(lab, p.name_code, 1 + n, s, p.coll_kernel),
            "category": _cat(lab, p.category_code, 1 + n, s, p.coll_name),
            "flag_launching": np.concatenate(
                [np.zeros(1 + n, bool), p.launching, np.zeros(s + c, bool)]
            ),
            "flag_unresolved": np.concatenate(
                [np.zeros(1 + n, bool), p.unresolved, np.zeros(s + c, bool)]
            ),
        },
        columns=list(PART_COLUMNS),
    )


def _rows(df: pd.DataFrame) -> dict[str, slice | np.ndarray]:
    """Per kind of row (:data:`ROWS`), its rows: a slice where they are contiguous (as
    :func:`part_table` writes them), else their positions."""
    code = np.asarray(df["row"].cat.codes.to_numpy(), np.int64)
    out: dict[str, slice | np.ndarray] = {}
    for i, r in enumerate(df["row"].cat.categories.tolist()):
        at = np.flatnonzero(code == i)
        contiguous = len(at) and at[-1] - at[0] + 1 == len(at)
        out[str(r)] = slice(int(at[0]), int(at[-1]) + 1) if contiguous else at
    return out


def part_from_table(df: pd.DataFrame) -> RankGraph:
    """The part a :func:`part_table` holds (its labels as codes into one table of the distinct
    strings of the four label columns)."""
    rows = _rows(df)
    col = {c: df[c].to_numpy() for c in ("a", "b", "t", "kind", "flag_launching")}
    col["flag_unresolved"] = df["flag_unresolved"].to_numpy()

    def at(c: str, r: str, dtype: Any = np.int64) -> np.ndarray:
        return np.asarray(col[c][rows.get(r, slice(0, 0))], dtype)

    def strings(c: str, r: str) -> list[str]:
        cats = df[c].cat.categories.to_numpy(dtype=object)
        return [str(x) for x in cats[df[c].cat.codes.to_numpy()[rows.get(r, slice(0, 0))]]]

    node_time = np.zeros(int(at("t", "part")[0]), np.int64)
    node_time[at("a", "node")] = at("t", "node")
    dst = at("b", "edge", np.int32)
    node_time[dst] = at("t", "edge")
    labels = [df[c].cat.categories.to_numpy(dtype=object) for c in LABEL_COLUMNS]
    canon, table = distinct([str(x) for cats in labels for x in cats.tolist()])
    base = np.cumsum([0, *(len(x) for x in labels)])
    codes = [
        canon[b:][df[c].cat.codes.to_numpy()[rows.get("edge", slice(0, 0))]]
        for c, b in zip(LABEL_COLUMNS, base.tolist(), strict=False)
    ]
    facts = [[float(x) for x in f.split()] for f in strings("cause", "collective")]
    return RankGraph(
        rank=int(at("a", "part")[0]),
        node_time=node_time,
        src=at("a", "edge", np.int32),
        dst=dst,
        kind=at("kind", "edge", np.int8),
        labels=table,
        cause_code=codes[0],
        detail_code=codes[1],
        name_code=codes[2],
        category_code=codes[3],
        launching=at("flag_launching", "edge", bool),
        unresolved=at("flag_unresolved", "edge", bool),
        step_num=at("t", "step"),
        step_start=at("a", "step"),
        step_done=at("b", "step"),
        coll_key=np.asarray(strings("detail", "collective"), dtype=object),
        coll_name=np.asarray(strings("category", "collective"), dtype=object),
        coll_kernel=np.asarray(strings("name", "collective"), dtype=object),
        coll_start=at("a", "collective"),
        coll_end=at("b", "collective"),
        coll_facts=np.asarray(facts, np.float64).reshape(-1, 3),
    )
