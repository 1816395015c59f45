"""``gpuscope nccl-tests LOG... [--json FILE]``: parse nccl-tests logs, recheck, report peaks.

Prints, per log, what was found (collective, ranks, layout, rows, whether every printed
algbw/busbw matches size/time) and then the peak busbw per collective and message size
(docs/communication.md §4).  Logs that cannot be read are reported and skipped; the command
then exits 2 after writing the results of the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.outputs import ForceOpt
from collectors.errors import InputError, UsageError
from reports.output import check_output, write_atomic

LOGS_HELP = "nccl-tests output (stdout of *_perf, any version since 2017) or its -J JSON file."
JSON_HELP = "Write every parsed row, the checks and the peak table as JSON to FILE."
COLL_HELP = "The collective, when neither the log nor its file name says (e.g. all_gather)."
NRANKS_HELP = "The number of ranks, when the log has no '# Using devices' block."


def run_nccl_tests(
    logs: Sequence[str | Path],
    json_out: Path | None = None,
    collective: str | None = None,
    nranks: int | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """The command's work; returns the JSON document.

    Raises:
        InputError: some logs could not be read (after the others were reported).
        UsageError: bad options, or the JSON file exists without *force* or cannot be written.
    """
    from rich.console import Console

    from collectors.nccl_tests import peak_table, read_nccl_tests
    from reports.nccl_tests_console import print_nccl_tests
    from reports.summary.sections.comm import nccl_tests_json

    if nranks is not None and nranks < 1:
        raise UsageError("--nranks must be ≥ 1")
    if json_out is not None:
        check_output(json_out, force=force)
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    parsed = []
    failed: list[InputError] = []
    for p in logs:
        try:
            parsed += read_nccl_tests(p, collective=collective, nranks=nranks)
        except InputError as e:
            failed.append(e)
    if not parsed and len(failed) == 1:
        raise failed[0]  # the one error, printed once (by the caller)
    for failure in failed:
        err.print(f"gpuscope: skipped {failure}", markup=False)
    if not parsed:
        raise InputError(f"none of the {len(failed)} logs could be read (see above)")
    doc = nccl_tests_json(parsed, source="nccl-tests")
    if json_out is not None:
        import json

        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
        write_atomic(json_out, text, force=force, what="nccl-tests JSON")

    print_nccl_tests(parsed, peak_table(parsed), out, err)
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
            list[str], typer.Argument(metavar="LOG", help=LOGS_HELP, show_default=False)
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
        force: ForceOpt = False,
    ) -> None:
        """Parse nccl-tests logs, recheck every row's algbw/busbw, print peak busbw per size.

        busbw = algbw × 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter,
        alltoall), 1 (broadcast, reduce); GB/s = 10^9 B/s.  The logs' '# Avg bus bandwidth'
        is a mean over all sizes, not a peak: it is kept in the JSON only.
        """
        run_nccl_tests(logs, json_out, collective, nranks, force)
