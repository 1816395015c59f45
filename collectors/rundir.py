"""The run directory (``gpuscope run``, ``profiler.profile``): the one definition of its layout.

::

    RUN/
      meta.json                         run metadata (profiler.rundir.write_meta; docs/capture.md)
      summary.json                      the JSON summary of the captured traces
      report.html                       the HTML report
      traces/rank-<r>.pt.trace.json.gz  Kineto traces, one per rank
      ranks/rank-<r>.json               per-rank metadata written by the profiled processes
      counters/<host>.csv.gz            NVML samples, one file per node
      nsys/report.nsys-rep (+ .sqlite)  with --nsys

The writers (:mod:`profiler.session`, :mod:`profiler.rundir`, :mod:`profiler.launch`) and the
readers (:mod:`collectors.load`, :mod:`collectors.nvml`, the CLI, the report's ``run`` section)
all take the names and paths from here.  Standard library only (imported by the training
process).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRACES = "traces"
RANKS = "ranks"
COUNTERS = "counters"
NSYS = "nsys"
META = "meta.json"
SUMMARY = "summary.json"
REPORT = "report.html"

OWNED = (TRACES, RANKS, COUNTERS, NSYS, META, SUMMARY, REPORT)
"""What ``gpuscope run --force`` may replace in an existing directory."""

TRACE_SUFFIX = ".pt.trace.json.gz"
COUNTERS_SUFFIX = ".csv.gz"


def trace_path(run_dir: str | Path, rank: int) -> Path:
    """``RUN/traces/rank-<r>.pt.trace.json.gz``."""
    return Path(run_dir, TRACES, f"rank-{rank}{TRACE_SUFFIX}")


def rank_meta_path(run_dir: str | Path, rank: int) -> Path:
    """``RUN/ranks/rank-<r>.json``."""
    return Path(run_dir, RANKS, f"rank-{rank}.json")


def counter_path(run_dir: str | Path, host: str) -> Path:
    """``RUN/counters/<host>.csv.gz``."""
    return Path(run_dir, COUNTERS, f"{host}{COUNTERS_SUFFIX}")


def is_run_dir(path: str | Path) -> bool:
    """Whether *path* is a run directory: it holds ``meta.json`` and ``traces/``."""
    p = Path(path)
    return p.is_dir() and (p / META).is_file() and (p / TRACES).is_dir()


def read_run_meta(run_dir: str | Path | None) -> dict[str, Any] | None:
    """``RUN/meta.json``, or None when *run_dir* is None or the file is absent, unreadable or
    not a JSON object (the summary then has no run facts)."""
    if not run_dir:
        return None
    try:
        meta = json.loads(Path(run_dir, META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def read_rank_metas(run_dir: str | Path) -> list[dict[str, Any]]:
    """The ``ranks/rank-<r>.json`` files, sorted by rank (unreadable files are skipped)."""
    out = []
    for p in sorted(Path(run_dir, RANKS).glob("rank-*.json")):
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda m: int(m.get("rank", 0)))


def trace_files(run_dir: str | Path) -> list[Path]:
    """``traces/*.json.gz`` / ``*.json`` of a run directory, sorted."""
    d = Path(run_dir, TRACES)
    return sorted(p for p in d.glob("*") if p.name.endswith((".json", ".json.gz")))
