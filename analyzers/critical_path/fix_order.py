"""The findings (:mod:`analyzers.findings`) ordered by what fixing them would recover.

Each finding rule corresponds to the what-if of the critical-path section that removes its
cause (:data:`FINDING_WHAT_IFS`, docs/critical-path.md §6); a finding's *recovered time* is that
what-if's ``recovered_ns_per_step`` in the summary's ``critical_path.what_to_fix_first`` — for
``faster`` the what-if of the category of the finding's kernel or op, for ``rank_on_time`` the
late rank the finding names (else the largest over ranks).  A pure function of the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzers.critical_path.sources import kernel_category

FINDING_WHAT_IFS: dict[str, str] = {
    "exposed_comm": "overlap_comm",
    "skew": "rank_on_time",
    "host_bound": "cuda_graphs",
    "gpu_idle": "cuda_graphs",
    "low_busbw": "busbw",
    "low_occupancy": "faster",
    "low_roofline": "faster",
    "dominant_category": "faster",
}
"""Finding id → the what-if kind that removes its cause (``throttling`` and
``unattributed_graphs``, which says what the trace cannot attribute, have none)."""


def _category(finding: Any) -> str | None:
    top = getattr(finding, "top", None)
    if top:  # dominant_category: its largest category
        return str(top[0].category)
    flag = getattr(finding, "flag", None)
    if isinstance(flag, Mapping) and flag.get("name"):
        return kernel_category(str(flag["name"]))
    point = getattr(finding, "point", None)
    if isinstance(point, Mapping) and point.get("name"):
        return kernel_category(str(point["name"]), op=str(point["name"]))
    return None


def recovered_ns(summary: Mapping[str, Any], finding: Any) -> float | None:
    """The recovered ns per step of the what-if that corresponds to *finding* (an
    :class:`analyzers.findings.Finding`), or None (no such what-if in the summary)."""
    cp = summary.get("critical_path")
    kind = FINDING_WHAT_IFS.get(getattr(finding, "id", ""))
    if not isinstance(cp, Mapping) or kind is None:
        return None
    fixes = [w for w in cp.get("what_to_fix_first") or [] if w.get("kind") == kind]
    if kind == "faster":
        cat = _category(finding)
        fixes = [w for w in fixes if w.get("category") == cat]
    late = getattr(finding, "late", None)
    if kind == "rank_on_time" and late is not None:
        fixes = [w for w in fixes if w.get("rank") == late[0]] or fixes
    values = [float(w["recovered_ns_per_step"]) for w in fixes]
    return max(values) if values else None


def by_recovered(summary: Mapping[str, Any], found: Sequence[Any]) -> list[int]:
    """Positions of *found* (in rule order, each with ``impact``): those with a what-if by its
    recovered time, largest first, then the others by impact; ties in rule order."""
    rec = [recovered_ns(summary, f) for f in found]
    return sorted(
        range(len(found)),
        key=lambda i: (rec[i] is None, -(rec[i] or 0.0), -found[i].impact, i),
    )
