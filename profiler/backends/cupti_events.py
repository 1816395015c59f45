"""CUPTI activity records (as :class:`profiler.backends.cupti.CuptiCapture` keeps them) → the
Kineto trace events ``torch.profiler`` would write for them: kernels, memcpy / memset, runtime
and driver calls, and the ``ac2g`` flow arrows that link a call to its GPU work (the mapping is
in :mod:`profiler.backends.cupti`'s docstring)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profiler.kineto_writer import complete_event, flow_events


def _copy_args(r: dict[str, Any]) -> dict[str, Any]:
    """Kineto ``args`` of a memcpy or memset record: where, bytes, bandwidth (B/ns = GB/s)."""
    dur = r["end"] - r["start"]
    return {
        "device": r["device"],
        "stream": r["stream"],
        "correlation": r["correlation"],
        "bytes": r["bytes"],
        "memory bandwidth (GB/s)": r["bytes"] / dur if dur > 0 else 0.0,
    }


def to_kineto_events(
    records: Iterable[dict[str, Any]], *, offset_ns: int, base_ns: int
) -> list[dict[str, Any]]:
    """Kineto trace events for CUPTI records (see the module docstring for the mapping).

    ``offset_ns`` moves CUPTI timestamps to the Unix epoch; ``base_ns`` is the trace's
    ``baseTimeNanoseconds``.
    """
    events: list[dict[str, Any]] = []
    runtime_by_corr: dict[int, dict[str, Any]] = {}
    gpu_by_corr: dict[int, dict[str, Any]] = {}
    for r in records:
        s, e = r["start"] + offset_ns, r["end"] + offset_ns
        kind = r["kind"]
        if kind == "kernel":
            smem = r["static_smem"] + r["dynamic_smem"]
            args = {
                "device": r["device"],
                "stream": r["stream"],
                "correlation": r["correlation"],
                "registers per thread": r["registers"],
                "shared memory": smem,
                "grid": r["grid"],
                "block": r["block"],
            }
            ev = complete_event(r["name"], "kernel", s, e, r["device"], r["stream"], base_ns, args)
        elif kind == "memcpy":
            name = f"Memcpy {r['copy_kind']}"
            if r.get("src_kind") and r.get("dst_kind"):
                name += f" ({r['src_kind']} -> {r['dst_kind']})"
            args = _copy_args(r)
            ev = complete_event(name, "gpu_memcpy", s, e, r["device"], r["stream"], base_ns, args)
        elif kind == "memset":
            args = _copy_args(r)
            ev = complete_event(
                "Memset (Device)", "gpu_memset", s, e, r["device"], r["stream"], base_ns, args
            )
        else:
            cat = "cuda_runtime" if kind == "runtime" else "cuda_driver"
            args = {"cbid": r["cbid"], "correlation": r["correlation"]}
            ev = complete_event(r["name"], cat, s, e, r["pid"], r["tid"], base_ns, args)
            runtime_by_corr[r["correlation"]] = ev
            events.append(ev)
            continue
        gpu_by_corr.setdefault(r["correlation"], ev)
        events.append(ev)
    for corr, gpu_ev in gpu_by_corr.items():
        rt = runtime_by_corr.get(corr)
        if rt is not None:
            events += flow_events(corr, rt, gpu_ev)
    return events
