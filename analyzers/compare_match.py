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
from typing import Any, Literal

import numpy as np
import pandas as pd

from collectors.arrays import sorted_unique

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
    work_change_ns: int | None = None
    """For a view whose entries share out GPU work (``op``, ``category``): the change of the
    compared GPU work time (the kernel view's events); None for the others."""

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

    @property
    def unattributed_ns(self) -> int | None:
        """Of :attr:`other_ns`, the GPU work in no entry (work change − Σ Δ); the rest of
        ``other`` is not GPU work (idle, host time, overlap).  None without a work change."""
        if self.work_change_ns is None:
            return None
        return self.work_change_ns - sum(e.delta_ns for e in self.entries)

    def share_pct(self, delta_ns: int) -> float | None:
        """100 · delta / ΔT; None when ΔT = 0."""
        return 100.0 * delta_ns / self.total_change_ns if self.total_change_ns else None

    def count(self, status: Status) -> int:
        return sum(1 for e in self.entries if e.status == status)


def aggregate_events(events: pd.DataFrame) -> pd.DataFrame:
    """Occurrences → one row per (key, name): ``count`` (distinct ``call``), ``total_ns``."""
    cols: dict[str, list[Any]] = {"key": [], "name": [], "count": [], "total_ns": []}
    if events.empty:
        return pd.DataFrame(cols).astype({"count": np.int64, "total_ns": np.int64})
    k_codes, k_uni = pd.factorize(events["key"].to_numpy())
    n_codes, n_uni = pd.factorize(events["name"].to_numpy())
    p_codes, p_uni = pd.factorize(k_codes.astype(np.int64) * len(n_uni) + n_codes)
    total = np.zeros(len(p_uni), dtype=np.int64)
    np.add.at(total, p_codes, events["dur_ns"].to_numpy(dtype=np.int64))
    call = events["call"].to_numpy(dtype=np.int64)
    call = call - call.min()
    distinct = sorted_unique(p_codes.astype(np.int64) * (int(call.max()) + 1) + call)
    count = np.bincount(distinct // (int(call.max()) + 1), minlength=len(p_uni))
    return pd.DataFrame(
        {
            "key": k_uni[p_uni // len(n_uni)],
            "name": n_uni[p_uni % len(n_uni)],
            "count": count.astype(np.int64),
            "total_ns": total,
        }
    )


def _by_key(parts: Sequence[pd.DataFrame]) -> dict[str, tuple[int, int, tuple[str, ...]]]:
    """Per-(key, name) tables of several ranks → ``{key: (count, total, top names)}``."""
    acc: dict[str, list[int]] = {}
    per_name: dict[str, dict[str, int]] = {}
    for p in parts:
        for k, n, c, t in zip(
            p["key"].tolist(),
            p["name"].tolist(),
            p["count"].tolist(),
            p["total_ns"].tolist(),
            strict=True,
        ):
            a = acc.setdefault(str(k), [0, 0])
            a[0] += int(c)
            a[1] += int(t)
            names = per_name.setdefault(str(k), {})
            names[str(n)] = names.get(str(n), 0) + int(t)
    out = {}
    for k, (c, t) in acc.items():
        top = sorted(per_name[k].items(), key=lambda x: (-x[1], x[0]))[:MAX_NAMES]
        out[k] = (c, t, tuple(n for n, _ in top))
    return out


def match_entries(base: Sequence[pd.DataFrame], current: Sequence[pd.DataFrame]) -> list[Entry]:
    """Join the aggregated tables of both sides (one per rank) on ``key``; ranked entries."""
    b = _by_key(base)
    c = _by_key(current)
    entries = []
    for k in sorted(set(b) | set(c)):
        bc, bt, bn = b.get(k, (0, 0, ()))
        cc, ct, cn = c.get(k, (0, 0, ()))
        status: Status = "matched" if k in b and k in c else ("added" if k in c else "removed")
        names = tuple(dict.fromkeys(cn + bn))[:MAX_NAMES]
        entries.append(Entry(k, status, bc, bt, cc, ct, names))
    entries.sort(key=lambda e: (-abs(e.delta_ns), e.key))
    return entries


def step_positions(t_ns: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The step each instant lies in: :func:`analyzers.steps.step_positions` (the one rule)."""
    from analyzers.steps import step_positions as positions

    return positions(t_ns, starts, ends)
