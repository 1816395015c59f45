"""Every real nsys export in ../shared/data/nsys loads, and what it holds matches plain SQL.

Each expectation is computed here, independently of the reader, with the ``sqlite3`` module on
the same file (window functions for the median, a two-pass sum for the sample stddev); device
properties are compared with ``TARGET_INFO_GPU_observed.csv`` and versions with ``MANIFEST.md``.
"""

from __future__ import annotations

import csv
import functools
import math
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from analyzers.kernel_summary import kernel_summary
from collectors.model import Trace
from collectors.nsys import NO_KERNELS_NOTE
from collectors.nsys import read_nsys as _read_nsys
from tests.support.env import SHARED_DATA, shared_path

FILES = sorted((SHARED_DATA / "nsys").glob("*.sqlite"))


def _files() -> list[object]:
    if FILES:
        return [
            pytest.param(f, id=f.name.split("__")[0] + "-" + f.name.split("__")[1]) for f in FILES
        ]
    return [pytest.param(None, id="no-shared-data")]


@functools.cache
def read_nsys(path: Path) -> tuple[Trace, ...]:
    """Each export is read once per test session (the tests only read the traces)."""
    return tuple(_read_nsys(path))


def _path(f: Path | None) -> Path:
    return shared_path("nsys", f.name) if f is not None else shared_path("nsys", "missing")


def _sql(path: Path, query: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _tables(path: Path) -> set[str]:
    return {r[0] for r in _sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


KERNEL_STATS_SQL = """
WITH k AS (
    SELECT s.value AS name, k.end - k.start AS d
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName
),
r AS (
    SELECT name, d,
           ROW_NUMBER() OVER (PARTITION BY name ORDER BY d) AS rn,
           COUNT(*) OVER (PARTITION BY name) AS n,
           AVG(d) OVER (PARTITION BY name) AS mean
    FROM k
)
SELECT name, COUNT(*) AS n, SUM(d) AS total, AVG(d) AS avg,
       AVG(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN d END) AS median,
       MIN(d), MAX(d), SUM((d - mean) * (d - mean)) AS ss
FROM r GROUP BY name
ORDER BY total DESC, n ASC, name ASC
"""


@pytest.mark.parametrize("f", _files())
def test_shared_export_kernel_summary_matches_plain_sql(f: Path | None) -> None:
    path = _path(f)
    traces = read_nsys(path)
    assert traces, "every export gives at least one trace"
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in _tables(path):
        for t in traces:
            assert kernel_summary(t).empty
            assert NO_KERNELS_NOTE in t.meta.extra["notes"]
        return
    expected = _sql(path, KERNEL_STATS_SQL)
    assert len(traces) == 1  # every shared export with kernels ran them from one process/GPU
    got = kernel_summary(traces[0])
    assert list(got["name"]) == [e[0] for e in expected]  # cuda_gpu_kern_sum order
    grand = sum(e[2] for e in expected)
    for row, (name, n, total, avg, median, mn, mx, ss) in zip(
        got.itertuples(index=False), expected, strict=True
    ):
        assert (row.count, row.total_ns, row.min_ns, row.max_ns) == (n, total, mn, mx), name
        assert math.isclose(row.avg_ns, avg, rel_tol=1e-12)
        assert math.isclose(row.median_ns, median, rel_tol=1e-12)
        sd = math.sqrt(ss / (n - 1)) if n > 1 else 0.0
        assert math.isclose(row.stddev_ns, sd, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(row.time_pct, 100.0 * total / grand, rel_tol=1e-12)


@pytest.mark.parametrize("f", _files())
def test_shared_export_memcpy_memset_counts_and_bytes_match_sql(f: Path | None) -> None:
    path = _path(f)
    tables = _tables(path)
    gpu = [t.gpu for t in read_nsys(path)]
    for table, kind in (
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "memset"),
    ):
        want = (
            _sql(path, f"SELECT COUNT(*), TOTAL(bytes) FROM {table}")[0]
            if table in tables
            else (0, 0)
        )
        rows = [g[g["kind"] == kind] for g in gpu]
        assert sum(len(r) for r in rows) == want[0]
        assert sum(int(r["bytes"].sum()) for r in rows) == int(want[1])
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables and "ENUM_CUDA_MEMCPY_OPER" in tables:
        want_names = Counter(
            dict(
                _sql(
                    path,
                    "SELECT '[CUDA memcpy ' || e.label || ']', COUNT(*) "
                    "FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                    "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind GROUP BY 1",
                )
            )
        )
        got = Counter()
        for g in gpu:
            got.update(g.loc[g["kind"] == "memcpy", "name"].astype(str))
        assert got == want_names


@pytest.mark.parametrize("f", _files())
def test_shared_export_api_calls_and_kernel_links_match_sql(f: Path | None) -> None:
    path = _path(f)
    traces = read_nsys(path)
    n_calls = _sql(
        path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)"
    )
    assert sum(len(t.host) for t in traces) == n_calls[0][0]
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in _tables(path):
        return
    # kernels whose launching call is found: same correlation id in the same process
    linked = _sql(
        path,
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM "
        "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.eventClass IN (0, 1) AND r.correlationId = "
        "k.correlationId AND (r.globalTid & -16777216) = k.globalPid)",
    )[0][0]
    got = 0
    for t in traces:
        k = t.gpu[t.gpu["kind"] == "kernel"]
        got += int(k["correlation"].isin(t.host["correlation"]).sum())
    assert got == linked


NVTX_SQL = """
SELECT COALESCE(n.text, s.value), n.start, n.end, d.text
FROM NVTX_EVENTS n
LEFT JOIN StringIds s ON s.id = n.textId
LEFT JOIN NVTX_EVENTS d ON d.eventType = 75 AND d.domainId = n.domainId
WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL
"""


@pytest.mark.parametrize("f", _files())
def test_shared_export_nvtx_ranges_match_sql(f: Path | None) -> None:
    path = _path(f)
    traces = read_nsys(path)
    want = Counter(_sql(path, NVTX_SQL)) if "NVTX_EVENTS" in _tables(path) else Counter()
    got: Counter = Counter()
    for t in traces:
        a = t.annotations
        assert (a["kind"] == "nvtx").all()
        got.update(
            (n, s, e, None if d != d else d)
            for n, s, e, d in zip(
                a["name"].astype(object),
                a["start_ns"],
                a["end_ns"],
                a["domain"].astype(object),
                strict=True,
            )
        )
    assert got == want


def _observed_gpus() -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    with (SHARED_DATA / "nsys" / "TARGET_INFO_GPU_observed.csv").open() as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["source_file"], []).append(row)
    return out


