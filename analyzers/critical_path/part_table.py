"""The table form of a :class:`~analyzers.critical_path.rank_graph.RankGraph` (one rank's part
of the step graph): what the engine's workers send back and the results cache stores, about 25
bytes per edge (docs/critical-path.md §7).  :func:`part_from_table` inverts :func:`part_table`
exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.critical_path.rank_graph import RankGraph
from collectors.model import object_values

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


def _cat(*parts: object) -> pd.Categorical[str]:
    """One categorical column of *parts* (object arrays or lists of str; None → ""), its
    categories sorted (as ``pd.Categorical`` of the strings; built from the distinct values so
    that no per-row string conversion is made)."""
    arrays = [np.asarray(x, dtype=object).reshape(-1) for x in parts]
    values = np.concatenate(arrays) if arrays else np.zeros(0, object)
    codes, uniques = pd.factorize(values)
    strings = ["" if u is None else str(u) for u in uniques]
    if (codes < 0).any():
        strings.append("")
        codes = np.where(codes < 0, len(strings) - 1, codes)
    categories = sorted(set(strings))
    where = {c: i for i, c in enumerate(categories)}
    remap = np.asarray([where[c] for c in strings], dtype=np.int64)
    return pd.Categorical.from_codes(
        remap[codes] if len(codes) else codes, categories=pd.Index(categories)
    )


def part_table(p: RankGraph) -> pd.DataFrame:
    """*p* as one table (:data:`PART_COLUMNS`; about 30 bytes per edge)."""
    has_in = np.zeros(p.n_nodes, bool)
    has_in[p.dst] = True
    sources = np.flatnonzero(~has_in)
    n, m, s, c = len(sources), len(p.src), len(p.step_num), len(p.coll_key)
    blank = np.full(1 + n, "", dtype=object)
    no_step = np.full(s, "", dtype=object)
    facts = [" ".join(repr(float(x)) for x in f) for f in p.coll_facts.tolist()]
    i32 = np.int32
    row = np.repeat(np.arange(len(ROWS), dtype=np.int8), [1, n, m, s, c])
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
            "cause": _cat(blank, p.cause, no_step, facts),
            "detail": _cat(blank, p.detail, no_step, p.coll_key),
            "name": _cat(blank, p.name, no_step, p.coll_kernel),
            "category": _cat(blank, p.category, no_step, p.coll_name),
            "flag_launching": np.concatenate(
                [np.zeros(1 + n, bool), p.launching, np.zeros(s + c, bool)]
            ),
            "flag_unresolved": np.concatenate(
                [np.zeros(1 + n, bool), p.unresolved, np.zeros(s + c, bool)]
            ),
        },
        columns=list(PART_COLUMNS),
    )


def part_from_table(df: pd.DataFrame) -> RankGraph:
    """The part a :func:`part_table` holds."""
    row = object_values(df["row"])
    head = df[row == "part"]
    nodes, edges = df[row == "node"], df[row == "edge"]
    steps, colls = df[row == "step"], df[row == "collective"]
    node_time = np.zeros(int(head["t"].iloc[0]), np.int64)
    node_time[nodes["a"].to_numpy(np.int64)] = nodes["t"].to_numpy(np.int64)
    dst = edges["b"].to_numpy(np.int64)
    node_time[dst] = edges["t"].to_numpy(np.int64)
    facts = [[float(x) for x in str(f).split()] for f in colls["cause"].astype(object)]
    return RankGraph(
        rank=int(head["a"].iloc[0]),
        node_time=node_time,
        src=edges["a"].to_numpy(np.int64),
        dst=dst,
        kind=edges["kind"].to_numpy(np.int64),
        cause=object_values(edges["cause"]),
        detail=object_values(edges["detail"]),
        name=object_values(edges["name"]),
        category=object_values(edges["category"]),
        launching=edges["flag_launching"].to_numpy(bool),
        unresolved=edges["flag_unresolved"].to_numpy(bool),
        step_num=steps["t"].to_numpy(np.int64),
        step_start=steps["a"].to_numpy(np.int64),
        step_done=steps["b"].to_numpy(np.int64),
        coll_key=object_values(colls["detail"]),
        coll_name=object_values(colls["category"]),
        coll_kernel=object_values(colls["name"]),
        coll_start=colls["a"].to_numpy(np.int64),
        coll_end=colls["b"].to_numpy(np.int64),
        coll_facts=np.asarray(facts, np.float64).reshape(-1, 3),
    )
