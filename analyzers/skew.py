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

    matched, waits = _match_rows(allr)
    matched_df = pd.DataFrame(matched, columns=list(MATCH_COLUMNS))
    w = pd.DataFrame(waits, columns=["key", "rank", "start_ns", "duration_ns", "wait_ns"])
    return _result(matched_df, w, tables)


def _match_rows(allr: pd.DataFrame) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """One dict per key (in order of first appearance) and one wait row per (key, rank), ranks
    in order (module docstring): per-key reductions over the rows sorted by (key, rank)."""
    a = allr.assign(_k=pd.factorize(allr["key"])[0]).sort_values(["_k", "rank"], kind="stable")
    kc = a["_k"].to_numpy()
    n = len(a)
    starts = np.flatnonzero(np.r_[True, kc[1:] != kc[:-1]])
    gid = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    d = a["duration_ns"].to_numpy(dtype=np.int64)
    st = a["start_ns"].to_numpy(dtype=np.int64)
    ranks = a["rank"].to_numpy(dtype=np.int64)
    transfer = np.minimum.reduceat(d, starts)
    skew = np.maximum.reduceat(d, starts) - transfer
    spread = np.maximum.reduceat(st, starts) - np.minimum.reduceat(st, starts)
    at_min = np.flatnonzero(d == transfer[gid])  # the first (lowest rank) minimum per key
    late = ranks[at_min[np.r_[True, gid[at_min][1:] != gid[at_min][:-1]]]]
    groups = pd.RangeIndex(len(starts))
    coll = a["collective"].reset_index(drop=True).groupby(gid)
    n_colls = coll.nunique().reindex(groups, fill_value=0).to_numpy()
    first_coll = coll.first().reindex(groups).to_numpy(dtype=object)
    mb = a["message_bytes"].to_numpy()
    ok = mb >= 0
    by_size = pd.Series(mb[ok]).groupby(gid[ok])
    n_sizes = by_size.nunique().reindex(groups, fill_value=0).to_numpy()
    max_size = by_size.max().reindex(groups, fill_value=-1).to_numpy()
    step = np.full(len(starts), -1, dtype=np.int64)
    sv = a["step"].to_numpy()
    ok = sv >= 0
    if ok.any():  # the most common step, the lowest on ties
        counts = pd.DataFrame({"g": gid[ok], "s": sv[ok]}).groupby(["g", "s"]).size()
        c = counts.reset_index(name="n").sort_values(["g", "n", "s"], ascending=[True, False, True])
        c = c.drop_duplicates("g")
        step[c["g"].to_numpy()] = c["s"].to_numpy()
    keys = a["key"].to_numpy()
    match_by = a["match_by"].to_numpy()
    pg = a["pg_name"].to_numpy()
    matched = []
    rank_list = ranks.tolist()
    bounds = np.r_[starts, n].tolist()
    for i, b0 in enumerate(starts.tolist()):
        c1 = first_coll[i] if n_colls[i] == 1 else None
        matched.append(
            {
                "key": keys[b0],
                "match_by": match_by[b0],
                "collective": c1,
                "pg_name": pg[b0],
                "n_ranks": bounds[i + 1] - b0,
                "ranks": tuple(rank_list[b0 : bounds[i + 1]]),
                "step": int(step[i]),
                "message_bytes": int(max_size[i]) if n_sizes[i] else -1,
                "consistent": bool(n_colls[i] <= 1 and not (c1 in _FIXED_SIZE and n_sizes[i] > 1)),
                "transfer_ns": int(transfer[i]),
                "arrival_skew_ns": int(skew[i]),
                "late_rank": int(late[i]),
                "start_spread_ns": int(spread[i]),
            }
        )
    waits = list(
        zip(
            keys[starts][gid].tolist(),
            rank_list,
            st.tolist(),
            d.tolist(),
            (d - transfer[gid]).tolist(),
            strict=True,
        )
    )
    return matched, waits


def _per_step(ok: pd.DataFrame, w_ok: pd.DataFrame) -> list[dict[str, int]]:
    """Per step (ascending) of the consistent matches *ok*: collectives, Σ arrival skew, Σ
    transfer, and the straggler: the late rank whose collectives caused the most wait (Σ of
    their waits on every rank, *w_ok*), the lowest on ties, -1 when nobody waited."""
    keys, wait_of = pd.factorize(w_ok["key"])
    total = np.zeros(len(wait_of) + 1, dtype=np.int64)  # the last: a key without waits
    np.add.at(total, keys, w_ok["wait_ns"].to_numpy(dtype=np.int64))
    caused = total[pd.Index(wait_of).get_indexer(ok["key"])]
    steps, step_of = np.unique(ok["step"].to_numpy(dtype=np.int64), return_inverse=True)
    n = np.bincount(step_of, minlength=steps.size)
    skew = np.zeros(steps.size, dtype=np.int64)
    transfer = np.zeros(steps.size, dtype=np.int64)
    np.add.at(skew, step_of, ok["arrival_skew_ns"].to_numpy(dtype=np.int64))
    np.add.at(transfer, step_of, ok["transfer_ns"].to_numpy(dtype=np.int64))
    late = ok["late_rank"].to_numpy(dtype=np.int64)
    # Σ caused wait per (step, late rank); per step the largest, the lowest rank on ties
    pairs, pair_of = np.unique(np.stack([step_of, late]), axis=1, return_inverse=True)
    by_pair = np.zeros(pairs.shape[1], dtype=np.int64)
    np.add.at(by_pair, pair_of.reshape(-1), caused)
    o = np.lexsort((pairs[1], -by_pair, pairs[0]))
    first = o[np.r_[True, pairs[0][o][1:] != pairs[0][o][:-1]]]
    best, who = by_pair[first], pairs[1][first]
    out = []
    for i, step in enumerate(steps.tolist()):
        straggler = int(who[i]) if best[i] > 0 else -1
        out.append(
            {
                "step": step,
                "collectives": int(n[i]),
                "arrival_skew_ns": int(skew[i]),
                "transfer_ns": int(transfer[i]),
                "straggler": straggler,
                "straggler_caused_wait_ns": int(best[i]) if straggler >= 0 else 0,
            }
        )
    return out


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
    steps = _per_step(ok, w_ok) if len(ok) else []
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
