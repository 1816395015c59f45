"""Finding rules on the ``serving`` section: GPU-bound work and what it is made of
(docs/report.md §4, docs/inference.md "Findings").

A pure function of the JSON summary, like every rule of :mod:`analyzers.findings` (which
registers :data:`SERVING_RULES`); ``reports/findings.py`` words the records.

* :func:`dominant_category` — on GPU-bound work (GPU busy ≥ :data:`GPU_BOUND_BUSY` of the
  span: the rank's, or a serving phase's), one op category takes ≥ :data:`CATEGORY_SHARE` of
  the GPU work time.  The record lists the top categories (≥ :data:`LISTED_SHARE` each, at most
  :data:`LISTED`) with the headroom to their roof where a FLOP model covers them: ``% of roof``
  = time at the roof ÷ time of the modelled part, headroom = modelled time − time at the roof.
  ``value`` = the top share (%), ``impact`` = top share × busy fraction (the share of the span
  that category runs).
* :func:`unattributed_graphs` — graph-replayed work without a capture op is ≥
  :data:`GRAPH_SHARE` of the GPU work time: its ops, shapes and FLOPs are unknown (categories
  by kernel name only).  ``value`` = that share (%), ``impact`` = share × busy fraction.

Over several ranks (and phases), the group with the largest impact is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analyzers.findings_record import Finding
from collectors.summary.schema import CategoryRoofRow, Summary

GPU_BOUND_BUSY = 0.5
"""Work is GPU-bound when the GPU is busy at least this share of its span."""
CATEGORY_SHARE = 0.40
"""An op category with at least this share of the GPU work time of GPU-bound work."""
LISTED_SHARE = 0.10
LISTED = 3
GRAPH_SHARE = 0.20
"""Graph-replayed GPU work without a capture op above this share of GPU work time."""


@dataclass(frozen=True)
class CategoryShare:
    """One listed category: its share of GPU work and, where modelled, its roof."""

    category: str
    share: float
    time_ns: int
    modelled_share: float
    """Share of the category's time with a FLOP model."""
    pct_of_roof: float | None
    headroom_ns: int | None
    """Modelled time − time at the roof (None without a roof)."""


@dataclass(frozen=True)
class DominantCategory(Finding):
    rank: int
    phase: str | None
    """The serving phase, or None for all the rank's GPU work."""
    busy_fraction: float
    gpu_work_ns: int
    top: tuple[CategoryShare, ...]
    mfu: Mapping[str, Any] | None
    """The group's MFU object (``mfu``, ``peak``, ``dtype``, ``coverage``), when known."""


@dataclass(frozen=True)
class UnattributedGraphs(Finding):
    rank: int
    graph_ns: int
    unattributed_ns: int
    launches: int
    method: str


def _busy(r: Mapping[str, Any], s: Mapping[str, Any]) -> float | None:
    span = (r.get("temporal") or {}).get("span_ns")
    return s["busy_ns"] / span if span else None


def _listed(rows: Sequence[CategoryRoofRow], total: int) -> tuple[CategoryShare, ...]:
    top = sorted(rows, key=lambda c: -c["time_ns"])
    out = []
    for i, c in enumerate(top):
        share = c["time_ns"] / total
        if i >= LISTED or (i and share < LISTED_SHARE):
            break
        roof, mod = c.get("roof_ns"), c.get("modelled_ns", 0)
        out.append(
            CategoryShare(
                c["category"],
                share,
                c["time_ns"],
                mod / c["time_ns"] if c["time_ns"] else 0.0,
                c.get("pct_of_roof"),
                round(mod - roof) if roof is not None else None,
            )
        )
    return tuple(out)


def _groups(r: Mapping[str, Any], s: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """(phase or None, busy fraction, categories, mfu) of the rank's GPU work and phases."""
    out = []
    busy = _busy(r, s)
    if busy is not None:
        out.append((None, busy, s.get("categories") or [], s.get("mfu")))
    for p in s.get("phases") or []:
        if p["gpu_span_ns"]:
            out.append((p["phase"], p["busy_ns"] / p["gpu_span_ns"], p["categories"], p["mfu"]))
    return out


def dominant_category(summary: Summary) -> DominantCategory | None:
    """GPU-bound work whose top op category takes ≥ 40 % of its GPU work time (module
    docstring)."""
    best: DominantCategory | None = None
    for r in summary["ranks"]:
        s = r.get("serving")
        if not s:
            continue
        for phase, busy, cats, mfu in _groups(r, s):
            total = sum(c["time_ns"] for c in cats)
            if busy < GPU_BOUND_BUSY or not total:
                continue
            top = _listed(cats, total)
            if not top or top[0].share < CATEGORY_SHARE:
                continue
            impact = top[0].share * min(busy, 1.0)
            if best is None or impact > best.impact:
                best = DominantCategory(
                    id="dominant_category",
                    value=100 * top[0].share,
                    limit=100 * CATEGORY_SHARE,
                    impact=impact,
                    rank=r["rank"],
                    phase=phase,
                    busy_fraction=busy,
                    gpu_work_ns=total,
                    top=top,
                    mfu=mfu,
                )
    return best


def unattributed_graphs(summary: Summary) -> UnattributedGraphs | None:
    """Graph-replayed work without a capture op ≥ 20 % of the GPU work time (module
    docstring)."""
    best: UnattributedGraphs | None = None
    for r in summary["ranks"]:
        s = r.get("serving")
        if not s or not s["gpu_work_ns"]:
            continue
        g = s["graphs"]
        missing = g["graph_kernel_ns"] - g["attributed_ns"]
        share = missing / s["gpu_work_ns"]
        if share < GRAPH_SHARE:
            continue
        impact = share * min(_busy(r, s) or 1.0, 1.0)
        if best is None or impact > best.impact:
            best = UnattributedGraphs(
                id="unattributed_graphs",
                value=100 * share,
                limit=100 * GRAPH_SHARE,
                impact=impact,
                rank=r["rank"],
                graph_ns=g["graph_kernel_ns"],
                unattributed_ns=missing,
                launches=g["launches"],
                method=g["method"],
            )
    return best


SERVING_RULES: tuple[Callable[[Summary], Finding | None], ...] = (
    dominant_category,
    unattributed_graphs,
)
"""The serving rules, in tie-break order (after those of :mod:`analyzers.findings`)."""
