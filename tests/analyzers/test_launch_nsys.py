"""Launch and idle analyses on the real Nsight Systems exports that have runtime and kernel tables.

Internal consistency (no peer tool publishes these figures for the exports): every GPU op is
linked to at most one launch call, no op starts before the call that enqueued it, the number of
linked kernels equals a plain-SQL count on the same file (``correlationId`` and process), the
GPU-wide idle equals the temporal breakdown's, the attributions add up, and each stream's HTA
intervals telescope to ``last end − first start − Σ durations``.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from analyzers.host_bound import VERDICTS, rank_verdict
from analyzers.idle import gpu_idle, stream_idle_intervals
from analyzers.launch import all_launches, queue_length
from analyzers.options import AnalysisOptions
from analyzers.temporal import temporal_breakdown
from analyzers.window import gpu_events
from collectors.model import GPU_WORK_KINDS, Trace
from tests.support.env import SHARED_DATA

WITH_KERNELS_AND_RUNTIME = (
    "nsys2022.2.1.31__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
    "nsys2022.4.1.21__parallel_course_2__report4.sqlite",
    "nsys2023.1.2.43__memfusion_artifact__report1.sqlite",
    "nsys2023.1.2.43__recon-stream__report13.sqlite",
    "nsys2023.3.1.92__SC23_Programming-Your-GPU-with-OpenMP_Tutorial__report3.sqlite",
    "nsys2024.6.2.25__Fuser__report2.sqlite",
    "nsys2025.5.2.266__cuda-perf-sandbox__report1.sqlite",
)
OPTIONS = AnalysisOptions()


def _path(name: str) -> Path:
    p = SHARED_DATA / "nsys" / name
    if not p.exists():
        pytest.skip(f"shared data not present: {p} (set GPUSCOPE_SHARED to the shared/ folder)")
    return p


@functools.cache
def traces(name: str) -> tuple[Trace, ...]:
    from collectors.load import load_traces

    return tuple(load_traces([_path(name)]))


def sql_linked_kernels(path: Path) -> tuple[int, int]:
    """(kernels whose launch call is in the runtime table, of those: started before the call).

    Only ``eventClass`` 0 (CUDA runtime) and 1 (driver) rows are API calls; the 2022.2 export
    repeats each call under another class (nsys-sqlite.md §4).
    """
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        q = """
            SELECT COUNT(*), COALESCE(SUM(k.start < r.start), 0)
            FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
            JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
              ON r.correlationId = k.correlationId
             AND (r.globalTid & -16777216) = k.globalPid
            WHERE r.eventClass IN (0, 1)
        """
        n, early = con.execute(q).fetchone()
    finally:
        con.close()
    return int(n), int(early)


@pytest.mark.parametrize("name", WITH_KERNELS_AND_RUNTIME)
def test_each_gpu_op_has_at_most_one_launch_and_starts_after_it(name: str) -> None:
    for t in traces(name):
        a = all_launches(t, OPTIONS)
        assert a["gpu_index"].is_unique
        assert (a["start_after_call_ns"] >= 0).all()
        assert (a["launch_delay_ns"] >= 0).all()
        assert (a["cpu_duration_ns"] >= 0).all()
        # launch delay = max(0, GPU start − call end), recomputed from the trace's own rows
        g = t.gpu.loc[a["gpu_index"]]
        end = a["cpu_start_ns"].to_numpy() + a["cpu_duration_ns"].to_numpy()
        want = np.maximum(0, g["start_ns"].to_numpy() - end)
        assert np.array_equal(a["launch_delay_ns"].to_numpy(), want)
        # the queue never goes below zero when every op starts after its launch
        q = queue_length(t, OPTIONS)
        assert q.empty or int(q["queue_length"].min()) >= 0


@pytest.mark.parametrize("name", WITH_KERNELS_AND_RUNTIME)
def test_linked_kernels_match_a_plain_sql_count(name: str) -> None:
    n_sql, early_sql = sql_linked_kernels(_path(name))
    linked = sum(
        int((all_launches(t, AnalysisOptions(all_events=True))["kind"] == "kernel").sum())
        for t in traces(name)
    )
    assert linked == n_sql
    assert early_sql == 0  # the data agree: no kernel starts before its launch call


@pytest.mark.parametrize("name", WITH_KERNELS_AND_RUNTIME)
def test_idle_views_add_up(name: str) -> None:
    for t in traces(name):
        g = gpu_idle(t, OPTIONS)
        assert g.idle_ns == temporal_breakdown(t, OPTIONS).idle_ns
        assert sum(g.by_cause.values()) == g.idle_ns
        assert sum(g.by_cpu_activity.values()) == g.idle_ns
        assert rank_verdict(t, OPTIONS).verdict in (*VERDICTS, None)


@pytest.mark.parametrize("name", WITH_KERNELS_AND_RUNTIME)
def test_stream_intervals_telescope(name: str) -> None:
    for t in traces(name):
        iv = stream_idle_intervals(t, OPTIONS)
        ev = gpu_events(t, OPTIONS)
        ev = ev[ev["kind"].isin(GPU_WORK_KINDS)].sort_values("start_ns", kind="stable")
        for stream, grp in ev.groupby("stream"):
            s = grp["start_ns"].to_numpy()
            e = grp["end_ns"].to_numpy()
            want = int(e[-1] - s[0] - (e - s).sum())
            assert int(iv.loc[iv["stream"] == stream, "idle_ns"].sum()) == want
