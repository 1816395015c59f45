"""The run directory's ``meta.json`` and the analysis written after a run.

The layout (names and paths) is defined once, in :mod:`collectors.rundir`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.rundir import META, REPORT, SUMMARY, TRACES, read_rank_metas, trace_files
from profiler import environment
from reports.output import write_atomic

META_VERSION = 1


def step_time_stats(times_ns: list[int]) -> dict[str, int] | None:
    """``count``, ``median_ns`` (:func:`analyzers.stats.median`, to the nearest ns), ``min_ns``,
    ``max_ns`` of host step durations."""
    if not times_ns:
        return None
    from analyzers.stats import median, round_ns  # numpy: only when there is something to sum

    return {
        "count": len(times_ns),
        "median_ns": round_ns(median(times_ns)),
        "min_ns": int(min(times_ns)),
        "max_ns": int(max(times_ns)),
    }


def _rank_entry(m: dict[str, Any], nvml: dict[str, Any]) -> dict[str, Any]:
    keep = {k: v for k, v in m.items() if k not in ("step_times_ns", "nvml", "schema_version")}
    keep["step_time"] = step_time_stats(list(m.get("step_times_ns") or []))
    driver = (nvml.get(str(m.get("host"))) or {}).get("driver_version")
    keep["versions"] = {**(m.get("versions") or {}), "driver": driver}
    return keep


def write_meta(
    run_dir: str | Path,
    *,
    command: list[str],
    exit_code: int | None,
    started_unix_ns: int | None = None,
    ended_unix_ns: int | None = None,
    options: dict[str, Any] | None = None,
    git: dict[str, Any] | None = None,
    files: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Merge the per-rank metadata into ``meta.json`` (atomically,
    :func:`reports.output.write_atomic`) and return it.

    Raises:
        UsageError: the run directory or ``meta.json`` cannot be written.
    """
    run = Path(run_dir)
    ranks = read_rank_metas(run)
    nvml: dict[str, Any] = {}
    for m in ranks:
        if m.get("nvml") is not None:
            nvml.setdefault(str(m.get("host")), m["nvml"])
    meta: dict[str, Any] = {
        "schema_version": META_VERSION,
        "tool": {"name": "gpuscope", "version": environment.versions().get("gpuscope")},
        "command": list(command),
        "cwd": os.getcwd(),
        "host": environment.hostname(),
        "exit_code": exit_code,
        "started_unix_ns": started_unix_ns,
        "ended_unix_ns": ended_unix_ns,
        "options": options or {},
        "git": git,
        "world_size": max((int(m.get("world_size", 1)) for m in ranks), default=None),
        "hosts": sorted({str(m.get("host")) for m in ranks}),
        "ranks": [_rank_entry(m, nvml) for m in ranks],
        "nvml": nvml,
        "files": files or {},
        "notes": notes or [],
    }
    text = json.dumps(meta, indent=1, allow_nan=False) + "\n"
    write_atomic(run / META, text, force=True, what="run metadata")
    return meta


@dataclass
class Outcome:
    """What :func:`analyse` produced (paths relative to nothing: absolute or as given)."""

    traces: list[Path] = field(default_factory=list)
    counters: list[Path] = field(default_factory=list)
    summary: Path | None = None
    report: Path | None = None
    notes: list[str] = field(default_factory=list)


def analyse(run_dir: str | Path, *, report: bool = True) -> Outcome:
    """Summarise what a run captured: ``summary.json`` and (if possible) ``report.html``.

    Never raises for a run that captured little or nothing: what could not be produced is
    explained in ``Outcome.notes``.
    """
    from collectors.errors import GpuscopeError
    from collectors.nvml import counter_files, read_run_counters

    run = Path(run_dir)
    out = Outcome(traces=trace_files(run), counters=counter_files(run))
    if not out.traces:
        out.notes.append(
            "no trace captured (the program ended before the step window, never imported "
            "torch or profiler, or ran under a Python without gpuscope)"
        )
        return out
    try:
        from collectors.load import load_traces
        from reports.summary import build_summary, write_summary

        traces = load_traces([run / TRACES])
        extras: dict[str, Any] = {"run_dir": str(run)}
        try:
            extras["nvml"] = read_run_counters(out.counters)
        except GpuscopeError as e:
            out.notes.append(f"NVML counters not read: {e}")
        summary = build_summary(traces, extras=extras)
        out.summary = write_summary(summary, run / SUMMARY, force=True)
    except GpuscopeError as e:
        out.notes.append(f"summary not written: {e}")
        return out
    except Exception as e:  # a bug in an analysis must not hide the run's own outcome
        out.notes.append(f"summary not written: {type(e).__name__}: {e}")
        return out
    if report:
        try:
            from reports.html import write_report
        except ImportError:
            out.notes.append("HTML report skipped: reports.html is not available in this version")
            return out
        try:
            write_report(summary, run / REPORT, force=True)
            out.report = run / REPORT
        except Exception as e:
            out.notes.append(f"HTML report not written: {type(e).__name__}: {e}")
    return out
