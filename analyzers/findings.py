"""Which problems a run has: each rule's decision, its threshold and the facts behind it.

A pure function of the JSON summary (docs/report.md §4 lists every rule and threshold).  Each
rule returns at most one record; ``value`` is the measured figure the threshold applies to and
``limit`` the threshold, in the same unit (%); ``impact`` is the share of time the problem
concerns (0–1) and orders the findings, largest first (ties in rule order) — unless the
summary has a ``critical_path`` section: then the time the corresponding what-if recovers
orders them (:mod:`analyzers.critical_path.fix_order`); at most :data:`MAX_FINDINGS` are kept.
``reports/findings.py`` turns the records into text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from analyzers.findings_record import Finding
from analyzers.findings_serving import SERVING_RULES
from analyzers.headline import busy_fraction, gpu_busy_card, rank_step_rows
from collectors.summary.schema import OccupancyFlag, RankEntry, RooflinePoint, Summary

MAX_FINDINGS = 5

EXPOSED_COMM_SHARE = 0.10
"""Exposed communication above this share of step time is a finding (= the default
``comm_threshold`` of the host-bound verdict)."""
HOST_SHARE = 0.10
"""The host-bound threshold when the summary does not record its own ``host_threshold``."""
IDLE_SHARE = 0.20
"""GPU idle above this share of step time (GPU busy below 80 %) is a finding."""
LOW_OCC_PCT = 50.0
"""Theoretical occupancy below this is low (the occupancy section's flags, docs/efficiency.md)."""
LOW_OCC_TIME_SHARE = 0.05
"""A low-occupancy flag is a finding when the kernel takes at least this share of its rank's
kernel time."""
SKEW_SHARE = 0.25
"""Arrival skew above this share of matched collective time (skew + transfer) is a finding."""
BUSBW_LINK_PCT = 50.0
"""≥ 256 MiB collectives whose median bus bandwidth is below this % of the link peak."""
LARGE_BUCKET = ">=256MiB"
THROTTLE_SHARE = 0.05
"""Clock throttling (power/thermal/slowdown reasons) during more than this share of the sampled
time of a GPU."""
ROOFLINE_PCT = 50.0
"""An op-roofline point below this % of its attainable FLOP/s ..."""
ROOFLINE_TIME_SHARE = 0.20
"""... is a finding when it takes at least this share of its rank's GPU time."""


@dataclass(frozen=True)
class ExposedComm(Finding):
    exposed_ns: int
    duration_ns: int
    ranks: int
    worst: tuple[str, int] | None
    """The collective type with the most exposed time summed over ranks (when > 0)."""


@dataclass(frozen=True)
class HostBound(Finding):
    ranks_hit: int
    ranks_total: int
    share: float
    """Mean host-wait share of the host-bound ranks."""
    top_activity: tuple[str, int] | None
    """The CPU activity with the most host wait summed over those ranks (when > 0)."""


@dataclass(frozen=True)
class GpuIdle(Finding):
    basis: str
    """``steps`` or ``span`` (docs/report.md §3)."""
    view: str
    """Which view the figure is of (:data:`analyzers.headline.CLOCK_GPU`, ...)."""
    causes: tuple[tuple[str, int], ...]
    """``idle.gpu.by_cause`` summed over ranks, in the summary's order."""


@dataclass(frozen=True)
class LowOccupancy(Finding):
    rank: int
    flag: OccupancyFlag


@dataclass(frozen=True)
class Skew(Finding):
    skew_ns: int
    transfer_ns: int
    matched: int
    late: tuple[int, int] | None
    """(rank, times it arrived last) of the rank that arrived last most often (when > 0)."""


@dataclass(frozen=True)
class LowBusbw(Finding):
    rank: int
    collective: str
    busbw_gbps: float | None


@dataclass(frozen=True)
class Throttling(Finding):
    host: str
    device: int
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class LowRoofline(Finding):
    rank: int
    point: RooflinePoint


def exposed_comm(summary: Summary) -> ExposedComm | None:
    """Σ exposed communication / Σ step time on the GPU clock over every (rank, step) > 10 %."""
    rows = rank_step_rows(summary)
    dur = sum(r["gpu_duration_ns"] for r in rows)
    exp = sum(r["exposed_comm_ns"] for r in rows)
    if dur <= 0 or exp / dur <= EXPOSED_COMM_SHARE:
        return None
    by_coll: dict[str, int] = {}
    for r in summary["ranks"]:
        comm = r.get("comm")
        for c in comm["by_collective"] if comm is not None else []:
            by_coll[c["collective"]] = by_coll.get(c["collective"], 0) + c["exposed_ns"]
    worst = max(by_coll.items(), key=lambda kv: kv[1], default=None)
    return ExposedComm(
        id="exposed_comm",
        value=100 * exp / dur,
        limit=100 * EXPOSED_COMM_SHARE,
        impact=exp / dur,
        exposed_ns=exp,
        duration_ns=dur,
        ranks=len({r["rank"] for r in rows}),
        worst=worst if worst is not None and worst[1] > 0 else None,
    )


def host_bound(summary: Summary) -> HostBound | None:
    """Some rank's host-bound verdict (host-wait share above its ``host_threshold``); a
    graph-capture rank never has one (docs/metrics.md §10)."""
    ranks = summary["ranks"]
    hit, shares = 0, []
    acts: dict[str, int] = {}
    for r in ranks:
        idle = r.get("idle")
        if idle is None or idle["host_bound"]["verdict"] != "host-bound" or _capture(r):
            continue
        hb = idle["host_bound"]
        hit += 1
        if hb["host_share"] is not None:
            shares.append(hb["host_share"])
        for k, v in hb["host_wait_by_activity"].items():
            acts[k] = acts.get(k, 0) + v
    if not hit or not shares:
        return None
    first = ranks[0].get("idle")
    limit = first["host_bound"]["host_threshold"] if first is not None else HOST_SHARE
    share = sum(shares) / len(shares)
    top = max(acts.items(), key=lambda kv: kv[1], default=None)
    return HostBound(
        id="host_bound",
        value=100 * share,
        limit=100 * limit,
        impact=share,
        ranks_hit=hit,
        ranks_total=len(ranks),
        share=share,
        top_activity=top if top is not None and top[1] > 0 else None,
    )


def _capture(rank: RankEntry) -> bool:
    i = rank.get("integrity")
    return i is not None and i["capture"]


def gpu_idle(summary: Summary) -> GpuIdle | None:
    """1 − GPU busy fraction (docs/report.md §3) > 20 %, over the ranks that are not
    graph-capture traces (whose captured work did not run)."""
    busy = gpu_busy_card(summary, diagnosed_only=True)
    if busy is None or busy["total_ns"] <= 0:
        return None
    idle = 1 - busy["busy_ns"] / busy["total_ns"]
    if idle <= IDLE_SHARE:
        return None
    causes: dict[str, int] = {}
    for r in summary["ranks"]:
        if _capture(r):
            continue
        rank_idle = r.get("idle")
        for k, v in rank_idle["gpu"]["by_cause"].items() if rank_idle is not None else ():
            causes[k] = causes.get(k, 0) + v
    return GpuIdle(
        id="gpu_idle",
        value=100 * idle,
        limit=100 * IDLE_SHARE,
        impact=idle,
        basis=busy["basis"],
        view=busy["view"],
        causes=tuple(causes.items()),
    )


def low_occupancy(summary: Summary) -> LowOccupancy | None:
    """A rank's low-occupancy flag with at least 5 % of its kernel time (the largest share)."""
    best: tuple[float, int, OccupancyFlag] | None = None
    for r in summary["ranks"]:
        occ = r.get("occupancy")
        for f in occ["flags"] if occ is not None else []:
            share = f["time_share"]
            if share >= LOW_OCC_TIME_SHARE and (best is None or share > best[0]):
                best = (share, r["rank"], f)
    if best is None:
        return None
    share, rank, f = best
    busy = busy_fraction(summary)
    return LowOccupancy(
        id="low_occupancy",
        value=float(f["theoretical_pct"]),
        limit=LOW_OCC_PCT,
        impact=share * (busy if busy is not None else 1.0),
        rank=rank,
        flag=f,
    )


def skew(summary: Summary) -> Skew | None:
    """Arrival skew / (skew + transfer) of the matched collectives > 25 %."""
    sk = summary.get("comm_skew")
    if sk is None:
        return None
    s, t = sk["arrival_skew_ns"], sk["transfer_ns"]
    if s + t <= 0 or s / (s + t) <= SKEW_SHARE:
        return None
    late = max(sk["per_rank"], key=lambda r: r["late_count"], default=None)
    dur = sum(r["gpu_duration_ns"] for r in rank_step_rows(summary))
    waits = sum(r["wait_ns"] for r in sk["per_rank"])
    return Skew(
        id="skew",
        value=100 * s / (s + t),
        limit=100 * SKEW_SHARE,
        impact=waits / dur if dur > 0 else s / (s + t),
        skew_ns=s,
        transfer_ns=t,
        matched=sk["matched"],
        late=(late["rank"], late["late_count"])
        if late is not None and late["late_count"] > 0
        else None,
    )


def low_busbw(summary: Summary) -> LowBusbw | None:
    """A ≥ 256 MiB collective row below 50 % of the link peak (the lowest over ranks)."""
    worst: tuple[float, int, str, float | None] | None = None
    time = 0
    for r in summary["ranks"]:
        for row in r.get("collectives", []):
            pct = row["median_busbw_link_pct"]
            if row["size_bucket"] != LARGE_BUCKET or pct is None or pct >= BUSBW_LINK_PCT:
                continue
            time += row["time_ns"]
            if worst is None or pct < worst[0]:
                worst = (pct, r["rank"], row["collective"], row["median_busbw_gbps"])
    if worst is None:
        return None
    pct, rank, collective, busbw = worst
    dur = sum(r["gpu_duration_ns"] for r in rank_step_rows(summary))
    return LowBusbw(
        id="low_busbw",
        value=pct,
        limit=BUSBW_LINK_PCT,
        impact=time / dur if dur > 0 else 0.0,
        rank=rank,
        collective=collective,
        busbw_gbps=busbw,
    )


def throttling(summary: Summary) -> Throttling | None:
    """A GPU throttled during more than 5 % of its node's sampled time (the largest)."""
    worst: tuple[float, str, int, set[str]] | None = None
    run = summary.get("run")
    for h in run["nvml"] if run is not None else []:
        span = h["duration_ns"]
        if span <= 0:
            continue
        per_dev: dict[int, tuple[int, set[str]]] = {}
        for b in h["throttle"]:
            t, rs = per_dev.get(b["device"], (0, set()))
            per_dev[b["device"]] = (t + b["end_ns"] - b["start_ns"], rs | set(b["reasons"]))
        for dev, (t, rs) in per_dev.items():
            if worst is None or t / span > worst[0]:
                worst = (t / span, h["host"], dev, rs)
    if worst is None or worst[0] <= THROTTLE_SHARE:
        return None
    share, host, dev, reasons = worst
    return Throttling(
        id="throttling",
        value=100 * share,
        limit=100 * THROTTLE_SHARE,
        impact=share,
        host=host,
        device=dev,
        reasons=tuple(sorted(reasons)),
    )


def low_roofline(summary: Summary) -> LowRoofline | None:
    """An op-roofline point with ≥ 20 % of its rank's GPU time below 50 % of its attainable
    (``time_share`` is a share of the rank's GPU time)."""
    worst: tuple[float, int, RooflinePoint, float] | None = None
    for r in summary["ranks"]:
        ops = r.get("roofline", {}).get("ops")
        if ops is None:
            continue
        for p in ops["points"]:
            share, pct = p["time_share"], p["pct_of_attainable"]
            if share is None or pct is None or share < ROOFLINE_TIME_SHARE or pct >= ROOFLINE_PCT:
                continue
            if worst is None or share > worst[0]:
                worst = (share, r["rank"], p, pct)
    if worst is None:
        return None
    impact, rank, p, pct = worst
    return LowRoofline(
        id="low_roofline", value=pct, limit=ROOFLINE_PCT, impact=impact, rank=rank, point=p
    )


RULES: tuple[Callable[[Summary], Finding | None], ...] = (
    exposed_comm,
    host_bound,
    gpu_idle,
    low_occupancy,
    skew,
    low_busbw,
    throttling,
    low_roofline,
    *SERVING_RULES,
)
"""Every rule, in tie-break order."""


def findings(summary: Summary) -> Sequence[Finding]:
    """The findings of every rule, at most 5: with a ``critical_path`` section, by the time the
    corresponding what-if recovers (:func:`analyzers.critical_path.fix_order.by_recovered`),
    else largest ``impact`` first (ties in rule order)."""
    found = [f for rule in RULES if (f := rule(summary)) is not None]
    if summary.get("critical_path"):
        from analyzers.critical_path.fix_order import by_recovered

        order = by_recovered(summary, found)
    else:
        order = sorted(range(len(found)), key=lambda i: (-found[i].impact, i))
    return [found[i] for i in order[:MAX_FINDINGS]]
