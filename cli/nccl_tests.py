"""``gpuscope nccl-tests LOG... [--json FILE]``: parse nccl-tests logs, recheck, report peaks.

Prints, per log, what was found (collective, ranks, layout, rows, whether every printed
algbw/busbw matches size/time) and then the peak busbw per collective and message size
(docs/communication.md §4).  Logs that cannot be read are reported and skipped; the command
then exits 2 after writing the results of the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from collectors.errors import InputError, UsageError

LOGS_HELP = "nccl-tests output (stdout of *_perf, any version since 2017) or its -J JSON file."
JSON_HELP = "Write every parsed row, the checks and the peak table as JSON to FILE."
COLL_HELP = "The collective, when neither the log nor its file name says (e.g. all_gather)."
NRANKS_HELP = "The number of ranks, when the log has no '# Using devices' block."


def _size(b: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def run_nccl_tests(
    logs: list[Path],
    json_out: Path | None = None,
    collective: str | None = None,
    nranks: int | None = None,
) -> dict[str, Any]:
    """The command's work; returns the JSON document.

    Raises:
        InputError: some logs could not be read (after the others were reported).
        UsageError: bad options, or the JSON file cannot be written.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from collectors.nccl_tests import peak_table, read_nccl_tests
    from reports.summary.sections.comm import nccl_tests_json

    if nranks is not None and nranks < 1:
        raise UsageError("--nranks must be ≥ 1")
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    parsed = []
    failed: list[InputError] = []
    for p in logs:
        try:
            parsed += read_nccl_tests(p, collective=collective, nranks=nranks)
        except InputError as e:
            failed.append(e)
            err.print(f"gpuscope: skipped {e}", markup=False)
    if not parsed:
        raise (
            failed[0]
            if len(failed) == 1
            else InputError(f"none of the {len(failed)} logs could be read (see above)")
        )
    doc = nccl_tests_json(parsed, source="nccl-tests")
    if json_out is not None:
        import json

        try:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        except OSError as e:
            raise UsageError(f"cannot write the JSON file: {e.strerror}", path=json_out) from e

    for log in parsed:
        checked = int(log.rows["busbw_ok"].notna().sum())
        measured = int(log.rows["time_us"].notna().sum())
        status = "every row matches size/time" if log.checked_ok else "MISMATCH (see warnings)"
        if checked < measured:
            status += "; busbw not checkable" if checked == 0 else "; busbw partly checked"
        out.print(
            Text(
                f"{log.path or '-'}: {log.collective or '?'} ({log.collective_source}), "
                f"{log.nranks or '?'} ranks ({log.nranks_source}), layout {log.layout}, "
                f"{len(log.rows)} rows: {status}"
            )
        )
        for w in log.warnings:
            err.print(Text(f"gpuscope: warning: {Path(log.path or '-').name}: {w}"))

    peaks = peak_table(parsed)
    pt = Table(title="Peak bus bandwidth per collective and size", title_justify="left")
    for col in ("collective", "ranks", "size", "busbw GB/s", "algbw GB/s", "time µs", "placement"):
        pt.add_column(col, justify="left" if col in ("collective", "placement") else "right")
    for r in peaks.itertuples(index=False):
        pt.add_row(
            str(r.collective),
            str(r.nranks) if r.nranks > 0 else "?",
            _size(int(r.size_bytes)),
            f"{r.busbw_gbps:.2f}",
            f"{r.algbw_gbps:.2f}",
            f"{r.time_us:.2f}",
            str(r.placement).replace("_", "-"),
        )
    out.print(pt)
    if json_out is not None:
        out.print(f"Wrote {json_out}", markup=False)
    if failed:
        raise InputError(f"{len(failed)} of {len(logs)} logs could not be read (see above)")
    return doc


def register(app: typer.Typer) -> None:
    """Add ``nccl-tests`` to *app*."""

    @app.command("nccl-tests")
    def nccl_tests(
        logs: Annotated[
            list[Path], typer.Argument(metavar="LOG", help=LOGS_HELP, show_default=False)
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", metavar="FILE", help=JSON_HELP)
        ] = None,
        collective: Annotated[
            str | None, typer.Option("--collective", metavar="NAME", help=COLL_HELP)
        ] = None,
        nranks: Annotated[
            int | None, typer.Option("--nranks", metavar="N", help=NRANKS_HELP)
        ] = None,
    ) -> None:
        """Parse nccl-tests logs, recheck every row's algbw/busbw, print peak busbw per size.

        busbw = algbw × 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter,
        alltoall), 1 (broadcast, reduce); GB/s = 10^9 B/s.  The logs' '# Avg bus bandwidth'
        is a mean over all sizes, not a peak: it is kept in the JSON only.
        """
        run_nccl_tests(logs, json_out, collective, nranks)
