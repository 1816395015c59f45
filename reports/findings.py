"""The few most important problems of a run, each with its evidence, threshold and advice.

A pure function of the JSON summary (docs/report.md §4 lists every rule and threshold).  Each
rule returns at most one :class:`Finding`; ``impact`` is the share of time the problem
concerns (0–1) and orders the findings, largest first; at most :data:`MAX_FINDINGS` are kept.
Evidence strings may quote kernel and collective names: they are plain text, escaped by the
renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from reports.html_metrics import collective_rows, gpu_busy_card, num, rank_step_rows, ranks

MAX_FINDINGS = 5

EXPOSED_COMM_SHARE = 0.10
"""Exposed communication above this share of step time is a finding (= the default
``comm_threshold`` of the host-bound verdict)."""
IDLE_SHARE = 0.20
"""GPU idle above this share of step time (GPU busy below 80 %) is a finding."""
LOW_OCC_TIME_SHARE = 0.05
"""A low-occupancy flag (theoretical < 50 %, docs/efficiency.md) is a finding when the kernel
takes at least this share of its rank's kernel time."""
SKEW_SHARE = 0.25
"""Arrival skew above this share of matched collective time (skew + transfer) is a finding."""
BUSBW_LINK_PCT = 50.0
"""≥ 256 MiB collectives whose median bus bandwidth is below this % of the link peak."""
THROTTLE_SHARE = 0.05
"""Clock throttling (power/thermal/slowdown reasons) during more than this share of the sampled
time of a GPU."""
ROOFLINE_PCT = 50.0
"""An op-roofline point below this % of its attainable FLOP/s ..."""
ROOFLINE_TIME_SHARE = 0.20
"""... is a finding when it takes at least this share of its rank's GPU time."""


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


def exposed_comm(summary: Mapping[str, Any]) -> Finding | None:
    rows = rank_step_rows(summary)
    dur = sum(r["duration_ns"] for r in rows)
    exp = sum(r["exposed_comm_ns"] for r in rows)
    if dur <= 0 or exp / dur <= EXPOSED_COMM_SHARE:
        return None
    by_coll: dict[str, int] = {}
    for r in ranks(summary):
        for c in (r.get("comm") or {}).get("by_collective") or []:
            name = str(c.get("collective"))
            by_coll[name] = by_coll.get(name, 0) + int(c.get("exposed_ns") or 0)
    worst = max(by_coll.items(), key=lambda kv: kv[1], default=None)
    n_ranks = len({r["rank"] for r in rows})
    ev = (
        f"exposed communication is {_pct(100 * exp / dur)} of step time "
        f"({_ms(exp)} of {_ms(dur)} over {n_ranks} rank(s) × their steps)"
    )
    if worst is not None and worst[1] > 0:
        ev += f"; most exposed collective type: {worst[0]} ({_ms(worst[1])})"
    return Finding(
        id="exposed_comm",
        title="Communication is not hidden behind computation",
        evidence=ev,
        threshold=f"exposed communication > {_pct(100 * EXPOSED_COMM_SHARE)} of step time",
        suggestion=(
            "overlap the collective with computation (DDP bucket_cap_mb / gradient_as_bucket_view,"
            " FSDP forward/backward prefetch, async tensor-parallel collectives), and compare its "
            "bus bandwidth with the link peak in the communication table"
        ),
        value=100 * exp / dur,
        limit=100 * EXPOSED_COMM_SHARE,
        impact=exp / dur,
    )


def host_bound(summary: Mapping[str, Any]) -> Finding | None:
    hit, shares, acts = [], [], {}
    for r in ranks(summary):
        hb = (r.get("idle") or {}).get("host_bound") or {}
        if hb.get("verdict") != "host-bound":
            continue
        hit.append(int(r["rank"]))
        if (s := num(hb.get("host_share"))) is not None:
            shares.append(s)
        for k, v in (hb.get("host_wait_by_activity") or {}).items():
            acts[k] = acts.get(k, 0) + int(v or 0)
    if not hit or not shares:
        return None
    limit = num(
        ((ranks(summary)[0].get("idle") or {}).get("host_bound") or {}).get("host_threshold")
    )
    limit = 0.10 if limit is None else limit
    share = sum(shares) / len(shares)
    top = max(acts.items(), key=lambda kv: kv[1], default=None)
    ev = (
        f"{len(hit)} of {len(ranks(summary))} rank(s) host-bound: the GPU waits for the CPU "
        f"{_pct(100 * share)} of step time (mean over those ranks)"
    )
    if top is not None and top[1] > 0:
        ev += (
            f"; largest CPU activity during the waits: {top[0].removesuffix('_ns')} ({_ms(top[1])})"
        )
    return Finding(
        id="host_bound",
        title="The GPU waits for the CPU to launch work",
        evidence=ev,
        threshold=f"host-wait share > {_pct(100 * limit)} of step time (host-bound verdict)",
        suggestion=(
            "launch fewer, larger kernels (CUDA graphs, torch.compile), load data in worker "
            "processes with pinned memory, and remove host synchronisations (.item(), .cpu(), "
            "torch.cuda.synchronize) from the step"
        ),
        value=100 * share,
        limit=100 * limit,
        impact=share,
    )


