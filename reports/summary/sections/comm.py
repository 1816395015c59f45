"""JSON summary sections of communication, and the JSON of nccl-tests / commbench tables.

Rank sections (``reports.summary.RANK_SECTIONS``): ``collectives`` (the rows of the
per-collective summary by size bucket, :func:`analyzers.comm.collective_summary`) and ``comm``
(call counts, exposed communication by collective type and by step, process groups and the
breakdown by parallelism dimension).  Run
section (``RUN_SECTIONS``): ``comm_skew`` (cross-rank matching, :mod:`analyzers.skew`).
Definitions: docs/communication.md.  Times are integer ns in keys ending ``_ns``; bandwidths
GB/s (10⁹ B/s); NaN is written as ``null``; a section is left out (``None``) when the rank (or
run) has no collective.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analyzers.inputs import AnalysisInputs
    from analyzers.options import AnalysisOptions
    from collectors.model import Trace


def _json(v: Any) -> Any:
    """A JSON-ready scalar: numpy → Python, NaN/NA → None, tuples → lists."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (tuple, list)):
        return [_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json(x) for k, x in v.items()}
    return v


def records(df: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-ready dicts."""
    cols = list(columns) if columns is not None else list(df.columns)
    return [
        {c: _json(v) for c, v in zip(cols, row, strict=True)}
        for row in df[cols].itertuples(index=False, name=None)
    ]


def collectives(
    trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> list[dict[str, Any]] | None:
    """Per-collective summary rows of the window (None when the rank has no collective)."""
    from analyzers.collectives import collectives_table
    from analyzers.comm import collective_summary

    if collectives_table(trace).empty:
        return None
    return records(collective_summary(trace, options))


def comm(trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs) -> dict[str, Any] | None:
    """Exposed communication by collective type, step and parallelism dimension."""
    from analyzers.collectives import collectives_table
    from analyzers.comm import exposed_by_collective, window_collectives
    from analyzers.parallelism import comm_by_dimension, trace_process_groups

    table = collectives_table(trace)
    ex = exposed_by_collective(trace, options)
    if table.empty and ex.comm_ns == 0:
        return None
    w = window_collectives(trace, options)
    groups = trace_process_groups(trace)
    by_step = ex.by_step.rename(columns={"label": "collective"})
    return {
        "calls_in_window": len(w),
        "calls_without_gpu_work": int((table["n_gpu_rows"] == 0).sum()),
        "sizes_known": int((w["message_bytes"] >= 0).sum()),
        "group_size_known": int((w["group_size"] > 0).sum()),
        "comm_ns": ex.comm_ns,
        "exposed_ns": ex.exposed_ns,
        "by_collective": records(ex.by_label.rename(columns={"label": "collective"})),
        "by_step": records(by_step),
        "process_groups": records(groups),
        "by_dimension": records(comm_by_dimension(trace, options)),
    }


def comm_skew(
    traces: Sequence[Trace], options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[str, Any] | None:
    """Cross-rank skew (None with fewer than two ranks or nothing matched)."""
    from analyzers.skew import cross_rank_skew

    if len(traces) < 2:
        return None
    s = cross_rank_skew(traces, options)
    if s.matched.empty:
        return None
    ok = s.matched[s.matched["consistent"].astype(bool)]
    return {
        "matched": len(s.matched),
        "mismatched": s.mismatched,
        "match_by": sorted(set(s.matched["match_by"])),
        "arrival_skew_ns": int(ok["arrival_skew_ns"].sum()),
        "transfer_ns": int(ok["transfer_ns"].sum()),
        "per_rank": records(s.per_rank),
        "per_step": records(s.per_step),
        "collectives": records(s.matched),
    }


def nccl_tests_json(logs: Sequence[Any], source: str) -> dict[str, Any]:
    """The JSON written by ``gpuscope nccl-tests --json`` and ``gpuscope commbench --json``.

    ``logs`` are :class:`collectors.nccl_tests.NcclTestsLog`; ``peak`` is
    :func:`collectors.nccl_tests.peak_table` (best busbw per collective and size).
    """
    from collectors.nccl_tests import peak_table

    out_logs = []
    for log in logs:
        out_logs.append(
            {
                "path": log.path,
                "collective": log.collective,
                "collective_source": log.collective_source,
                "nranks": log.nranks,
                "nranks_source": log.nranks_source,
                "layout": log.layout,
                "devices": list(log.devices),
                "hosts": list(log.hosts),
                "version": log.version,
                "params": dict(log.params),
                "avg_busbw_footer": log.avg_busbw_footer,
                "checked_ok": log.checked_ok,
                "warnings": list(log.warnings),
                "rows": records(log.rows),
            }
        )
    return {
        "schema_version": 1,
        "source": source,
        "logs": out_logs,
        "peak": records(peak_table(logs)),
    }
