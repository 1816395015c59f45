"""``gpuscope compare``: what changed between two runs, and how much of the step time it explains.

Definitions (docs/compare.md):

**Ranks** are paired by rank id when the two sides share some (the others are left out), else
by position in rank order.

**Compared total T** of each side, summed over the paired ranks, in one of three modes:

- ``steps`` (both sides are traces, every paired rank has ProfilerSteps): steps are paired by
  index within the analysis window; with ``n = min(n_base, n_current)`` steps per rank pair,
  ``T = Σ duration_ns`` of the first ``n`` steps, and an occurrence counts when its instant
  ``t_ns`` (kernel: its launch) lies in one of those steps;
- ``window`` (a side is a JSON summary, whose kernel totals cover its whole window): ``T = Σ``
  of every window step's duration, and every window occurrence counts; the trace side's
  kernel view is then restricted to kernels (a summary lists no memcpy/memset);
- ``span`` (a paired rank has no step on some side): ``T = Σ`` of the window's GPU span (first
  GPU start to last GPU end), every window occurrence counts.

**Total change** ``ΔT = T_current − T_base`` (integer ns).  Per view, entries are matched by key
and their contributions add up to ΔT exactly with an explicit ``other`` remainder
(:mod:`analyzers.compare_match`).  The *step* view pairs steps by index; its entries alone add
up to ΔT (``other`` = 0) in the ``steps`` and ``window`` modes.

**Step times**: distributions and the gate's test (:mod:`analyzers.compare_steps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from analyzers.compare_match import (
    Entry,
    Status,
    ViewDiff,
    aggregate_events,
    match_entries,
    step_positions,
)
from analyzers.compare_sides import EVENT_VIEWS, VIEWS, RankSide, Side
from analyzers.compare_steps import StepDistribution, StepTest, step_distribution, step_test

Mode = Literal["steps", "window", "span"]
WORK_VIEWS = ("op", "category")
"""Views whose entries share out the GPU work of the kernel view (their ``unattributed_ns``)."""

FORMAT_NAMES = {"kineto": "Kineto", "nsys": "Nsight Systems", "summary": "a JSON summary"}


@dataclass(frozen=True)
class SideInfo:
    """What one side was and what of it was compared."""

    label: str
    kind: str
    formats: tuple[str, ...]
    ranks: tuple[int, ...]
    """Every rank of the side (paired or not)."""
    steps_per_rank: tuple[int, ...]
    """Window steps of each rank, in the order of :attr:`ranks`."""
    total_ns: int
    """T: the compared total (module docstring)."""
    units: int
    """What T is made of: rank-steps (``steps``/``window``) or ranks (``span``)."""

    @property
    def mean_ns(self) -> float | None:
        """T / units: mean step time (or mean GPU span) over the compared ranks."""
        return self.total_ns / self.units if self.units else None


@dataclass(frozen=True)
class Comparison:
    """The whole comparison of BASE and CURRENT."""

    base: SideInfo
    current: SideInfo
    rank_pairs: tuple[tuple[int, int], ...]
    mode: Mode
    notes: tuple[str, ...]
    """One line per thing the reader must know (mismatched inputs, limited views)."""
    views: tuple[ViewDiff, ...]
    base_steps: StepDistribution
    current_steps: StepDistribution
    step_test: StepTest

    @property
    def total_change_ns(self) -> int:
        """ΔT = T_current − T_base."""
        return self.current.total_ns - self.base.total_ns

    def view(self, name: str) -> ViewDiff:
        for v in self.views:
            if v.view == name:
                return v
        raise KeyError(name)


def _ranges(ranks: tuple[int, ...]) -> str:
    if not ranks:
        return "none"
    if list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))) and len(ranks) > 2:
        return f"{ranks[0]}–{ranks[-1]}"
    return ", ".join(map(str, ranks))


def pair_ranks(base: Side, current: Side) -> tuple[list[tuple[RankSide, RankSide]], list[str]]:
    """Rank pairs (by id when the sides share ids, else by position) and what to tell about it."""
    b = {r.rank: r for r in base.ranks}
    c = {r.rank: r for r in current.ranks}
    common = sorted(set(b) & set(c))
    notes = []
    bl, cl = tuple(sorted(b)), tuple(sorted(c))
    if common:
        pairs = [(b[r], c[r]) for r in common]
        if bl != cl:
            notes.append(
                f"rank sets differ (BASE {len(bl)}: {_ranges(bl)}; CURRENT {len(cl)}: "
                f"{_ranges(cl)}): comparing the {len(common)} common rank(s) "
                f"{_ranges(tuple(common))}"
            )
    else:
        pairs = [(b[x], c[y]) for x, y in zip(bl, cl, strict=False)]
        what = ", ".join(f"{x}↔{y}" for x, y in zip(bl, cl, strict=False))
        extra = "" if len(bl) == len(cl) else f"; {abs(len(bl) - len(cl))} unpaired"
        notes.append(
            f"no rank id on both sides (BASE {_ranges(bl)}, CURRENT {_ranges(cl)}): ranks "
            f"paired by order ({what}){extra}"
        )
    return pairs, notes


def _mode(base: Side, current: Side, pairs: list[tuple[RankSide, RankSide]]) -> Mode:
    if any(len(b.steps) == 0 or len(c.steps) == 0 for b, c in pairs):
        return "span"
    if base.aggregated or current.aggregated:
        return "window"
    return "steps"


Select = Callable[[pd.DataFrame], pd.DataFrame]


def _selector(steps: pd.DataFrame, n: int | None) -> Select:
    """Keep occurrences whose ``t_ns`` lies in the first *n* steps (None: keep all)."""
    if n is None:
        return lambda ev: ev
    lo = steps["start_ns"].to_numpy()[:n]
    hi = steps["end_ns"].to_numpy()[:n]
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    return lambda ev: ev[step_positions(ev["t_ns"].to_numpy(), lo, hi) >= 0]


def _step_view(
    pairs: list[tuple[RankSide, RankSide]], mode: Mode, total_change: int, n_of: list[int | None]
) -> ViewDiff:
    if mode == "span":
        return ViewDiff("step", False, (), total_change, "no ProfilerSteps to pair (span mode)")
    acc: dict[int, list[int]] = {}
    ids: dict[int, list[int | None]] = {}
    for (b, c), n in zip(pairs, n_of, strict=True):
        for side, rs in ((0, b), (1, c)):
            d = rs.steps["duration_ns"].to_numpy()
            sid = rs.steps["step"].to_numpy()
            upto = len(d) if n is None else n
            for i in range(upto):
                a = acc.setdefault(i, [0, 0, 0, 0])
                a[2 * side] += 1
                a[2 * side + 1] += int(d[i])
                slot = ids.setdefault(i, [None, None])
                if slot[side] is None:
                    slot[side] = int(sid[i])
    entries = []
    for i, (bc, bt, cc, ct) in acc.items():
        status: Status = "matched" if bc and cc else ("added" if cc else "removed")
        b_id, c_id = ids[i]
        label = " → ".join(f"ProfilerStep#{x}" for x in (b_id, c_id) if x is not None)
        entries.append(Entry(f"#{i}", status, bc, bt, cc, ct, (label,)))
    entries.sort(key=lambda e: (-abs(e.delta_ns), int(e.key[1:])))
    return ViewDiff("step", True, tuple(entries), total_change)


def _view_note(view: str, entries: list[Entry]) -> str | None:
    matched = sum(1 for e in entries if e.status == "matched")
    b = sum(1 for e in entries if e.status == "removed")
    c = sum(1 for e in entries if e.status == "added")
    if entries and not matched and b and c:
        what = {"kernel": "kernel name (after normalisation)", "op": "op (name and shapes)"}
        return (
            f"no {what.get(view, view)} appears on both sides ({b} only in BASE, {c} only in "
            "CURRENT): everything is listed as removed or added — are these the same program?"
        )
    return None


def compare(base: Side, current: Side) -> Comparison:
    """Compare two sides (module docstring); never raises on mismatched inputs, it notes them."""
    pairs, notes = pair_ranks(base, current)
    mode = _mode(base, current, pairs)
    for side, name in ((base, "BASE"), (current, "CURRENT")):
        if side.aggregated:
            notes.append(
                f"{name} is a JSON summary: it carries kernel totals and step durations only, "
                "so only the kernel and step views are compared (kernels over its whole window)"
            )
    if set(base.formats) != set(current.formats) and not (base.aggregated or current.aggregated):
        bf = "/".join(FORMAT_NAMES.get(f, f) for f in base.formats)
        cf = "/".join(FORMAT_NAMES.get(f, f) for f in current.formats)
        notes.append(
            f"BASE is {bf}, CURRENT {cf}: kernels are matched by normalised name; ops, "
            "annotations and collectives may be recorded differently by the two tools"
        )

    n_of: list[int | None] = []
    sel_b: list[Select] = []
    sel_c: list[Select] = []
    tot = [0, 0]
    units = [0, 0]
    uneven: set[tuple[int, int]] = set()
    for b, c in pairs:
        nb, nc = len(b.steps), len(c.steps)
        if mode == "steps":
            n: int | None = min(nb, nc)
            if nb != nc:
                uneven.add((nb, nc))
        else:
            n = None
            if mode == "window" and nb != nc:
                uneven.add((nb, nc))
        n_of.append(n)
        sel_b.append(_selector(b.steps, n) if mode == "steps" else _selector(b.steps, None))
        sel_c.append(_selector(c.steps, n) if mode == "steps" else _selector(c.steps, None))
        for k, rs in enumerate((b, c)):
            if mode == "span":
                tot[k] += rs.span_ns or 0
                units[k] += 1
            else:
                upto = len(rs.steps) if n is None else n
                tot[k] += int(rs.steps["duration_ns"].to_numpy()[:upto].sum())
                units[k] += upto
    if mode == "span":
        missing = [
            f"{name} rank {rs.rank}"
            for b, c in pairs
            for name, rs in (("BASE", b), ("CURRENT", c))
            if len(rs.steps) == 0
        ]
        notes.append(
            f"no ProfilerSteps in {', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}: "
            "comparing the window's GPU span (first GPU start to last GPU end) instead of step "
            "time; steps are not compared"
        )
    for nb, nc in sorted(uneven):
        if mode == "steps":
            notes.append(
                f"step counts differ ({nb} in BASE, {nc} in CURRENT on a rank pair): the first "
                f"{min(nb, nc)} steps of each are compared (steps by index)"
            )
        else:
            notes.append(
                f"step counts differ ({nb} in BASE, {nc} in CURRENT on a rank pair) and a summary "
                "has no per-step kernel times: totals cover every window step of each side"
            )
    total_change = tot[1] - tot[0]

    views = []
    summary_side = base.aggregated or current.aggregated
    for view in EVENT_VIEWS:
        missing_in = [
            nm for nm, s in (("BASE", base), ("CURRENT", current)) if view not in s.views()
        ]
        if missing_in:
            views.append(
                ViewDiff(
                    view,
                    False,
                    (),
                    total_change,
                    f"not available: {' and '.join(missing_in)} is a JSON summary",
                )
            )
            continue
        parts: list[list[pd.DataFrame]] = [[], []]
        work = [0, 0]  # GPU work time of the compared part (op/category views share it out)
        for i, (b, c) in enumerate(pairs):
            for k, (side, rs, sel) in enumerate(((base, b, sel_b[i]), (current, c, sel_c[i]))):
                ev = rs.events[view]
                if side.aggregated:
                    parts[k].append(ev)
                    continue
                if view == "kernel" and summary_side:
                    ev = ev[(ev["kind"] == "kernel").to_numpy()]
                parts[k].append(aggregate_events(sel(ev)))
                if view in WORK_VIEWS:
                    work[k] += int(sel(rs.events["kernel"])["dur_ns"].sum())
        entries = match_entries(parts[0], parts[1])
        views.append(
            ViewDiff(
                view,
                True,
                tuple(entries),
                total_change,
                _view_note(view, entries),
                work[1] - work[0] if view in WORK_VIEWS else None,
            )
        )
    views.append(_step_view(pairs, mode, total_change, n_of))
    notes += [v.note for v in views if v.view == "kernel" and v.note]
    order = {v: i for i, v in enumerate(VIEWS)}
    views.sort(key=lambda v: order[v.view])

    base_d = step_distribution([(b.rank, b.steps) for b, _ in pairs])
    cur_d = step_distribution([(c.rank, c.steps) for _, c in pairs])

    def info(side: Side, k: int) -> SideInfo:
        return SideInfo(
            side.label,
            side.kind,
            side.formats,
            tuple(r.rank for r in side.ranks),
            tuple(len(r.steps) for r in side.ranks),
            tot[k],
            units[k],
        )

    return Comparison(
        base=info(base, 0),
        current=info(current, 1),
        rank_pairs=tuple((b.rank, c.rank) for b, c in pairs),
        mode=mode,
        notes=tuple(notes),
        views=tuple(views),
        base_steps=base_d,
        current_steps=cur_d,
        step_test=step_test(base_d, cur_d),
    )
