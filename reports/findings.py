"""The findings of a run as text: title, evidence, threshold and advice (docs/report.md §4).

The decisions — which rule fires, its figure, threshold and impact, the order and the cap —
are :mod:`analyzers.findings`'; this module only words them.  Evidence strings may quote kernel
and collective names: they are plain text, escaped by the renderer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from analyzers import findings as rules
from analyzers import findings_serving as serving
from collectors.summary.schema import Summary

MAX_FINDINGS = rules.MAX_FINDINGS


@dataclass(frozen=True)
class Finding:
    """One problem: what it is, the numbers behind it, and what to try."""

    id: str
    title: str
    evidence: str
    threshold: str
    suggestion: str
    value: float
    """The measured figure the threshold applies to (unit as in ``threshold``)."""
    limit: float
    impact: float
    """Share of time concerned (0–1), for ordering."""


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f} ms"


def _pct(x: float) -> str:
    return f"{x:.1f} %"


def _text(f: rules.Finding, title: str, evidence: str, threshold: str, try_: str) -> Finding:
    return Finding(f.id, title, evidence, threshold, try_, f.value, f.limit, f.impact)


def _exposed_comm(f: rules.ExposedComm) -> Finding:
    ev = (
        f"exposed communication is {_pct(f.value)} of step time on the GPU clock "
        f"({_ms(f.exposed_ns)} of {_ms(f.duration_ns)} over {f.ranks} rank(s) × their steps)"
    )
    if f.worst is not None:
        ev += f"; most exposed collective type: {f.worst[0]} ({_ms(f.worst[1])})"
    return _text(
        f,
        "Communication is not hidden behind computation",
        ev,
        f"exposed communication > {_pct(f.limit)} of step time",
        "overlap the collective with computation (DDP bucket_cap_mb / gradient_as_bucket_view,"
        " FSDP forward/backward prefetch, async tensor-parallel collectives), and compare its "
        "bus bandwidth with the link peak in the communication table",
    )


def _host_bound(f: rules.HostBound) -> Finding:
    ev = (
        f"{f.ranks_hit} of {f.ranks_total} rank(s) host-bound: the GPU waits for the CPU "
        f"{_pct(100 * f.share)} of step time on the GPU clock, or of the GPU span without steps "
        "(mean over those ranks)"
    )
    if f.top_activity is not None:
        name, ns = f.top_activity
        ev += f"; largest CPU activity during the waits: {name.removesuffix('_ns')} ({_ms(ns)})"
    return _text(
        f,
        "The GPU waits for the CPU to launch work",
        ev,
        f"host-wait share > {_pct(f.limit)} of step time (host-bound verdict)",
        "launch fewer, larger kernels (CUDA graphs, torch.compile), load data in worker "
        "processes with pinned memory, and remove host synchronisations (.item(), .cpu(), "
        "torch.cuda.synchronize) from the step",
    )


def _gpu_idle(f: rules.GpuIdle) -> Finding:
    basis = f"step time ({f.view})" if f.basis == "steps" else f"its span ({f.view})"
    ev = f"the GPU is idle {_pct(f.value)} of {basis}"
    if any(v for _, v in f.causes):
        parts = ", ".join(f"{k.removesuffix('_ns')} {_ms(v)}" for k, v in f.causes if v)
        ev += f"; idle gaps by cause: {parts}"
    return _text(
        f,
        "The GPU is idle for a large part of each step",
        ev,
        f"GPU idle > {_pct(f.limit)} (busy < {_pct(100 - f.limit)})",
        "look at the idle gaps in the Perfetto export (gpuscope export --perfetto): host "
        "waits point to launch overhead or data loading, other waits to synchronisation",
    )


def _low_occupancy(f: rules.LowOccupancy) -> Finding:
    flag = f.flag
    limiters = " and ".join(str(x).replace("_", " ") for x in flag["limiters"]) or "unknown"
    return _text(
        f,
        "A hot kernel runs at low theoretical occupancy",
        f"{flag['name']} (block {flag['block']}) takes {_pct(100 * flag['time_share'])} of rank "
        f"{f.rank}'s kernel time at {_pct(f.value)} theoretical occupancy, limited by {limiters}",
        f"theoretical occupancy < {f.limit:g} % and ≥ {_pct(100 * rules.LOW_OCC_TIME_SHARE)} "
        "of kernel time",
        flag["suggestion"]
        or "reduce registers per thread (__launch_bounds__, -maxrregcount) or shared memory "
        "per block; low occupancy is fine for kernels limited by tile size, so check its "
        "roofline position first",
    )


def _skew(f: rules.Skew) -> Finding:
    ev = (
        f"ranks waited {_ms(f.skew_ns)} in total for the last rank to arrive, against "
        f"{_ms(f.transfer_ns)} of transfer ({f.matched} matched collectives)"
    )
    if f.late is not None:
        ev += f"; rank {f.late[0]} arrived last {f.late[1]} time(s)"
    return _text(
        f,
        "Ranks wait for a straggler at collectives",
        ev,
        f"arrival skew > {_pct(f.limit)} of (skew + transfer)",
        "find what the late rank does differently before the collective: uneven batches "
        "or sequence lengths, extra host work, a slower or throttled GPU (see the counters)",
    )


def _low_busbw(f: rules.LowBusbw) -> Finding:
    return _text(
        f,
        "Large collectives run well below the link bandwidth",
        f"{f.collective} ≥ 256 MiB on rank {f.rank}: median bus bandwidth "
        f"{float(f.busbw_gbps or 0):.1f} GB/s = {_pct(f.value)} of the link peak",
        f"median busbw < {_pct(f.limit)} of the link peak for ≥ 256 MiB messages",
        "check the topology NCCL uses (NCCL_DEBUG=INFO), NCCL_ALGO/NCCL_PROTO, and whether "
        "the collective shares the links with other traffic; compare with nccl-tests",
    )


def _throttling(f: rules.Throttling) -> Finding:
    return _text(
        f,
        "A GPU's clocks were throttled",
        f"GPU {f.device} of {f.host} was throttled {_pct(f.value)} of the sampled time "
        f"(reasons: {', '.join(f.reasons)})",
        f"throttled > {_pct(f.limit)} of the sampled time",
        "check cooling and power limits (nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE); a "
        "throttled GPU slows every rank that waits for it",
    )


def _low_roofline(f: rules.LowRoofline) -> Finding:
    p = f.point
    return _text(
        f,
        "A hot op reaches a small part of its roofline",
        f"{p['key'] or p['name']} on rank {f.rank}: {_pct(f.value)} of attainable FLOP/s "
        f"({p['bound']}-bound), {_pct(100 * float(p['time_share'] or 0))} of the "
        "GPU time",
        f"< {_pct(f.limit)} of attainable and ≥ {_pct(100 * rules.ROOFLINE_TIME_SHARE)} of "
        "GPU time",
        "use tensor cores (TF32/BF16/FP8), pad shapes to multiples of 16, fuse memory-bound "
        "neighbours; profile the kernel with Nsight Compute (gpuscope analyze --ncu)",
    )


def _category(c: serving.CategoryShare) -> str:
    out = f"{c.category} {_pct(100 * c.share)}"
    if c.pct_of_roof is None:
        return out + (" (no FLOP model)" if c.modelled_share == 0 else "")
    cover = "" if c.modelled_share >= 0.995 else f"{_pct(100 * c.modelled_share)} of it modelled, "
    head = f", headroom {_ms(c.headroom_ns)}" if c.headroom_ns is not None else ""
    return f"{out} ({cover}at {_pct(c.pct_of_roof)} of its roof{head})"


def _dominant_category(f: serving.DominantCategory) -> Finding:
    where = f"phase {f.phase}" if f.phase is not None else "all GPU work"
    ev = (
        f"rank {f.rank}, {where} (GPU busy {_pct(100 * f.busy_fraction)} of its span, "
        f"{_ms(f.gpu_work_ns)} of GPU work): " + "; ".join(_category(c) for c in f.top)
    )
    m = f.mfu or {}
    if m.get("mfu") is not None:
        ev += (
            f"; MFU {_pct(100 * m['mfu'])} of {m['peak']} {m['dtype']} over the "
            f"{_pct(100 * float(m.get('coverage') or 0))} of GPU time with a FLOP model"
        )
    top = f.top[0].category
    advice = {
        "MoE": "check the expert GEMMs' batch per expert (tokens × top-k / experts) and the "
        "routing/permute kernels around them; a fused MoE kernel (fused_moe, aiter, "
        "triton_kernels matmul_ogs) tuned for this shape, or expert parallelism, moves the roof",
        "attention": "use a fused attention kernel for the phase (flash/paged decode "
        "attention), and check the KV-cache layout and block size",
        "GEMM": "compare the GEMMs' TFLOP/s with the dtype's peak (op roofline table): tune "
        "shapes (multiples of 64/128), use a lower precision (FP8) or a tuned GEMM library",
    }.get(
        top,
        "memory-bound categories gain from fusion (torch.compile, fused kernels); look at the "
        "category's top kernels in the kernel table",
    )
    return _text(
        f,
        f"GPU-bound work is dominated by {top} kernels",
        ev,
        f"GPU busy ≥ {_pct(100 * serving.GPU_BOUND_BUSY)} of the span and one op category ≥ "
        f"{_pct(f.limit)} of its GPU work time",
        advice,
    )


def _unattributed_graphs(f: serving.UnattributedGraphs) -> Finding:
    why = (
        "no capture trace was given"
        if f.method == "kernel-name"
        else "their kernels did not align with the capture trace's graphs"
    )
    return _text(
        f,
        "Graph-replayed kernels have no op: categories and FLOPs by kernel name only",
        f"rank {f.rank}: {_ms(f.unattributed_ns)} of {_ms(f.graph_ns)} replayed by "
        f"{f.launches} CUDA/HIP graph launches ({_pct(f.value)} of the GPU work time) have no "
        f"capture op ({why})",
        f"graph-replayed work without a capture op ≥ {_pct(f.limit)} of GPU work time",
        "pass the trace recorded while the graphs were captured with --graph-capture FILE (or "
        "keep TraceLens's capture_traces/execution_details.json beside the trace): the replayed "
        "kernels then get their ops, shapes, categories and FLOPs",
    )


_WORDS: dict[type, Callable[[Any], Finding]] = {
    rules.ExposedComm: _exposed_comm,
    rules.HostBound: _host_bound,
    rules.GpuIdle: _gpu_idle,
    rules.LowOccupancy: _low_occupancy,
    rules.Skew: _skew,
    rules.LowBusbw: _low_busbw,
    rules.Throttling: _throttling,
    rules.LowRoofline: _low_roofline,
    serving.DominantCategory: _dominant_category,
    serving.UnattributedGraphs: _unattributed_graphs,
}


def render(f: rules.Finding) -> Finding:
    """The text of one finding record."""
    return _WORDS[type(f)](f)


R = TypeVar("R", bound=rules.Finding)


def _rule(fn: Callable[[Summary], R | None]) -> Callable[[Summary], Finding | None]:
    def worded(summary: Summary) -> Finding | None:
        f = fn(summary)
        return None if f is None else render(f)

    worded.__name__ = fn.__name__
    worded.__doc__ = fn.__doc__
    return worded


exposed_comm = _rule(rules.exposed_comm)
host_bound = _rule(rules.host_bound)
gpu_idle = _rule(rules.gpu_idle)
low_occupancy = _rule(rules.low_occupancy)
skew = _rule(rules.skew)
low_busbw = _rule(rules.low_busbw)
throttling = _rule(rules.throttling)
low_roofline = _rule(rules.low_roofline)
dominant_category = _rule(serving.dominant_category)
unattributed_graphs = _rule(serving.unattributed_graphs)


def findings(summary: Summary) -> list[dict[str, Any]]:
    """The findings (:func:`analyzers.findings.findings`: ordered by impact, at most 5), as the
    report's payload holds them."""
    return [asdict(render(f)) for f in rules.findings(summary)]
