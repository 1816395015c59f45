"""A Kineto trace whose NCCL metadata is partial or malformed: ``gpuscope analyze`` still writes
the summary, with what is known, and never shows a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import kineto_json as kj
from tests.support.cli import gpuscope


def _kernel(name: str, ts: float, dur: float, corr: int, **args: object) -> dict:
    return kj.kernel(name, ts, dur, corr, stream=40, device=0, **args)


def partial_trace() -> dict:
    ev = [
        kj.step(1, 0, 100),
        kj.step(2, 100, 100),
        kj.step(3, 200, 100),
        # sizes as text, an unknown dtype, a ranks list cut short, a non-numeric group size
        kj.op(
            "record_param_comms",
            10,
            20,
            **{
                "Collective name": "allreduce",
                "In msg nelems": "lots",
                "dtype": 5,
                "Group size": "two",
                "Process Group Name": "0",
                "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, ...",
            },
        ),
        kj.runtime("cudaLaunchKernel", 15, 2, 1),
        _kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", 40, 30, 1),
        # an op without the collective's name, only a size
        kj.op("record_param_comms", 110, 20, **{"In msg nelems": 10, "dtype": "Float"}),
        kj.runtime("cudaLaunchKernel", 115, 2, 2),
        _kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(x)", 140, 20, 2),
        # a kernel whose metadata is all wrong types
        kj.runtime("cudaLaunchKernel", 150, 2, 3),
        _kernel(
            "ncclDevKernel_Generic_1(x)",
            160,
            10,
            3,
            **{"Collective name": 7, "In msg nelems": [1, 2], "Process Group Ranks": 12},
        ),
        kj.op("gemm", 30, 5),
        kj.runtime("cudaLaunchKernel", 31, 2, 4),
        _kernel("void gemm(...)", 20, 40, 4),
    ]
    return kj.trace(ev, rank=0, world_size=2, schema_version=1)


def test_analyze_reports_what_is_known(tmp_path: Path) -> None:
    trace = tmp_path / "rank-0.json"
    trace.write_text(json.dumps(partial_trace()))
    out = tmp_path / "summary.json"
    proc = gpuscope("analyze", trace, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rank = json.loads(out.read_text())["ranks"][0]
    rows = {(r["collective"], r["size_bucket"]): r for r in rank["collectives"]}
    ar = rows[("all_reduce", "unknown")]  # named, but no usable size
    assert ar["count"] == 1 and ar["median_busbw_gbps"] is None and ar["bytes"] == -1
    assert ar["time_ns"] == 30_000
    ag = rows[("all_gather", "all")]  # named by the kernel; 10 floats in, group size unknown
    assert ag["median_busbw_gbps"] is None
    assert rows[("unknown", "all")]["count"] == 1  # the Generic kernel
    comm = rank["comm"]
    assert comm["calls_in_window"] == 3
    assert (comm["sizes_known"], comm["group_size_known"]) == (0, 0)
    assert comm["process_groups"][0]["ranks"] is None
    # exposed: all_reduce [40,70) vs gemm [20,60) → 10 µs; all_gather [140,160) and
    # Generic [160,170) have no computation beside them → 30 µs
    assert comm["exposed_ns"] == 40_000 == rank["overlap"]["exposed_comm_ns"]
