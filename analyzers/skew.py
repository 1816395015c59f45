"""Cross-rank matching of collectives: arrival skew vs transfer time, straggler per step.

docs/communication.md §7.  The same collective is found on every rank by its key:

1. ``(pg_name, seq)`` when every rank records ``Seq`` for that process group (torch 2026+);
2. else ``comms_id`` when every rank records ``Comms Id``;
3. else ``(pg_name, ordinal)``: the n-th collective issued on that process group (``ordinal`` of
   the collectives table; rows without a process group share the group ``?``).

Only collectives with GPU work in each rank's analysis window are matched; a key must be found
on at least two ranks.  A collective's kernel cannot finish on any rank before the last rank has
joined, so the kernels of one collective end together and a rank that arrives early spends the
difference waiting inside its kernel.  With ``d_r`` the GPU duration on rank ``r``:

- ``transfer_ns`` = min_r d_r — the last rank to arrive waits for nobody;
- ``wait_ns[r]`` = d_r − transfer_ns — time rank r spent waiting for the slowest rank;
- ``arrival_skew_ns`` = max_r d_r − min_r d_r;
- ``late_rank`` = argmin_r d_r (lowest rank on ties): the rank everyone waited for;
- ``start_spread_ns`` = max_r start − min_r start on the traces' own clocks (no clock-offset
  correction: meaningful only when the hosts' clocks agree).

These need no clock alignment.  Per step (the step number the ranks report for the collective,
most common value): ``caused_wait_ns[r]`` = Σ over the step's collectives whose late rank is r of
Σ wait_ns; the **straggler** is the rank with the largest caused wait (None when nobody waited).

    ===========================  ==========  =========  ==========  ========  =========
    all_reduce on 2 ranks        d_0, d_1    transfer   skew        late      wait r0
    ===========================  ==========  =========  ==========  ========  =========
    r0 [100,300) r1 [250,300)    200, 50     50         150         1         150
    ===========================  ==========  =========  ==========  ========  =========
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers.comm import window_collectives
from analyzers.options import AnalysisOptions

if TYPE_CHECKING:
    from collectors.model import Trace

MATCH_COLUMNS = (
    "key",
    "match_by",
    "collective",
    "pg_name",
    "n_ranks",
    "ranks",
    "step",
    "message_bytes",
    "consistent",
    "transfer_ns",
    "arrival_skew_ns",
    "late_rank",
    "start_spread_ns",
)


@dataclass(frozen=True)
class Skew:
    """Cross-rank comparison of the collectives of a run."""

    matched: pd.DataFrame
    """One row per collective found on ≥ 2 ranks (columns :data:`MATCH_COLUMNS`)."""
    waits: pd.DataFrame
    """key, rank, start_ns, duration_ns, wait_ns: one row per (matched collective, rank)."""
    per_rank: pd.DataFrame
    """rank, collectives, wait_ns (Σ), transfer_ns (Σ of the matched collectives' transfer),
    late_count (how often the rank was the last to arrive), unmatched (its window collectives
    found on no other rank)."""
    per_step: pd.DataFrame
    """step, collectives, arrival_skew_ns (Σ), transfer_ns (Σ), straggler (rank or -1),
    straggler_caused_wait_ns."""
    mismatched: int
    """Matched keys whose collective type (or size, for fixed-size collectives) differs between
    ranks: a sign that ordinal matching went wrong (kept in ``matched`` with consistent=False,
    left out of the sums)."""


_FIXED_SIZE = frozenset({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"})


def _keys(c: pd.DataFrame, by: str) -> pd.Series:
    pg = c["pg_name"].astype(object).where(c["pg_name"].notna(), "?").astype(str)
    if by == "seq":
        return pg + "#seq" + c["seq"].astype(str)
    if by == "comms_id":
        return "id:" + c["comms_id"].astype(str)
    return pg + "#" + c["ordinal"].astype(str)


def _match_mode(tables: list[pd.DataFrame]) -> dict[str, str]:
    """Per process group: ``seq`` / ``comms_id`` when every rank has it, else ``ordinal``."""
    modes: dict[str, str] = {}
    pgs = set()
    for t in tables:
        pgs |= set(t["pg_name"].astype(object).where(t["pg_name"].notna(), "?").astype(str))
    for pg in pgs:
        subs = [
            t[t["pg_name"].astype(object).where(t["pg_name"].notna(), "?").astype(str) == pg]
            for t in tables
        ]
        subs = [s for s in subs if len(s)]
        if subs and all((s["seq"] >= 0).all() for s in subs):
            modes[pg] = "seq"
        elif subs and all(s["comms_id"].notna().all() for s in subs):
            modes[pg] = "comms_id"
        else:
            modes[pg] = "ordinal"
    return modes


def cross_rank_skew(traces: Sequence[Trace], options: AnalysisOptions | None = None) -> Skew:
    """Match the window's collectives across *traces* and measure skew (module docstring)."""
    options = options or AnalysisOptions()
    tables = []
    for t in traces:
        c = window_collectives(t, options)
        tables.append(c[c["n_gpu_rows"] > 0].assign(rank=t.rank))
    modes = _match_mode(tables)
    rows = []
    for c in tables:
        if c.empty:
            continue
        pg = c["pg_name"].astype(object).where(c["pg_name"].notna(), "?").astype(str)
        by = pg.map(modes)
        match_key = pd.Series("", index=c.index, dtype=object)
        for mode in ("seq", "comms_id", "ordinal"):
            mask = (by == mode).to_numpy()
            if mask.any():
                match_key[mask] = _keys(c[mask], mode)
        rows.append(c.assign(key=match_key.to_numpy(), match_by=by.to_numpy()))
    empty_w = pd.DataFrame(columns=["key", "rank", "start_ns", "duration_ns", "wait_ns"])
    if not rows:
        return _result(pd.DataFrame(columns=list(MATCH_COLUMNS)), empty_w, tables)
    allr = pd.concat(rows, ignore_index=True)
    allr = allr.drop_duplicates(["key", "rank"], keep="first")
    counts = allr.groupby("key")["rank"].transform("size")
    allr = allr[counts >= 2]
    if allr.empty:
        return _result(pd.DataFrame(columns=list(MATCH_COLUMNS)), empty_w, tables)

    matched = []
    waits = []
    for key, grp in allr.groupby("key", sort=False):
        grp = grp.sort_values("rank")
        d = grp["duration_ns"].to_numpy(dtype=np.int64)
        st = grp["start_ns"].to_numpy(dtype=np.int64)
        ranks = grp["rank"].to_numpy(dtype=np.int64)
        transfer = int(d.min())
        late = int(ranks[int(np.argmin(d))])
        colls = set(grp["collective"].dropna())
        coll = next(iter(colls)) if len(colls) == 1 else None
        sizes = set(grp["message_bytes"][grp["message_bytes"] >= 0])
        consistent = len(colls) <= 1 and not (coll in _FIXED_SIZE and len(sizes) > 1)
        steps = grp["step"][grp["step"] >= 0]
        step = int(steps.mode().min()) if len(steps) else -1
        matched.append(
            {
                "key": key,
                "match_by": grp["match_by"].iloc[0],
                "collective": coll,
                "pg_name": grp["pg_name"].iloc[0],
                "n_ranks": len(grp),
                "ranks": tuple(int(r) for r in ranks),
                "step": step,
                "message_bytes": int(max(sizes)) if sizes else -1,
                "consistent": consistent,
                "transfer_ns": transfer,
                "arrival_skew_ns": int(d.max() - d.min()),
                "late_rank": late,
                "start_spread_ns": int(st.max() - st.min()),
            }
        )
        for r, s0, dd in zip(ranks, st, d, strict=True):
            waits.append((key, int(r), int(s0), int(dd), int(dd - transfer)))
    m = pd.DataFrame(matched, columns=list(MATCH_COLUMNS))
    w = pd.DataFrame(waits, columns=["key", "rank", "start_ns", "duration_ns", "wait_ns"])
    return _result(m, w, tables)


def _result(matched: pd.DataFrame, waits: pd.DataFrame, tables: list[pd.DataFrame]) -> Skew:
    ok = matched[matched["consistent"].astype(bool)] if len(matched) else matched
    w_ok = waits[waits["key"].isin(ok["key"])] if len(waits) else waits
    per_rank = []
    for c in tables:
        if c.empty:
            continue
        r = int(c["rank"].iloc[0])
        mine = w_ok[w_ok["rank"] == r]
        transfer = ok.set_index("key")["transfer_ns"].reindex(mine["key"]).sum() if len(ok) else 0
        n_matched = int((waits["rank"] == r).sum()) if len(waits) else 0
        per_rank.append(
            {
                "rank": r,
                "collectives": len(mine),
                "wait_ns": int(mine["wait_ns"].sum()),
                "transfer_ns": int(transfer),
                "late_count": int((ok["late_rank"] == r).sum()) if len(ok) else 0,
                "unmatched": len(c) - n_matched,
            }
        )
    pr = pd.DataFrame(
        per_rank,
        columns=["rank", "collectives", "wait_ns", "transfer_ns", "late_count", "unmatched"],
    )
    steps = []
    if len(ok):
        total_wait = w_ok.groupby("key")["wait_ns"].sum()
        okk = ok.assign(total_wait=ok["key"].map(total_wait).fillna(0).astype(np.int64))
        step: Any
        for step, grp in okk.groupby("step", sort=True):
            caused = grp.groupby("late_rank")["total_wait"].sum()
            best = int(caused.max()) if len(caused) else 0
            straggler = int(caused[caused == best].index.min()) if best > 0 else -1
            steps.append(
                {
                    "step": int(step),
                    "collectives": len(grp),
                    "arrival_skew_ns": int(grp["arrival_skew_ns"].sum()),
                    "transfer_ns": int(grp["transfer_ns"].sum()),
                    "straggler": straggler,
                    "straggler_caused_wait_ns": best if straggler >= 0 else 0,
                }
            )
    ps = pd.DataFrame(
        steps,
        columns=[
            "step",
            "collectives",
            "arrival_skew_ns",
            "transfer_ns",
            "straggler",
            "straggler_caused_wait_ns",
        ],
    )
    mism = int((~matched["consistent"].astype(bool)).sum()) if len(matched) else 0
    return Skew(matched=matched, waits=waits, per_rank=pr, per_step=ps, mismatched=mism)