def gpu_idle(summary: Mapping[str, Any]) -> Finding | None:
    busy = gpu_busy_card(summary)
    if busy is None or busy["total_ns"] <= 0:
        return None
    idle = 1 - busy["busy_ns"] / busy["total_ns"]
    if idle <= IDLE_SHARE:
        return None
    causes: dict[str, int] = {}
    for r in ranks(summary):
        for k, v in (((r.get("idle") or {}).get("gpu") or {}).get("by_cause") or {}).items():
            causes[k] = causes.get(k, 0) + int(v or 0)
    basis = "step time" if busy["basis"] == "steps" else "its span"
    ev = f"the GPU is idle {_pct(100 * idle)} of {basis}"
    if any(causes.values()):
        parts = ", ".join(f"{k.removesuffix('_ns')} {_ms(v)}" for k, v in causes.items() if v)
        ev += f"; idle gaps by cause: {parts}"
    return Finding(
        id="gpu_idle",
        title="The GPU is idle for a large part of each step",
        evidence=ev,
        threshold=f"GPU idle > {_pct(100 * IDLE_SHARE)} (busy < {_pct(100 - 100 * IDLE_SHARE)})",
        suggestion=(
            "look at the idle gaps in the Perfetto export (gpuscope export --perfetto): host "
            "waits point to launch overhead or data loading, other waits to synchronisation"
        ),
        value=100 * idle,
        limit=100 * IDLE_SHARE,
        impact=idle,
    )


def low_occupancy(summary: Mapping[str, Any]) -> Finding | None:
    best: tuple[float, int, Mapping[str, Any]] | None = None
    for r in ranks(summary):
        for f in (r.get("occupancy") or {}).get("flags") or []:
            share = num(f.get("time_share"))
            if (
                share is not None
                and share >= LOW_OCC_TIME_SHARE
                and (best is None or share > best[0])
            ):
                best = (share, int(r["rank"]), f)
    if best is None:
        return None
    share, rank, f = best
    busy = gpu_busy_card(summary)
    busy_frac = busy["busy_ns"] / busy["total_ns"] if busy and busy["total_ns"] else 1.0
    limiters = " and ".join(str(x).replace("_", " ") for x in f.get("limiters") or []) or "unknown"
    return Finding(
        id="low_occupancy",
        title="A hot kernel runs at low theoretical occupancy",
        evidence=(
            f"{f.get('name')} (block {f.get('block')}) takes {_pct(100 * share)} of rank {rank}'s "
            f"kernel time at {_pct(float(f.get('theoretical_pct') or 0))} theoretical occupancy, "
            f"limited by {limiters}"
        ),
        threshold=(
            f"theoretical occupancy < 50 % and ≥ {_pct(100 * LOW_OCC_TIME_SHARE)} of kernel time"
        ),
        suggestion=str(
            f.get("suggestion")
            or "reduce registers per thread (__launch_bounds__, -maxrregcount) or shared memory "
            "per block; low occupancy is fine for kernels limited by tile size, so check its "
            "roofline position first"
        ),
        value=float(f.get("theoretical_pct") or 0),
        limit=50.0,
        impact=share * busy_frac,
    )


def skew(summary: Mapping[str, Any]) -> Finding | None:
    sk = summary.get("comm_skew") or {}
    s, t = int(sk.get("arrival_skew_ns") or 0), int(sk.get("transfer_ns") or 0)
    if s + t <= 0 or s / (s + t) <= SKEW_SHARE:
        return None
    late = max(sk.get("per_rank") or [], key=lambda r: int(r.get("late_count") or 0), default=None)
    ev = (
        f"ranks waited {_ms(s)} in total for the last rank to arrive, against {_ms(t)} of "
        f"transfer ({sk.get('matched')} matched collectives)"
    )
    if late is not None and int(late.get("late_count") or 0) > 0:
        ev += f"; rank {late.get('rank')} arrived last {late.get('late_count')} time(s)"
    rows = rank_step_rows(summary)
    dur = sum(r["duration_ns"] for r in rows)
    waits = sum(int(r.get("wait_ns") or 0) for r in sk.get("per_rank") or [])
    return Finding(
        id="skew",
        title="Ranks wait for a straggler at collectives",
        evidence=ev,
        threshold=f"arrival skew > {_pct(100 * SKEW_SHARE)} of (skew + transfer)",
        suggestion=(
            "find what the late rank does differently before the collective: uneven batches "
            "or sequence lengths, extra host work, a slower or throttled GPU (see the counters)"
        ),
        value=100 * s / (s + t),
        limit=100 * SKEW_SHARE,
        impact=waits / dur if dur > 0 else s / (s + t),
    )


