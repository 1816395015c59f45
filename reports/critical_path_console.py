"""Rich tables of the ``critical_path`` section: what to fix first, then each step's path.

Rendered from the JSON section (the same numbers as ``--json``).  Names come from the trace and
reach rich as :class:`rich.text.Text`, never as markup.  Times in ms (ns / 10⁶).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt

TOP_FIXES = 8
TOP_CAUSES = 8


def fix_first_table(section: Mapping[str, Any], top: int = TOP_FIXES) -> Table:
    """The what-ifs ranked by recovered ms per step."""
    t = Table(title="What to fix first (predicted recovered time per step)", title_justify="left")
    t.add_column("#", justify="right")
    t.add_column("change")
    t.add_column("recovered ms/step", justify="right")
    t.add_column("predicted step ms", justify="right")
    for i, w in enumerate(section.get("what_to_fix_first", [])[:top], 1):
        pred = list(w["predicted_step_ns"].values())
        mean = sum(pred) / len(pred) if pred else None
        t.add_row(str(i), Text(w["change"]), fmt.ms(w["recovered_ns_per_step"]), fmt.ms(mean))
    return t


def step_table(step: Mapping[str, Any], top: int = TOP_CAUSES) -> Table:
    """One step's path by cause."""
    t = Table(
        title=(
            f"Step {step['step']}: {fmt.ms(step['duration_ns'])} ms on rank {step['rank']} "
            f"(replayed {fmt.ms(step['replayed_ns'])} ms)"
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
    console.print(fix_first_table(section))
    for s in section.get("steps", []):
        console.print(step_table(s))
    exact = "equals" if section.get("replay_exact") else "DIFFERS FROM"
    console.print(
        f"Replay with no change {exact} the measured step times; "
        f"{section.get('matched_collectives', 0)} collectives matched across ranks "
        f"{section.get('ranks', [])}.",
        markup=False,
    )
