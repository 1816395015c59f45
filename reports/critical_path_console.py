"""Rich tables of the ``critical_path`` section: what to fix first, then each step's path.

Rendered from the JSON section (the same numbers as ``--json``).  Names come from the trace and
reach rich as :class:`rich.text.Text`, never as markup.  Times in ms (ns / 10⁶).
:func:`print_fix_first` is what ``gpuscope analyze`` prints first; ``gpuscope critical-path``
prints :func:`print_critical_path` (that, and each step's path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.table_text import Fast

TOP_FIXES = 8
TOP_CAUSES = 8


def fix_first_table(section: Mapping[str, Any], top: int = TOP_FIXES) -> Table:
    """The what-ifs ranked by recovered ms per step; ``[a]`` marks name each one's
    assumptions (:func:`assumption_lines`)."""
    t = Table(
        title=(
            "What to fix first: predicted recovered time per step "
            f"(measured {fmt.ms(section.get('measured_ns_per_step'))} ms/step)"
        ),
        title_justify="left",
    )
    t.add_column("#", justify="right")
    t.add_column("change")
    t.add_column("recovered ms/step", justify="right")
    t.add_column("% of step", justify="right")
    t.add_column("predicted step ms", justify="right")
    t.add_column("assumes", justify="center")
    marks = _marks(section, top)
    for i, w in enumerate(section.get("what_to_fix_first", [])[:top], 1):
        pred = list(w["predicted_ns_by_step"].values())
        mean = sum(pred) / len(pred) if pred else None
        t.add_row(
            str(i),
            Text(w["change"]),
            fmt.ms(w["recovered_ns_per_step"]),
            f"{100 * w.get('recovered_share', 0.0):.1f}",
            fmt.ms(mean),
            Text(f"[{marks[w['assumptions']]}]"),
        )
    return t


def _marks(section: Mapping[str, Any], top: int) -> dict[str, str]:
    """One letter per distinct assumption text of the first *top* what-ifs, in table order."""
    out: dict[str, str] = {}
    for w in section.get("what_to_fix_first", [])[:top]:
        out.setdefault(w["assumptions"], chr(ord("a") + len(out)))
    return out


def assumption_lines(section: Mapping[str, Any], top: int = TOP_FIXES) -> list[str]:
    """``[a] change: assumptions`` for the marks of :func:`fix_first_table`."""
    first: dict[str, str] = {}
    for w in section.get("what_to_fix_first", [])[:top]:
        first.setdefault(w["assumptions"], w["change"])
    return [f"[{m}] {first[text]}: {text}" for text, m in _marks(section, top).items()]


def cause_table(section: Mapping[str, Any]) -> Table:
    """Mean ms per step on the critical path, by cause (causes with time only)."""
    t = Table(title="Critical path by cause (mean ms per step)", title_justify="left")
    t.add_column("cause")
    t.add_column("ms/step", justify="right")
    t.add_column("% of step", justify="right")
    mean = section.get("measured_ns_per_step") or 0
    rows = sorted(section.get("cause_ns_per_step", {}).items(), key=lambda kv: -kv[1])
    for cause, ns in rows:
        if ns > 0:
            t.add_row(cause, fmt.ms(ns), f"{100 * ns / mean:.1f}" if mean else "")
    return t


def print_fix_first(section: Mapping[str, Any], console: Console) -> None:
    """What ``gpuscope analyze`` prints first: the ranked what-ifs with their assumptions, the
    path by cause, and the section's notes."""
    console.print(Fast(fix_first_table(section)))
    for line in assumption_lines(section):
        console.print(Text(line))
    console.print(Fast(cause_table(section)))
    for note in section.get("notes", []):
        console.print(Text(f"critical path: note: {note}"))


def step_table(step: Mapping[str, Any], top: int = TOP_CAUSES) -> Table:
    """One step's path by cause."""
    t = Table(
        title=(
            f"Step {step['step']}: {fmt.ms(step['duration_ns'])} ms on rank {step['rank']} "
            f"(replayed {fmt.ms(step['replayed_ns'])} ms)"
            + (
                f"; crossed {step['unresolved_waits']} unresolved cross-stream wait(s)"
                if step.get("unresolved_waits")
                else ""
            )
        ),
        title_justify="left",
    )
    t.add_column("cause")
    t.add_column("detail")
    t.add_column("rank", justify="right")
    t.add_column("ms", justify="right")
    t.add_column("% of step", justify="right")
    dur = step["duration_ns"] or 1
    for c in step["by_cause"][:top]:
        t.add_row(
            c["cause"],
            fmt.name_text(c["detail"], 50),
            "" if c["rank"] is None else str(c["rank"]),
            fmt.ms(c["ns"]),
            f"{100 * c['ns'] / dur:.1f}",
        )
    return t


def print_critical_path(section: Mapping[str, Any] | None, console: Console) -> None:
    """Print the section (nothing when absent)."""
    if not section:
        console.print("critical path: no ProfilerStep in any rank", markup=False)
        return
    print_fix_first(section, console)
    for s in section.get("steps", []):
        console.print(Fast(step_table(s)))
    exact = "equals" if section.get("replay_exact") else "DIFFERS FROM"
    console.print(
        f"Replay with no change {exact} the measured step times; "
        f"{section.get('matched_collectives', 0)} collectives matched across ranks "
        f"{section.get('ranks', [])}.",
        markup=False,
    )