def low_busbw(summary: Mapping[str, Any]) -> Finding | None:
    worst: tuple[float, int, Mapping[str, Any]] | None = None
    time = 0
    for r in ranks(summary):
        for row in collective_rows(r):
            pct = num(row.get("median_busbw_link_pct"))
            if row.get("size_bucket") != ">=256MiB" or pct is None or pct >= BUSBW_LINK_PCT:
                continue
            time += int(row.get("time_ns") or 0)
            if worst is None or pct < worst[0]:
                worst = (pct, int(r["rank"]), row)
    if worst is None:
        return None
    pct, rank, row = worst
    dur = sum(r["duration_ns"] for r in rank_step_rows(summary))
    return Finding(
        id="low_busbw",
        title="Large collectives run well below the link bandwidth",
        evidence=(
            f"{row.get('collective')} ≥ 256 MiB on rank {rank}: median bus bandwidth "
            f"{float(row.get('median_busbw_gbps') or 0):.1f} GB/s = {_pct(pct)} of the link peak"
        ),
        threshold=f"median busbw < {_pct(BUSBW_LINK_PCT)} of the link peak for ≥ 256 MiB messages",
        suggestion=(
            "check the topology NCCL uses (NCCL_DEBUG=INFO), NCCL_ALGO/NCCL_PROTO, and whether "
            "the collective shares the links with other traffic; compare with nccl-tests"
        ),
        value=pct,
        limit=BUSBW_LINK_PCT,
        impact=time / dur if dur > 0 else 0.0,
    )


def throttling(summary: Mapping[str, Any]) -> Finding | None:
    worst: tuple[float, str, int, set[str]] | None = None
    for h in (summary.get("run") or {}).get("nvml") or []:
        span = int(h.get("duration_ns") or 0)
        if span <= 0:
            continue
        per_dev: dict[int, tuple[int, set[str]]] = {}
        for b in h.get("throttle") or []:
            t, rs = per_dev.get(int(b["device"]), (0, set()))
            per_dev[int(b["device"])] = (
                t + int(b["end_ns"]) - int(b["start_ns"]),
                rs | set(b["reasons"]),
            )
        for dev, (t, rs) in per_dev.items():
            if worst is None or t / span > worst[0]:
                worst = (t / span, str(h.get("host")), dev, rs)
    if worst is None or worst[0] <= THROTTLE_SHARE:
        return None
    share, host, dev, reasons = worst
    return Finding(
        id="throttling",
        title="A GPU's clocks were throttled",
        evidence=(
            f"GPU {dev} of {host} was throttled {_pct(100 * share)} of the sampled time "
            f"(reasons: {', '.join(sorted(reasons))})"
        ),
        threshold=f"throttled > {_pct(100 * THROTTLE_SHARE)} of the sampled time",
        suggestion=(
            "check cooling and power limits (nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE); a "
            "throttled GPU slows every rank that waits for it"
        ),
        value=100 * share,
        limit=100 * THROTTLE_SHARE,
        impact=share,
    )


def low_roofline(summary: Mapping[str, Any]) -> Finding | None:
    worst: tuple[float, int, Mapping[str, Any], float] | None = None
    for r in ranks(summary):
        ops = (r.get("roofline") or {}).get("ops") or {}
        for p in ops.get("points") or []:
            # time_share: of the rank's GPU time
            share, pct = num(p.get("time_share")), num(p.get("pct_of_attainable"))
            if share is None or pct is None or share < ROOFLINE_TIME_SHARE or pct >= ROOFLINE_PCT:
                continue
            if worst is None or share > worst[0]:
                worst = (share, int(r["rank"]), p, pct)
    if worst is None:
        return None
    impact, rank, p, pct = worst
    return Finding(
        id="low_roofline",
        title="A hot op reaches a small part of its roofline",
        evidence=(
            f"{p.get('key') or p.get('name')} on rank {rank}: {_pct(pct)} of attainable FLOP/s "
            f"({p.get('bound')}-bound), {_pct(100 * float(p.get('time_share') or 0))} of the "
            "GPU time"
        ),
        threshold=(
            f"< {_pct(ROOFLINE_PCT)} of attainable and ≥ {_pct(100 * ROOFLINE_TIME_SHARE)} of "
            "GPU time"
        ),
        suggestion=(
            "use tensor cores (TF32/BF16/FP8), pad shapes to multiples of 16, fuse memory-bound "
            "neighbours; profile the kernel with Nsight Compute (gpuscope analyze --ncu)"
        ),
        value=pct,
        limit=ROOFLINE_PCT,
        impact=impact,
    )


RULES: tuple[Callable[[Mapping[str, Any]], Finding | None], ...] = (
    exposed_comm,
    host_bound,
    gpu_idle,
    low_occupancy,
    skew,
    low_busbw,
    throttling,
    low_roofline,
)


def findings(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The findings of every rule, largest ``impact`` first (ties in rule order), at most 5."""
    found = [f for rule in RULES if (f := rule(summary)) is not None]
    order = sorted(range(len(found)), key=lambda i: (-found[i].impact, i))
    return [asdict(found[i]) for i in order[:MAX_FINDINGS]]
