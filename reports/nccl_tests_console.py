"""Console output of ``gpuscope nccl-tests``: what each log holds, its warnings, and the peak
bus bandwidth per collective and message size (docs/communication.md §4).

Names and paths come from the logs and are printed as :class:`rich.text.Text`, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def size_label(b: int) -> str:
    """``1 GiB``, ``256 MiB``, ``8 KiB``, or bytes when not a whole number of them."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def log_line(log: Any) -> Text:
    """One line per log (:class:`collectors.nccl_tests.NcclTestsLog`): collective, ranks, layout,
    rows, and whether every printed algbw/busbw matches size/time."""
    checked = int(log.rows["busbw_ok"].notna().sum())
    measured = int(log.rows["time_us"].notna().sum())
    status = "every row matches size/time" if log.checked_ok else "MISMATCH (see warnings)"
    if checked < measured:
        status += "; busbw not checkable" if checked == 0 else "; busbw partly checked"
    return Text(
        f"{log.path or '-'}: {log.collective or '?'} ({log.collective_source}), "
        f"{log.nranks or '?'} ranks ({log.nranks_source}), layout {log.layout}, "
        f"{len(log.rows)} rows"
        + (f" ({log.left_out} left out)" if getattr(log, "left_out", 0) else "")
        + f": {status}"
    )


def peak_table(peaks: Any) -> Table:
    """The peak table (:func:`collectors.nccl_tests.peak_table`) as a rich table."""
    pt = Table(title="Peak bus bandwidth per collective and size", title_justify="left")
    for col in ("collective", "ranks", "size", "busbw GB/s", "algbw GB/s", "time µs", "placement"):
        pt.add_column(col, justify="left" if col in ("collective", "placement") else "right")
    for r in peaks.itertuples(index=False):
        pt.add_row(
            str(r.collective),
            str(r.nranks) if r.nranks > 0 else "?",
            size_label(int(r.size_bytes)),
            f"{r.busbw_gbps:.2f}",
            f"{r.algbw_gbps:.2f}",
            f"{r.time_us:.2f}",
            str(r.placement).replace("_", "-"),
        )
    return pt


def print_nccl_tests(logs: Sequence[Any], peaks: Any, out: Console, err: Console) -> None:
    """Each log's line (and its warnings on *err*), then the peak table."""
    for log in logs:
        out.print(log_line(log))
        for w in log.warnings:
            err.print(Text(f"gpuscope: warning: {Path(log.path or '-').name}: {w}"))
    out.print(peak_table(peaks))
