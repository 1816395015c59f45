"""A rank's layout rendered as the Kineto JSON object ``torch.profiler`` writes."""

from __future__ import annotations

from typing import Any

from tests.support.synthetic.layout import (
    COMM_STREAM,
    COMPUTE_STREAM,
    DEVICE_PROPERTIES,
    FIRST_STEP,
    RankLayout,
)


def render_kineto(lay: RankLayout, *, int_us: bool) -> dict[str, Any]:
    """The rank's trace as a Kineto JSON object."""
    pid = 4000 + lay.rank
    us = (lambda v: v // 1000) if int_us else (lambda v: v / 1000)
    events: list[dict[str, Any]] = []
    for h in lay.host:
        events.append(
            {
                "ph": "X",
                "cat": h["cat"],
                "name": h["name"],
                "pid": pid,
                "tid": pid,
                "ts": us(h["start_ns"]),
                "dur": us(h["end_ns"] - h["start_ns"]),
                "args": h["args"],
            }
        )
    comm_by_step = {
        int(h["args"]["Seq"]) + FIRST_STEP: h["args"]
        for h in lay.host
        if h["name"] == "record_param_comms"
    }
    for op in lay.gpu:
        args: dict[str, Any] = {
            "External id": op.external_id,
            "device": lay.device,
            "context": 1,
            "stream": op.stream,
            "correlation": op.correlation,
        }
        if op.kind == "memcpy":
            args["bytes"] = 4 * 1024 * 1024
            args["memory bandwidth (GB/s)"] = round(4 * 1024 * 1024 / (op.end_ns - op.start_ns), 6)
            cat = "gpu_memcpy"
        else:
            cat = "kernel"
            args.update(
                {
                    "queued": 0,
                    "registers per thread": 128 if op.kind == "compute" else 96,
                    "shared memory": 98304 if op.kind == "compute" else 87568,
                    "blocks per SM": 1.939394 if op.kind == "compute" else 0.242424,
                    "warps per SM": 15.515152 if op.kind == "compute" else 4.121212,
                    "grid": [256, 1, 1] if op.kind == "compute" else [32, 1, 1],
                    "block": [256, 1, 1] if op.kind == "compute" else [544, 1, 1],
                    "est. achieved occupancy %": 19 if op.kind == "compute" else 3,
                }
            )
            if op.kind == "comm":
                meta = dict(comm_by_step[op.step])
                for key in ("External id", "Record function id", "Global rank start"):
                    meta.pop(key, None)
                args.update(meta)
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": op.name,
                "pid": lay.device,
                "tid": op.stream,
                "ts": us(op.start_ns),
                "dur": us(op.end_ns - op.start_ns),
                "args": args,
            }
        )
        # flow events (ignored by readers, present in real traces)
        events.append(
            {
                "ph": "s",
                "id": op.correlation,
                "pid": pid,
                "tid": pid,
                "ts": us(op.launch_ns),
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        events.append(
            {
                "ph": "f",
                "id": op.correlation,
                "pid": lay.device,
                "tid": op.stream,
                "ts": us(op.start_ns),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
    for ts, alloc, reserved in lay.memory:
        events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": pid,
                "tid": pid,
                "ts": us(ts),
                "args": {
                    "Total Reserved": reserved,
                    "Total Allocated": alloc,
                    "Bytes": 4096,
                    "Addr": 139_000_000_000 + ts % 4096,
                    "Device Type": 1,
                    "Device Id": lay.device,
                },
            }
        )
    first = min(e["ts"] for e in events)
    last = max(e["ts"] + e.get("dur", 0) for e in events)
    events += [
        _meta_event("process_name", pid, 0, {"name": "python3"}, first),
        _meta_event("process_labels", pid, 0, {"labels": "CPU"}, first),
        _meta_event("thread_name", pid, pid, {"name": f"thread {pid} (python3)"}, first),
        _meta_event("process_name", lay.device, 0, {"name": "python3"}, first),
        _meta_event("process_labels", lay.device, 0, {"labels": f"GPU {lay.device}"}, first),
        _meta_event("thread_name", lay.device, COMPUTE_STREAM, {"name": "stream 7 "}, first),
        _meta_event("thread_name", lay.device, COMM_STREAM, {"name": "stream 20 "}, first),
        {
            "ph": "X",
            "cat": "Trace",
            "ts": first,
            "dur": last - first,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        },
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": last},
    ]
    ranks = list(range(lay.world_size))
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": i, **DEVICE_PROPERTIES} for i in range(8)],
        "distributedInfo": {
            "backend": "nccl",
            "rank": lay.rank,
            "world_size": lay.world_size,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "backend_config": "cuda:nccl",
                    "pg_size": lay.world_size,
                    "ranks": ranks,
                }
            ],
            "nccl_version": "2.21.5",
        },
        "record_shapes": 1,
        "traceEvents": events,
        "traceName": f"rank-{lay.rank}.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_735_689_600_000_000_000,
    }


def _meta_event(name: str, pid: int, tid: int, args: dict[str, Any], ts: Any) -> dict[str, Any]:
    return {"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args}
