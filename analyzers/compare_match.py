"""Matching and contributions of ``gpuscope compare`` (docs/compare.md "Contributions").

Occurrences of one view (:mod:`analyzers.compare_sides`) are aggregated per ``key`` on each
side — ``count`` (distinct calls) and ``total_ns`` (Σ time) — and the two sides are joined on
the key: a key on both sides is *matched*, on CURRENT only *added*, on BASE only *removed*.
With ``T`` the compared total of each side (step time, or GPU span; see
:mod:`analyzers.compare`), every entry's contribution is ``Δ = total_cur − total_base``
(integer ns) and

    ``ΔT = Σ matched Δ + Σ added Δ + Σ removed Δ + other``

holds exactly: ``other`` is by definition what the entries leave unexplained (idle time,
overlap between entries, host time, GPU time of no entry).  ``share_pct = 100·Δ/ΔT`` (None
when ΔT = 0).  Entries are ranked by |Δ| descending, then by key.

    ====================  ====================  ============  ======  ========
    base (count, total)   current               status        Δ       share
    ====================  ====================  ============  ======  ========
    gemm 10, 1000         gemm 10, 1200         matched       +200    …
    —                     allgather 10, 300     added         +300    …
    relu 10, 50           —                     removed       −50     …
    ====================  ====================  ============  ======  ========
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

Status = Literal["matched", "added", "removed"]

MAX_NAMES = 5
"""Raw names kept per entry (the most time-consuming first)."""


@dataclass(frozen=True)
class Entry:
    """One matched or one-sided entry of a view (times in ns, totals over the compared part)."""

    key: str
    status: Status
    base_count: int
    base_total_ns: int
    current_count: int
    current_total_ns: int
    names: tuple[str, ...]
    """Raw names aggregated under the key (at most :data:`MAX_NAMES`, by total time)."""

    @property
    def delta_ns(self) -> int:
        """Contribution: current total − base total."""
        return self.current_total_ns - self.base_total_ns

    @property
    def delta_pct(self) -> float | None:
        """100 · Δ / base total; None when the base total is 0."""
        return 100.0 * self.delta_ns / self.base_total_ns if self.base_total_ns else None

    @property
    def base_per_call_ns(self) -> float | None:
        return self.base_total_ns / self.base_count if self.base_count else None

    @property
    def current_per_call_ns(self) -> float | None:
        return self.current_total_ns / self.current_count if self.current_count else None

    @property
    def per_call_delta_pct(self) -> float | None:
        """100 · (per-call current / per-call base − 1); None unless both sides have calls."""
        b, c = self.base_per_call_ns, self.current_per_call_ns
        return 100.0 * (c / b - 1.0) if b and c is not None else None


@dataclass(frozen=True)
class ViewDiff:
    """One view's entries and how they add up to the total change ``ΔT``."""

    view: str
    available: bool
    entries: tuple[Entry, ...]
    total_change_ns: int
    note: str | None = None
    """One line on what limits this view (unavailable, nothing in common...)."""

    def _sum(self, status: Status) -> int:
        return sum(e.delta_ns for e in self.entries if e.status == status)

    @property
    def matched_ns(self) -> int:
        return self._sum("matched")

    @property
    def added_ns(self) -> int:
        return self._sum("added")

    @property
    def removed_ns(self) -> int:
        return self._sum("removed")

    @property
    def other_ns(self) -> int:
        """ΔT − Σ Δ of every entry (exact)."""
        return self.total_change_ns - sum(e.delta_ns for e in self.entries)

    def share_pct(self, delta_ns: int) -> float | None:
        """100 · delta / ΔT; None when ΔT = 0."""
        return 100.0 * delta_ns / self.total_change_ns if self.total_change_ns else None

    def count(self, status: Status) -> int:
        return sum(1 for e in self.entries if e.status == status)


AGG = ("count", "total_ns")


def aggregate_events(events: pd.DataFrame) -> pd.DataFrame:
    """Occurrences → one row per (key, name): ``count`` (distinct ``call``), ``total_ns``."""
    if events.empty:
        return pd.DataFrame({"key": [], "name": [], "count": [], "total_ns": []}).astype(
            {"count": np.int64, "total_ns": np.int64}
        )
    g = events.groupby(["key", "name"], sort=False, observed=True)
    out = g.agg(count=("call", "nunique"), total_ns=("dur_ns", "sum")).reset_index()
    return out.astype({"count": np.int64, "total_ns": np.int64})


def _by_key(parts: Sequence[pd.DataFrame]) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]]]:
    """Per-(key, name) tables of several ranks → per key totals, and each key's top names."""
    cols = ["key", "name", "count", "total_ns"]
    rows = [p[cols] for p in parts if len(p)]
    if not rows:
        empty = pd.DataFrame({"count": [], "total_ns": []}, dtype=np.int64)
        return empty.rename_axis("key"), {}
    df = pd.concat(rows, ignore_index=True)
    per_name = df.groupby(["key", "name"], sort=False)["total_ns"].sum().reset_index()
    per_name = per_name.sort_values(["key", "total_ns", "name"], ascending=[True, False, True])
    names: dict[str, tuple[str, ...]] = {}
    for key, grp in per_name.groupby("key", sort=False)["name"]:
        names[str(key)] = tuple(str(n) for n in grp.iloc[:MAX_NAMES])
    totals = df.groupby("key", sort=True)[["count", "total_ns"]].sum().astype(np.int64)
    return totals, names


def match_entries(base: Sequence[pd.DataFrame], current: Sequence[pd.DataFrame]) -> list[Entry]:
    """Join the aggregated tables of both sides (one per rank) on ``key``; ranked entries."""
    b, b_names = _by_key(base)
    c, c_names = _by_key(current)
    keys = sorted(set(b.index.astype(str)) | set(c.index.astype(str)))
    entries = []
    for k in keys:
        in_b, in_c = k in b.index, k in c.index
        bc, bt = (int(b.at[k, "count"]), int(b.at[k, "total_ns"])) if in_b else (0, 0)
        cc, ct = (int(c.at[k, "count"]), int(c.at[k, "total_ns"])) if in_c else (0, 0)
        status: Status = "matched" if in_b and in_c else ("added" if in_c else "removed")
        names = tuple(dict.fromkeys(c_names.get(k, ()) + b_names.get(k, ())))[:MAX_NAMES]
        entries.append(Entry(k, status, bc, bt, cc, ct, names))
    entries.sort(key=lambda e: (-abs(e.delta_ns), e.key))
    return entries


def step_positions(t_ns: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the step ``[start, end)`` containing each instant (the last one starting at or
    before it), or -1; *starts* ascending."""
    k = np.searchsorted(starts, t_ns, side="right") - 1
    ok = (k >= 0) & (t_ns < ends[np.maximum(k, 0)]) if len(starts) else np.zeros(len(t_ns), bool)
    return np.where(ok, k, -1)
