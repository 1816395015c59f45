"""Hand-made nsys exports (real table layout) for what the shared exports do not contain.

Multi-process / multi-GPU rank order, ranks recorded by the run, NCCL-domain payloads, memory
counters, name fallbacks, exports without ENUM tables or GPU activity.  Every expected value is
written out from the rows inserted here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.kernel_summary import kernel_summary
from collectors.nsys import NO_GPU_NOTE, read_nsys, read_nsys_files
from tests.support import nsys_sqlite as gen

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
STRINGS = [
    "gemm(float*)",
    "gemm",
    "relu(float*)",
    "relu",
    "cudaLaunchKernel_v7000",
    "cudaMalloc_v3020",
]
SID = {s: i for i, s in enumerate(STRINGS, start=1)}


def export(path: Path, tables: Mapping[str, Sequence[Mapping[str, Any]]], gpus: int = 2) -> Path:
    con = sqlite3.connect(path)
    gen.create_tables(con)
    gen.write_base(con, gpus=gpus)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", SID_ROWS)
    for table, rows in tables.items():
        gen.insert(con, table, rows)
    con.commit()
    con.close()
    return path


SID_ROWS = [(i, s) for s, i in SID.items()]


def kernel(pid: int, device: int, corr: int, start: int, dur: int, name: str = "gemm") -> dict:
    return {
        "start": start,
        "end": start + dur,
        "deviceId": device,
        "contextId": 1,
        "streamId": 7,
        "correlationId": corr,
        "globalPid": gen.global_pid(pid),
        "demangledName": SID[f"{name}(float*)"],
        "shortName": SID[name],
        "registersPerThread": 32,
        "gridX": 4,
        "gridY": 2,
        "gridZ": 1,
        "blockX": 256,
        "blockY": 1,
        "blockZ": 1,
        "staticSharedMemory": 1024,
        "dynamicSharedMemory": 4096,
    }


def call(
    pid: int, corr: int, start: int, name: str = "cudaLaunchKernel_v7000", tid: int = 0
) -> dict:
    return {
        "start": start,
        "end": start + 5,
        "eventClass": 0,
        "globalTid": gen.global_pid(pid) | (tid or pid),
        "correlationId": corr,
        "nameId": SID[name],
    }


def test_processes_and_devices_get_ranks_in_pid_then_device_order(tmp_path: Path) -> None:
    p = export(
        tmp_path / "run.sqlite",
        {
            KERNEL: [
                kernel(200, 1, 1, 1_000, 10),
                kernel(100, 1, 2, 2_000, 20),
                kernel(100, 0, 3, 3_000, 30),
            ],
            RUNTIME: [
                call(200, 1, 900),
                call(100, 2, 1_900),
                call(100, 3, 2_900),
                call(100, 99, 100, "cudaMalloc_v3020"),  # launched nothing
            ],
            "NVTX_EVENTS": [
                {
                    "start": 0,
                    "end": 5_000,
                    "eventType": 59,
                    "text": "step",
                    "globalTid": gen.global_pid(100) | 100,
                }
            ],
        },
    )
    traces = read_nsys(p)
    got = [
        (t.rank, t.meta.extra["process"]["pid"], t.meta.extra["device_id"], t.meta.rank_source)
        for t in traces
    ]
    assert got == [(0, 100, 0, "default"), (1, 100, 1, "default"), (2, 200, 1, "default")]
    assert all(t.meta.world_size == 3 for t in traces)
    # API calls go with the device whose work they launched; the rest to the lowest device
    assert sorted(traces[0].host["correlation"]) == [3, 99]
    assert list(traces[1].host["correlation"]) == [2]
    assert list(traces[2].host["correlation"]) == [1]
    assert list(traces[0].host["name"]) == ["cudaLaunchKernel", "cudaMalloc"]  # table order
    assert set(traces[0].host["cat"]) == {"cuda_runtime"}
    assert list(traces[0].host["pid"]) == [100, 100]
    assert list(traces[0].host["tid"]) == [100, 100]
    # the process's NVTX range is on both of its device traces, not on the other process's
    assert [len(t.annotations) for t in traces] == [1, 1, 0]
    assert [t.gpu_device.id for t in traces] == [0, 1, 1]


def test_kernel_row_fields_follow_the_export(tmp_path: Path) -> None:
    p = export(
        tmp_path / "k.sqlite",
        {KERNEL: [kernel(100, 0, 5, 1_000, 250)], RUNTIME: [call(100, 5, 990)]},
    )
    (t,) = read_nsys(p)
    row = t.gpu.iloc[0]
    assert (row["name"], row["kind"], row["start_ns"], row["end_ns"]) == (
        "gemm(float*)",
        "kernel",
        1_000,
        1_250,
    )
    assert (row["device"], row["stream"], row["correlation"]) == (0, 7, 5)
    assert (row["grid_x"], row["grid_y"], row["grid_z"]) == (4, 2, 1)
    assert (row["block_x"], row["block_y"], row["block_z"]) == (256, 1, 1)
    assert row["registers_per_thread"] == 32
    assert (row["static_smem_bytes"], row["dynamic_smem_bytes"], row["shared_mem_bytes"]) == (
        1024,
        4096,
        5120,
    )
    assert t.meta.extra["kernel_short_names"] == {"gemm(float*)": "gemm"}


def test_kernel_summary_of_hand_made_durations(tmp_path: Path) -> None:
    rows = [
        kernel(100, 0, i, 1_000 * i, d, n)
        for i, (d, n) in enumerate(
            [(10, "gemm"), (20, "gemm"), (60, "gemm"), (10, "relu")], start=1
        )
    ]
    (t,) = read_nsys(export(tmp_path / "s.sqlite", {KERNEL: rows}))
    s = kernel_summary(t)
    assert list(s["name"]) == ["gemm(float*)", "relu(float*)"]
    assert list(s["count"]) == [3, 1] and list(s["total_ns"]) == [90, 10]
    assert list(s["median_ns"]) == [20.0, 10.0]
    assert s["stddev_ns"].tolist() == pytest.approx([(1400 / 2) ** 0.5, 0.0])
    assert s["time_pct"].tolist() == pytest.approx([90.0, 10.0])


def test_missing_demangled_string_falls_back_to_the_short_name(tmp_path: Path) -> None:
    k = {**kernel(100, 0, 1, 0, 10), "demangledName": 777}  # id absent from StringIds
    (t,) = read_nsys(export(tmp_path / "n.sqlite", {KERNEL: [k]}))
    assert list(t.gpu["name"]) == ["gemm"]


def test_mpi_rank_thread_names_give_the_ranks(tmp_path: Path) -> None:
    paths = []
    for i, (pid, rank) in enumerate([(100, 1), (200, 0)]):
        con_rows = {
            KERNEL: [kernel(pid, 0, 1, 0, 10)],
            "ThreadNames": [{"nameId": 50 + rank, "globalTid": gen.global_pid(pid) | pid}],
        }
        p = export(tmp_path / f"r{i}.sqlite", con_rows)
        con = sqlite3.connect(p)
        con.execute("INSERT INTO StringIds VALUES (?, ?)", (50 + rank, f"MPI Rank {rank}"))
        con.commit()
        con.close()
        paths.append(p)
    traces = read_nsys_files(paths, [])
    assert [(t.rank, t.meta.extra["process"]["pid"], t.meta.rank_source) for t in traces] == [
        (0, 200, "nsys"),
        (1, 100, "nsys"),
    ]
    assert traces[0].meta.extra["threads"] == [{"tid": 200, "name": "MPI Rank 0"}]


def test_launcher_rank_variable_in_the_captured_environment_gives_the_rank(tmp_path: Path) -> None:
    env = [
        {"name": "PROCESS_0:ENVIRONMENT_VARIABLE", "value": 'HOME="/root"'},
        {"name": "PROCESS_0:ENVIRONMENT_VARIABLE", "value": 'RANK="3"'},
        {"name": "PROCESS_0:ENVIRONMENT_VARIABLE", "value": 'WORLD_SIZE="4"'},
        {"name": "DEVICE_DISPLAY_NAME", "value": "node17"},
    ]
    (t,) = read_nsys(
        export(
            tmp_path / "e.sqlite", {KERNEL: [kernel(100, 0, 1, 0, 10)], "META_DATA_CAPTURE": env}
        )
    )
    assert (t.rank, t.meta.world_size, t.meta.rank_source, t.meta.hostname) == (
        3,
        4,
        "nsys",
        "node17",
    )


def test_without_recorded_ranks_files_are_ordered_naturally(tmp_path: Path) -> None:
    paths = [
        export(tmp_path / f"report.{i}.sqlite", {KERNEL: [kernel(100 + i, 0, 1, 0, 10)]})
        for i in (10, 2)
    ]
    traces = read_nsys_files(paths, [])
    assert [(t.rank, Path(t.meta.source_path).name) for t in traces] == [
        (0, "report.2.sqlite"),
        (1, "report.10.sqlite"),
    ]


def test_nvtx_ranges_names_domains_and_nccl_payload(tmp_path: Path) -> None:
    gt = gen.global_pid(100) | 101
    payload = (
        '{"NCCL communicator ID": 1234, "Message size [bytes]": 4096, "Reduction operation": "Sum"}'
    )
    nvtx = [
        {"start": -5, "eventType": 75, "text": "NCCL", "domainId": 5, "globalTid": gt},
        {
            "start": 10,
            "end": 50,
            "eventType": 59,
            "text": "ncclAllReduce",
            "domainId": 5,
            "globalTid": gt,
            "jsonText": payload,
            "uint64Value": -1,
        },
        {"start": 20, "end": 40, "eventType": 60, "textId": SID["relu"], "globalTid": gt},
        {"start": 30, "eventType": 34, "text": "a mark", "globalTid": gt},
        {"start": 31, "end": None, "eventType": 59, "text": "never closed", "globalTid": gt},
    ]
    (t,) = read_nsys(
        export(tmp_path / "nv.sqlite", {KERNEL: [kernel(100, 0, 1, 0, 10)], "NVTX_EVENTS": nvtx})
    )
    a = t.annotations
    assert list(a["name"]) == ["ncclAllReduce", "relu"]
    assert list(a["domain"].astype(object).where(a["domain"].notna(), None)) == ["NCCL", None]
    assert list(a["tid"]) == [101, 101] and list(a["pid"]) == [100, 100]
    p = a["payload"].iloc[0]
    assert (p["comm_id"], p["message_size_bytes"], p["reduction_op"]) == (1234, 4096, "Sum")
    assert p["uint64Value"] == 2**64 - 1
    assert a["payload"].iloc[1] is None


def test_memory_usage_events_become_a_running_total_counter(tmp_path: Path) -> None:
    g = gen.global_pid(100)
    ev = [
        {"start": 10, "globalPid": g, "deviceId": 0, "bytes": 100, "memoryOperationType": 0},
        {"start": 20, "globalPid": g, "deviceId": 0, "bytes": 50, "memoryOperationType": 0},
        {"start": 30, "globalPid": g, "deviceId": 0, "bytes": 100, "memoryOperationType": 1},
        {"start": 15, "globalPid": g, "deviceId": 1, "bytes": 7, "memoryOperationType": 0},
    ]
    (t,) = read_nsys(
        export(
            tmp_path / "m.sqlite",
            {KERNEL: [kernel(100, 0, 1, 0, 10)], "CUDA_GPU_MEMORY_USAGE_EVENTS": ev},
        )
    )
    c = t.counters
    assert set(c["name"]) == {"cuda_memory_allocated_bytes"}
    assert list(zip(c["ts_ns"], c["value"], c["device"], strict=True)) == [
        (10, 100.0, 0),
        (20, 150.0, 0),
        (30, 50.0, 0),
    ]


def test_memcpy_sync_and_memset_without_enum_tables(tmp_path: Path) -> None:
    g = gen.global_pid(100)
    base = {"deviceId": 0, "contextId": 1, "streamId": 7, "globalPid": g}
    tables = {
        "CUPTI_ACTIVITY_KIND_MEMCPY": [
            {**base, "start": 0, "end": 10, "bytes": 64, "copyKind": 2, "correlationId": 1},
            {**base, "start": 20, "end": 30, "bytes": 32, "copyKind": 42, "correlationId": 2},
        ],
        "CUPTI_ACTIVITY_KIND_MEMSET": [{**base, "start": 40, "end": 45, "bytes": 8}],
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": [
            {**base, "start": 50, "end": 60, "syncType": 4, "streamId": 0xFFFFFFFF},
            {**base, "start": 70, "end": 80, "syncType": 3},
        ],
    }
    p = export(tmp_path / "c.sqlite", tables)
    con = sqlite3.connect(p)
    con.execute("DROP TABLE ENUM_CUDA_MEMCPY_OPER")
    con.commit()
    con.close()
    (t,) = read_nsys(p)
    g = t.gpu
    assert list(g["kind"]) == ["memcpy", "memcpy", "memset", "sync", "sync"]
    assert list(g["name"]) == [
        "[CUDA memcpy Device-to-Host]",
        "[CUDA memcpy kind 42]",
        "[CUDA memset]",
        "Context Sync",
        "Stream Sync",
    ]
    assert list(g["copy_kind"].astype(object).iloc[:2]) == ["DtoH", "kind 42"]
    assert list(g["bytes"]) == [64, 32, 8, -1, -1]
    assert list(g["stream"]) == [7, 7, 7, -1, 7]
    assert kernel_summary(t).empty


def test_export_without_gpu_activity_gives_a_trace_per_calling_process(tmp_path: Path) -> None:
    rows = [call(300, 1, 10, "cudaMalloc_v3020"), call(100, 1, 20, "cudaMalloc_v3020")]
    traces = read_nsys(export(tmp_path / "none.sqlite", {RUNTIME: rows}, gpus=2))
    assert [t.meta.extra["process"]["pid"] for t in traces] == [100, 300]
    for t in traces:
        assert t.gpu.empty and len(t.host) == 1
        assert NO_GPU_NOTE in t.meta.extra["notes"]
        assert [d.id for d in t.meta.devices] == [0, 1]
        assert kernel_summary(t).empty


def test_synthetic_generator_export_matches_its_own_sql(tmp_path: Path) -> None:
    p = gen.write_synthetic_export(tmp_path / "syn.sqlite", 2_000, n_names=5)
    (t,) = read_nsys(p)
    con = sqlite3.connect(p)
    want = con.execute(
        "SELECT s.value, COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1 ORDER BY 3 DESC"
    ).fetchall()
    con.close()
    s = kernel_summary(t)
    assert list(zip(s["name"], s["count"], s["total_ns"], strict=True)) == want
    k = t.gpu[t.gpu["kind"] == "kernel"]
    assert np.isin(k["correlation"], t.host["correlation"]).all()
    assert len(t.annotations) == 20
