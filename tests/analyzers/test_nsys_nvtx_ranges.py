"""Per-NVTX-range GPU work (analyzers.nvtx_ranges): a hand-computed case and plain SQL on the
shared exports that have NVTX ranges (launching call inside the range on the same thread,
correlation → GPU rows, as Nsight Systems' nvtx_gpu_proj reports define it)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from analyzers.nvtx_ranges import RANGE_COLUMNS, nvtx_gpu_projection, range_launches
from collectors.model import TraceMeta, make_trace
from collectors.nsys import read_nsys
from tests.support.env import shared_path


def hand_trace():
    # thread 1: outer [0, 1000) holds inner [100, 400); thread 2: other [0, 1000)
    annotations = {
        "name": ["outer", "inner", "other", "empty"],
        "kind": ["nvtx"] * 4,
        "start_ns": [0, 100, 0, 2000],
        "end_ns": [1000, 400, 1000, 2100],
        "pid": [7, 7, 7, 7],
        "tid": [1, 1, 2, 1],
    }
    host = {  # (start, end, tid, correlation)
        "name": [
            "cudaLaunchKernel",
            "cudaGraphLaunch",
            "cudaMemcpyAsync",
            "cudaLaunchKernel",
            "late",
        ],
        "cat": ["cuda_runtime"] * 5,
        "start_ns": [150, 300, 600, 700, 990],
        "end_ns": [160, 310, 620, 710, 1010],  # the last call ends after outer: not inside
        "pid": [7] * 5,
        "tid": [1, 1, 1, 2, 1],
        "correlation": [1, 2, 3, 4, 5],
    }
    gpu = {  # correlation 2 is a graph launch: two kernels
        "name": ["k1", "g1", "g2", "HtoD", "k4", "k5"],
        "kind": ["kernel", "kernel", "kernel", "memcpy", "kernel", "kernel"],
        "start_ns": [200, 400, 450, 700, 800, 1100],
        "end_ns": [300, 500, 900, 750, 850, 1200],
        "stream": [7] * 6,
        "correlation": [1, 2, 2, 3, 4, 5],
    }
    return make_trace(TraceMeta(0, "synthetic"), gpu=gpu, host=host, annotations=annotations)


def test_hand_made_ranges_project_their_launches() -> None:
    p = nvtx_gpu_projection(hand_trace())
    assert list(p.columns) == list(RANGE_COLUMNS)
    rows = {r.name: r for r in p.itertuples(index=False)}
    o = rows["outer"]  # k1, g1, g2, HtoD
    assert (o.gpu_ops, o.kernels, o.gpu_start_ns, o.gpu_end_ns) == (4, 3, 200, 900)
    assert (o.gpu_span_ns, o.gpu_sum_ns) == (700, 100 + 100 + 450 + 50)
    assert o.gpu_busy_ns == 100 + 500  # [200,300) ∪ [400,900) ∪ [700,750)
    i = rows["inner"]  # k1, g1, g2
    assert (i.gpu_ops, i.gpu_start_ns, i.gpu_end_ns, i.gpu_sum_ns, i.gpu_busy_ns) == (
        3,
        200,
        900,
        650,
        600,
    )
    t = rows["other"]  # only the call on thread 2
    assert (t.gpu_ops, t.gpu_start_ns, t.gpu_end_ns, t.gpu_busy_ns) == (1, 800, 850, 50)
    e = rows["empty"]
    assert (e.gpu_ops, e.gpu_start_ns, e.gpu_end_ns, e.gpu_span_ns, e.gpu_busy_ns) == (
        0,
        -1,
        -1,
        0,
        0,
    )


def test_range_launch_pairs_list_each_gpu_row() -> None:
    pairs = range_launches(hand_trace())
    assert sorted(map(tuple, pairs.to_numpy().tolist())) == [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 0),
        (1, 1),
        (1, 2),
        (2, 4),
    ]


SQL = """
WITH g AS (
    SELECT start, end, correlationId, globalPid, 1 AS is_kernel FROM CUPTI_ACTIVITY_KIND_KERNEL
    {memcpy}
)
SELECT COALESCE(n.text, s.value), n.start, n.end,
       COUNT(g.start), SUM(g.is_kernel), MIN(g.start), MAX(g.end), TOTAL(g.end - g.start)
FROM NVTX_EVENTS n
LEFT JOIN StringIds s ON s.id = n.textId
LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
       ON r.globalTid = n.globalTid AND r.start >= n.start AND r.end <= n.end
      AND r.eventClass IN (0, 1)
LEFT JOIN g ON g.correlationId = r.correlationId AND g.globalPid = (r.globalTid & -16777216)
WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL
GROUP BY n.rowid
"""


@pytest.mark.parametrize(
    "name",
    [
        "nsys2022.2.1.31__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
        "nsys2023.1.2.43__memfusion_artifact__report1.sqlite",
        "nsys2024.6.2.25__Fuser__report2.sqlite",
    ],
)
def test_shared_export_range_projection_matches_sql(name: str) -> None:
    path: Path = shared_path("nsys", name)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    extra = "".join(
        f" UNION ALL SELECT start, end, correlationId, globalPid, 0 FROM {t}"
        for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        if t in tables
    )
    want = Counter(
        (n, s, e, c, k or 0, -1 if c == 0 else lo, -1 if c == 0 else hi, int(tot))
        for n, s, e, c, k, lo, hi, tot in con.execute(SQL.format(memcpy=extra))
    )
    con.close()
    (trace,) = read_nsys(path)
    p = nvtx_gpu_projection(trace)
    got = Counter(
        (
            r.name,
            r.start_ns,
            r.end_ns,
            r.gpu_ops,
            r.kernels,
            r.gpu_start_ns,
            r.gpu_end_ns,
            r.gpu_sum_ns,
        )
        for r in p.itertuples(index=False)
    )
    assert got == want
    assert (p["gpu_ops"] > 0).any()  # some range launched GPU work: the comparison is not vacuous
    assert (p["gpu_busy_ns"] <= p["gpu_sum_ns"]).all() and (
        p["gpu_busy_ns"] <= p["gpu_span_ns"]
    ).all()
