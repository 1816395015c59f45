"""Process groups and the parallelism dimension each one serves (docs/communication.md §8).

A process group is known from the collectives table (``pg_name``, ``pg_desc``, ``pg_ranks``)
and ``distributedInfo.pg_config``.  Its dimension is decided by the first rule that applies
(``source`` says which):

1. ``description``: a word of its description names the dimension — ``tp``/``tensor`` →
   tensor, ``dp``/``data``/``fsdp``/``ddp``/``shard``/``replicate`` → data, ``pp``/``pipeline``
   → pipeline, ``ep``/``expert``/``moe`` → expert, ``cp``/``context`` → context (Megatron
   ``TENSOR_MODEL_PARALLEL_GROUP``, DeviceMesh ``mesh_tp``...);
2. ``collectives``: only point-to-point (send / recv) → pipeline; mostly all_to_all (by
   count) → expert;
3. ``rank_layout`` (needs the group's ranks): all ranks of the job → ``world``, or ``data`` when
   it is the only group that carries collectives (plain data parallelism); consecutive ranks
   (stride 1) and fewer than the world → tensor; evenly strided ranks (stride > 1) → data;
4. otherwise ``unknown``.

The rules are heuristics where no description exists: a strided group can also be a pipeline
group that only carries collectives, and tensor parallelism need not be innermost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers.collectives import collectives_table
from analyzers.comm import exposed_by, gpu_row_labels, window_collectives
from analyzers.options import AnalysisOptions

if TYPE_CHECKING:
    from collectors.model import Trace

DIMENSIONS = ("tensor", "data", "pipeline", "expert", "context", "world", "unknown")

_WORDS = {
    "tensor": ("tp", "tensor"),
    "data": ("dp", "data", "fsdp", "ddp", "shard", "replicate", "hsdp", "zero"),
    "pipeline": ("pp", "pipeline", "pipe"),
    "expert": ("ep", "expert", "moe", "etp", "edp"),
    "context": ("cp", "context"),
}

GROUP_COLUMNS = (
    "pg_name",
    "pg_desc",
    "ranks",
    "size",
    "stride",
    "calls",
    "collectives",
    "dimension",
    "source",
)


def _from_description(desc: Any) -> str | None:
    if not isinstance(desc, str) or not desc:
        return None
    words = [w for w in re.split(r"[^a-z0-9]+", desc.lower()) if w]
    for dim in ("expert", "context", "pipeline", "tensor", "data"):
        # "expert" first: Megatron's EXPERT_MODEL_PARALLEL / EXPERT_DATA_PARALLEL groups
        if any(w in _WORDS[dim] for w in words):
            return dim
    return None


def _stride(ranks: tuple[int, ...] | None) -> int:
    """Common difference of sorted ranks; 0 if not an arithmetic progression, -1 unknown."""
    if not ranks:
        return -1
    r = np.sort(np.asarray(ranks, dtype=np.int64))
    if r.size == 1:
        return 1
    d = np.diff(r)
    return int(d[0]) if (d == d[0]).all() else 0


def process_groups(
    collectives: pd.DataFrame,
    world_size: int | None = None,
    pg_config: Sequence[dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """One row per process group seen in *collectives* (columns :data:`GROUP_COLUMNS`).

    Groups listed in *pg_config* without collectives are included with ``calls`` 0.
    """
    info: dict[str, dict[str, Any]] = {}
    for pg in pg_config or []:
        if isinstance(pg, dict) and "pg_name" in pg:
            info[str(pg["pg_name"])] = {
                "pg_desc": pg.get("pg_desc"),
                "ranks": tuple(pg["ranks"]) if isinstance(pg.get("ranks"), list) else None,
                "calls": 0,
                "collectives": {},
            }
    c = collectives[collectives["pg_name"].notna()] if len(collectives) else collectives
    for name, grp in c.groupby("pg_name", sort=False) if len(c) else []:
        entry = info.setdefault(
            str(name), {"pg_desc": None, "ranks": None, "calls": 0, "collectives": {}}
        )
        descs = grp["pg_desc"].dropna()
        if entry["pg_desc"] is None and len(descs):
            entry["pg_desc"] = descs.iloc[0]
        ranks = [r for r in grp["pg_ranks"] if r]
        if entry["ranks"] is None and ranks:
            entry["ranks"] = tuple(ranks[0])
        entry["calls"] += len(grp)
        counts = grp["collective"].fillna("unknown").value_counts()
        for k, v in counts.items():
            entry["collectives"][k] = entry["collectives"].get(k, 0) + int(v)
    active = [n for n, e in info.items() if e["calls"] > 0]
    rows = []
    for name, e in info.items():
        ranks = e["ranks"]
        size = len(ranks) if ranks else -1
        stride = _stride(ranks)
        dim, src = _classify(e, size, stride, world_size, only_group=active == [name])
        rows.append(
            {
                "pg_name": name,
                "pg_desc": e["pg_desc"],
                "ranks": ranks,
                "size": size,
                "stride": stride,
                "calls": e["calls"],
                "collectives": dict(e["collectives"]),
                "dimension": dim,
                "source": src,
            }
        )
    return pd.DataFrame(rows, columns=list(GROUP_COLUMNS))


def _classify(
    e: dict[str, Any], size: int, stride: int, world: int | None, *, only_group: bool
) -> tuple[str, str]:
    dim = _from_description(e["pg_desc"])
    if dim:
        return dim, "description"
    colls: dict[str, int] = e["collectives"]
    total = sum(colls.values())
    if total:
        p2p = sum(v for k, v in colls.items() if k in ("send", "recv"))
        if p2p == total:
            return "pipeline", "collectives"
        if colls.get("all_to_all", 0) * 2 > total:
            return "expert", "collectives"
    if size > 0 and world:
        if size == world:
            return ("data", "rank_layout") if only_group else ("world", "rank_layout")
        if stride == 1:
            return "tensor", "rank_layout"
        if stride > 1:
            return "data", "rank_layout"
    return "unknown", "none"


def trace_process_groups(trace: Trace) -> pd.DataFrame:
    """:func:`process_groups` of one rank's trace (its collectives and pg_config)."""
    info = trace.meta.extra.get("distributedInfo") or {}
    return process_groups(collectives_table(trace), trace.meta.world_size, info.get("pg_config"))