@pytest.mark.parametrize("f", _files())
def test_shared_export_devices_match_sql_and_observed_csv(f: Path | None) -> None:
    path = _path(f)
    traces = read_nsys(path)
    observed = {r["name"]: r for r in _observed_gpus()[path.name]}
    tables = _tables(path)
    used = set()
    for table in (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ):
        if table in tables:
            used |= {r[0] for r in _sql(path, f"SELECT DISTINCT deviceId FROM {table}")}
    names = dict(_sql(path, "SELECT id, name FROM TARGET_INFO_GPU"))
    for t in traces:
        if used:
            dev = t.gpu_device
            assert dev is not None and dev.id in used and dev.name == names[dev.id]
            devs = [dev]
        else:
            devs = t.meta.devices
            assert sorted(d.name for d in devs) == sorted(names.values())
        for d in devs:
            o = observed[d.name]
            assert (d.compute_major, d.compute_minor) == (
                int(o["computeMajor"]),
                int(o["computeMinor"]),
            )
            assert d.sm_count == int(o["smCount"])
            assert d.l2_cache_bytes == int(o["l2CacheSize"])
            assert d.memory_bandwidth_bytes_per_s == float(o["memoryBandwidth"])
            assert d.clock_rate_khz * 1000 == int(o["clockRate"])
            assert d.smem_per_sm_bytes == int(o["maxShmemPerSm"])
            assert d.smem_per_block_optin_bytes == int(o["maxShmemPerBlockOptin"])
            assert d.max_warps_per_sm == int(o["maxWarpsPerSm"])
            assert d.max_threads_per_sm == int(o["maxWarpsPerSm"]) * int(o["threadsPerWarp"])
            assert d.regs_per_sm == int(o["maxRegistersPerSm"])


def _manifest_versions() -> dict[str, tuple[str, str]]:
    text = (SHARED_DATA / "nsys" / "MANIFEST.md").read_text()
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 7 and cells[1].endswith(".sqlite"):
            m = re.match(r"([\d.]+) / ([\d.]+)", cells[6])
            if m:
                out[cells[1]] = (m.group(1), m.group(2))
    return out


@pytest.mark.parametrize("f", _files())
def test_shared_export_versions_and_session_start_match_manifest_and_sql(f: Path | None) -> None:
    path = _path(f)
    product, schema = _manifest_versions()[path.name]
    start = _sql(path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")[0][0]
    for t in read_nsys(path):
        assert t.meta.source_format == "nsys"
        assert t.meta.source_version == schema
        assert t.meta.extra["nsys_version"] == product
        assert t.meta.base_time_ns == start
        assert t.meta.rank == 0 and t.meta.world_size == 1
