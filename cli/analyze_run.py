"""``gpuscope analyze``'s work: load traces, print the foundation analyses, write the JSON summary.

The command's options are declared for typer in :mod:`cli.analyze`; this module imports neither
typer nor anything heavy at its top, so that an ``analyze`` command line read without typer
(:mod:`cli.analyze_args`) runs without importing it (pandas via the collectors and analyzers,
plotly via the HTML report, are imported inside the work).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from cli import memory_settings
from cli.analyze_args import fast_args
from cli.early_read import start_read_early
from cli.exit_codes import ExitCode, run_command
from collectors.errors import UsageError
from reports.output import check_outputs

if TYPE_CHECKING:
    from analyzers.inputs import AnalysisInputs

HTA_VERSIONS = ("0.6", "0.5")


def _check_options(hta_version: str) -> None:
    if hta_version not in HTA_VERSIONS:
        raise UsageError(
            f"--hta-version must be one of {', '.join(HTA_VERSIONS)}, not {hta_version!r}"
        )


def load_inputs(ncu: Path | None, gpu: str | None, peaks: Path | None) -> AnalysisInputs:
    """The side inputs, each file read once here: the ncu CSV, the peak table (the built-in
    one overridden by *peaks*) and, with an ncu report, the ceilings of the *gpu* named.

    Raises:
        InputError: the ncu CSV or the peak file is missing or invalid.
        UsageError: *gpu* names no known GPU.
    """
    from analyzers.gpu_peaks import peaks_named
    from analyzers.inputs import AnalysisInputs
    from collectors.peaks import load_peaks

    report = None
    if ncu is not None:
        from collectors.ncu import read_ncu_csv

        report = read_ncu_csv(ncu)
    table = load_peaks(peaks)
    ncu_peaks = peaks_named(table, gpu) if report is not None and gpu else None
    return AnalysisInputs(ncu=report, ncu_peaks=ncu_peaks, gpu_peaks=table)


def run_analyze(
    paths: list[str],
    json_out: Path | None = None,
    all_events: bool = False,
    hta_version: str = "0.6",
    ncu: Path | None = None,
    html: Path | None = None,
    gpu: str | None = None,
    peaks: Path | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    no_cache: bool = False,
    force: bool = False,
    include_prelaunched: bool = False,
    graph_capture: list[Path] | None = None,
) -> dict[str, Any]:
    """The command's work, callable from Python; returns the summary dict.

    Raises:
        InputError: an input is missing, unreadable, corrupt, or two files claim one rank.
        UsageError: a bad option, an option whose module is not available, or an output
            that exists without *force* or cannot be written.
        ExitCode: some inputs could not be analysed (each named in one line, after the
            outputs of the others were written).
    """
    _check_options(hta_version)
    check_outputs([json_out, html], force=force)
    if scheduler is None and workers is None:
        start_read_early(paths)  # a no-op when cli.launch began the read
    import dataclasses

    from rich.console import Console

    from analyzers.options import AnalysisOptions
    from cli import gc_hold
    from cli.captures import split_graph_captures
    from reports.console import print_summary
    from reports.summary import write_summary
    from reports.summary.engine import analyze_paths, progress_bar

    inputs = load_inputs(ncu, gpu, peaks)
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    options = AnalysisOptions(
        all_events=all_events, hta_version=hta_version, include_prelaunched=include_prelaunched
    )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    paths, captures, capture_notes = split_graph_captures(paths, graph_capture or ())
    if captures:
        inputs = dataclasses.replace(inputs, graph_captures=captures)

    def note(line: str) -> None:
        err.print(f"gpuscope: note: {line}", markup=False)

    for line in capture_notes:
        note(line)
    gc_hold.release()  # the imports are done (cli.launch held the collector off for them)
    with progress_bar(err) as progress:
        result = analyze_paths(
            paths,
            options,
            inputs,
            scheduler=scheduler,
            workers=workers,
            use_cache=not no_cache,
            progress=progress,
            say=note,  # a rank spilled: said before its sections run
        )
    from collectors.kineto import early

    early.cancel()  # a read the parse cache made useless
    for line in result.cache_notes:  # once: the entry is rebuilt, the next run is quiet
        note(line)
    # two files claiming one rank make the input set wrong, not one file: no output at all
    conflicts = [e for e in result.errors if e.message.startswith("claims rank ")]
    if conflicts:
        raise conflicts[0].to_exception()
    summary = result.summary
    written: list[Path] = []
    if json_out is not None:
        written.append(write_summary(summary, json_out, force=force))
    if html is not None:
        from reports.html import write_report

        written.append(write_report(summary, html, force=force))
    out = Console(highlight=False)
    print_summary(summary, out)
    for p in written:
        out.print(f"Wrote {p}", markup=False)
    if result.errors:  # the readable inputs were analysed and written; say what was not
        for bad in result.errors:
            err.print(f"gpuscope: error: {bad.line()}", markup=False)
        raise ExitCode(result.exit_code)
    return summary


def run_without_typer(args: Sequence[str]) -> int | None:
    """``gpuscope analyze ARGS``'s exit code (*args*: what follows ``analyze``), the command
    run without typer, or None when :func:`cli.analyze_args.fast_args` leaves *args* to typer
    (nothing is run then)."""
    kwargs = fast_args(args)
    if kwargs is None:
        return None
    return run_command(lambda _err: _as_typer_would(kwargs))


def _as_typer_would(kwargs: dict[str, Any]) -> Any:
    """:func:`analyze_command` with *kwargs*, with what typer's
    ``command.main(standalone_mode=False)`` does around a command: an interrupt is exit code
    130, a closed output pipe exit code 1 with the standard streams quietened; anything else
    is raised to :func:`cli.exit_codes.run_command`."""
    try:
        return analyze_command(**kwargs)
    except KeyboardInterrupt:
        return 130
    except OSError as ex:
        if ex.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = cast(TextIO, PacifyFlushWrapper(sys.stdout))
        sys.stderr = cast(TextIO, PacifyFlushWrapper(sys.stderr))
        sys.exit(1)


def analyze_command(*args: Any, **kwargs: Any) -> None:
    """The command as the command line runs it (typer, or :func:`cli.analyze_args.fast_args`):
    its memory settings, then :func:`run_analyze` with the arguments."""
    memory_settings.apply()
    run_analyze(*args, **kwargs)