def comm_by_dimension(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Per dimension: calls, bytes, GPU time, |C_d| and exposed |C_d \\ P| of the window.

    Collectives without a process group count as ``unknown``.  Columns: dimension, calls,
    bytes, time_ns, comm_ns, exposed_ns.
    """
    options = options or AnalysisOptions()
    groups = trace_process_groups(trace)
    dim_of = dict(zip(groups["pg_name"], groups["dimension"], strict=True))
    c = collectives_table(trace)
    dims = c["pg_name"].map(lambda p: dim_of.get(p, "unknown") if isinstance(p, str) else None)
    c = c.assign(dimension=dims.fillna("unknown"))
    ex = exposed_by(trace, gpu_row_labels(c, "dimension"), options)
    w = window_collectives(trace, options)
    w = w.assign(dimension=c.loc[w.index, "dimension"])
    rows = []
    by_label = ex.by_label.set_index("label")
    for dim in sorted(set(w["dimension"]) | set(by_label.index) - {"other"}):
        sub = w[w["dimension"] == dim]
        known = sub["message_bytes"] >= 0
        rows.append(
            {
                "dimension": dim,
                "calls": len(sub),
                "bytes": int(sub.loc[known, "message_bytes"].sum()) if known.any() else -1,
                "time_ns": int(sub["duration_ns"].sum()),
                "comm_ns": int(by_label["comm_ns"].get(dim, 0)),
                "exposed_ns": int(by_label["exposed_ns"].get(dim, 0)),
            }
        )
    out = pd.DataFrame(
        rows, columns=["dimension", "calls", "bytes", "time_ns", "comm_ns", "exposed_ns"]
    )
    return out.sort_values(["exposed_ns", "dimension"], ascending=[False, True]).reset_index(
        drop=True
    )
