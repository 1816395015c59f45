"""The report's data payload: everything the HTML page shows, as one JSON-ready dict.

Built from the JSON summary only (docs/report.md defines each key).  The page embeds this
payload as ``<script type="application/json" id="gpuscope-data">`` so tests and tools can read
back exactly what is shown.  Tables are aggregated over ranks and cut to their largest rows
(:data:`TOP_KERNELS`, :data:`TOP_OCCUPANCY`); the cut is recorded next to each table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from analyzers.arch import compute_unit_word
from analyzers.headline import cards
from analyzers.stats import median
from reports import html_series
from reports.findings import findings
from reports.html_critical_path import fix_first_payload
from reports.html_metrics import Summary, collective_rows, num, ranks
from reports.html_serving import serving_payload

TOP_KERNELS = 50
TOP_OCCUPANCY = 20
TOP_ROOFLINE = 100
TOP_RANGES = 30
MAX_SOURCES = 20
TOP_STRAGGLER_STEPS = 20


def header(summary: Summary) -> dict[str, Any]:
    """Run metadata: tool, ranks, GPUs, hosts, versions, command, sources."""
    rs = ranks(summary)
    run: Mapping[str, Any] = summary.get("run") or {}
    meta: Mapping[str, Any] = run.get("meta") or {}
    gpus: Counter[str] = Counter()
    for r in rs:
        d: Mapping[str, Any] = r.get("device") or {}
        if d.get("name"):
            desc = str(d["name"])
            if d.get("arch"):
                unit = compute_unit_word(d.get("vendor"), d.get("warp_size"))
                desc += f" ({d['arch']}, {d.get('sm_count') or '?'} {unit})"
            gpus[desc] += 1
    src = run.get("ranks") or []
    formats = sorted(
        {f"{x.get('source_format')} {x.get('source_version') or ''}".strip() for x in src}
    )
    hosts = sorted({str(x["hostname"]) for x in src if x.get("hostname")}) or list(
        meta.get("hosts") or []
    )
    sources = list(summary.get("sources") or [])
    steps = sorted({int(s) for r in rs for s in (r.get("window") or {}).get("steps") or []})
    world = [w for x in src if (w := x.get("world_size"))]
    command = meta.get("command")
    return {
        "tool": summary.get("tool") or {},
        "schema_version": summary.get("schema_version"),
        "ranks": len(rs),
        "world_size": max(world) if world else meta.get("world_size"),
        "gpus": [{"name": k, "count": v} for k, v in sorted(gpus.items())],
        "hosts": hosts,
        "source_formats": formats,
        "versions": meta.get("versions") or {},
        "command": " ".join(map(str, command)) if isinstance(command, list) else command,
        "git_commit": meta.get("git_commit"),
        "started_unix_ns": meta.get("started_unix_ns"),
        "steps": steps,
        "sources": sources[:MAX_SOURCES],
        "sources_total": len(sources),
    }


def gate_banner(gate: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """PASS/FAIL banner data from a gate result document (docs/gating.md §6)."""
    if not isinstance(gate, Mapping) or not gate.get("status"):
        return None
    bad = [
        {"key": v.get("key"), "status": v.get("status"), "message": v.get("message")}
        for v in gate.get("verdicts") or []
        if isinstance(v, Mapping) and v.get("status") in ("fail", "warn")
    ]
    return {
        "status": str(gate["status"]),
        "name": gate.get("name"),
        "exit_code": gate.get("exit_code"),
        "counts": gate.get("counts") or {},
        "baseline": (gate.get("baseline") or {}).get("label"),
        "problems": bad[:20],
    }


def kernels(summary: Summary) -> dict[str, Any] | None:
    """Kernel summary pooled over ranks, by name; the :data:`TOP_KERNELS` largest rows."""
    agg: dict[str, dict[str, Any]] = {}
    for r in ranks(summary):
        for k in r.get("kernel_summary") or []:
            a = agg.setdefault(
                k["name"],
                {
                    "name": k["name"],
                    "type": k["type"],
                    "count": 0,
                    "total_ns": 0,
                    "min_ns": k["min_ns"],
                    "max_ns": k["max_ns"],
                    "ranks": 0,
                },
            )
            a["count"] += int(k["count"])
            a["total_ns"] += int(k["total_ns"])
            a["min_ns"] = min(a["min_ns"], int(k["min_ns"]))
            a["max_ns"] = max(a["max_ns"], int(k["max_ns"]))
            a["ranks"] += 1
    if not agg:
        return None
    total = sum(a["total_ns"] for a in agg.values())
    rows = sorted(agg.values(), key=lambda a: (-a["total_ns"], a["count"], a["name"]))
    for a in rows:
        a["avg_ns"] = round(a["total_ns"] / a["count"]) if a["count"] else None
        a["time_pct"] = 100.0 * a["total_ns"] / total if total else None
    by_type: dict[str, int] = {}
    for a in rows:
        by_type[a["type"]] = by_type.get(a["type"], 0) + a["total_ns"]
    rest = rows[TOP_KERNELS:]
    return {
        "rows": rows[:TOP_KERNELS],
        "names_total": len(rows),
        "total_ns": total,
        "rest": {
            "names": len(rest),
            "count": sum(a["count"] for a in rest),
            "total_ns": sum(a["total_ns"] for a in rest),
        },
        "types": [
            {"type": t, "total_ns": v, "pct": 100.0 * v / total if total else None}
            for t, v in sorted(by_type.items(), key=lambda kv: -kv[1])
        ],
    }


def annotated_ranges(summary: Summary) -> dict[str, Any] | None:
    """``run.ranks[].ranges`` pooled over ranks by (kind, name); the largest first."""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    run: Mapping[str, Any] = summary.get("run") or {}
    for r in run.get("ranks") or []:
        for x in r.get("ranges") or []:
            key = (str(x["kind"]), str(x["name"]))
            a = agg.setdefault(
                key,
                {
                    "kind": key[0],
                    "name": key[1],
                    "count": 0,
                    "total_ns": 0,
                    "max_ns": 0,
                    "ranks": 0,
                },
            )
            a["count"] += int(x["count"])
            a["total_ns"] += int(x["total_ns"])
            a["max_ns"] = max(a["max_ns"], int(x["max_ns"]))
            a["ranks"] += 1
    if not agg:
        return None
    rows = sorted(agg.values(), key=lambda a: (-a["total_ns"], a["kind"], a["name"]))
    return {"rows": rows[:TOP_RANGES], "names_total": len(rows)}


def _p50(values: list[float]) -> float | None:
    return median(values) if values else None


def collectives(summary: Summary) -> list[dict[str, Any]]:
    """``collectives.summary`` rows pooled over ranks by (collective, size bucket)."""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for r in ranks(summary):
        for row in collective_rows(r):
            key = (str(row.get("collective")), str(row.get("size_bucket")))
            a = agg.setdefault(
                key,
                {
                    "collective": key[0],
                    "size_bucket": key[1],
                    "count": 0,
                    "bytes": None,
                    "time_ns": 0,
                    "ranks": 0,
                    "_bw": [],
                    "_pct": [],
                    "_max": [],
                },
            )
            a["count"] += int(row.get("count") or 0)
            a["time_ns"] += int(row.get("time_ns") or 0)
            a["ranks"] += 1
            b = row.get("bytes")
            if isinstance(b, int) and b >= 0:
                a["bytes"] = (a["bytes"] or 0) + b
            for src, dst in (
                ("median_busbw_gbps", "_bw"),
                ("median_busbw_link_pct", "_pct"),
                ("max_busbw_gbps", "_max"),
            ):
                if (v := num(row.get(src))) is not None:
                    a[dst].append(v)
    out = []
    for a in agg.values():
        bw, pct, mx = a.pop("_bw"), a.pop("_pct"), a.pop("_max")
        a["median_busbw_gbps"] = _p50(bw)
        a["max_busbw_gbps"] = max(mx) if mx else None
        a["median_busbw_link_pct"] = _p50(pct)
        out.append(a)
    totals = {a["collective"]: a["time_ns"] for a in out if a["size_bucket"] == "all"}
    return sorted(
        out,
        key=lambda a: (-totals.get(a["collective"], 0), a["collective"], a["size_bucket"] != "all"),
    )


def comm_ranks(summary: Summary) -> list[dict[str, Any]]:
    """Per rank: communication, exposed communication, and (with skew) wait and lateness."""
    cs: Mapping[str, Any] = summary.get("comm_skew") or {}
    skew = {int(p["rank"]): p for p in cs.get("per_rank") or []}
    out = []
    for r in ranks(summary):
        c: Mapping[str, Any] = r.get("comm") or {}
        o: Mapping[str, Any] = r.get("overlap") or {}
        rank = int(r["rank"])
        if not c and not o.get("comm_ns") and rank not in skew:
            continue
        s = skew.get(rank) or {}
        out.append(
            {
                "rank": rank,
                "comm_ns": c.get("comm_ns", o.get("comm_ns")),
                "exposed_ns": c.get("exposed_ns", o.get("exposed_comm_ns")),
                "overlap_pct": num(o.get("overlap_pct")),
                "wait_ns": s.get("wait_ns"),
                "transfer_ns": s.get("transfer_ns"),
                "late_count": s.get("late_count"),
                "collectives": s.get("collectives"),
            }
        )
    return out


def occupancy(summary: Summary) -> dict[str, Any] | None:
    """Per-rank occupancy figures and the kernels pooled over ranks (largest time first)."""
    per_rank: list[dict[str, Any]] = []
    agg: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in ranks(summary):
        o = r.get("occupancy")
        if not o:
            continue
        per_rank.append(
            {
                "rank": int(r["rank"]),
                "theoretical_pct": num(o.get("time_weighted_theoretical_pct")),
                "est_achieved_pct": num(o.get("time_weighted_est_achieved_pct")),
                "coverage": num(o.get("coverage")),
                "bound": "≤" if o.get("upper_bound") else "",
            }
        )
        for k in o.get("by_kernel") or []:
            key = (k.get("name"), k.get("block"), k.get("registers"), k.get("smem_bytes"))
            a = agg.setdefault(
                key,
                {
                    "name": k.get("name"),
                    "block": k.get("block"),
                    "registers": k.get("registers"),
                    "smem_bytes": k.get("smem_bytes"),
                    "calls": 0,
                    "time_ns": 0,
                    "theoretical_pct": num(k.get("theoretical_pct")),
                    "bound": "≤" if k.get("upper_bound") else "",
                    "limiters": list(k.get("limiters") or []),
                    "_w": 0.0,
                    "_wt": 0,
                },
            )
            t = int(num(k.get("time_ns")) or 0)
            a["calls"] += int(k.get("calls") or 0)
            a["time_ns"] += t
            if (e := num(k.get("est_achieved_pct"))) is not None:
                a["_w"] += e * t
                a["_wt"] += t
    if not per_rank:
        return None
    rows = sorted(agg.values(), key=lambda a: -a["time_ns"])
    for a in rows:
        w, wt = a.pop("_w"), a.pop("_wt")
        a["est_achieved_pct"] = w / wt if wt else None
    return {"per_rank": per_rank, "kernels": rows[:TOP_OCCUPANCY], "kernels_total": len(rows)}


def roofline(summary: Summary) -> dict[str, Any] | None:
    """Op-roofline points pooled over ranks by (key, dominant precision): FLOP, DRAM bytes and
    time summed; the roofs are the union of the points' ceilings (first value per key)."""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    flops: dict[str, float] = {}
    bandwidth: dict[str, float] = {}
    for r in ranks(summary):
        roof: Mapping[str, Any] = r.get("roofline") or {}
        ops: Mapping[str, Any] = roof.get("ops") or {}
        for p in ops.get("points") or []:
            f, t = num(p.get("flop_total")), num(p.get("time_ns"))
            b = num((p.get("bytes") or {}).get("dram"))
            if f is None or t is None or t <= 0 or p.get("model_error"):
                continue  # a point above its roof is a model error: not plotted
            key = (str(p.get("key")), str(p.get("dominant_precision")))
            a = agg.setdefault(
                key,
                {
                    "key": key[0],
                    "precision": p.get("dominant_precision"),
                    "name": p.get("name"),
                    "calls": 0,
                    "flop": 0.0,
                    "bytes": 0.0,
                    "time_ns": 0.0,
                    "bound": p.get("bound"),
                    "_nobytes": False,
                },
            )
            a["calls"] += int(p.get("calls") or 0)
            a["flop"] += f
            a["time_ns"] += t
            if b is None:
                a["_nobytes"] = True
            else:
                a["bytes"] += b
            ceil = p.get("ceilings") or {}
            for k, v in (ceil.get("flops_per_s") or {}).items():
                if num(v):
                    flops.setdefault(k, float(v))
            for k, v in (ceil.get("bytes_per_s") or {}).items():
                if num(v):
                    bandwidth.setdefault(k, float(v))
    if not agg:
        return None
    rows = sorted(agg.values(), key=lambda a: -a["time_ns"])[:TOP_ROOFLINE]
    for a in rows:
        nob = a.pop("_nobytes")
        a["intensity"] = a["flop"] / a["bytes"] if a["bytes"] > 0 and not nob else None
        a["flops_per_s"] = a["flop"] / a["time_ns"] * 1e9
    return {
        "points": rows,
        "ceilings": {"flops_per_s": flops, "bytes_per_s": bandwidth},
        "points_total": len(agg),
    }


def straggler_steps(summary: Summary) -> list[dict[str, Any]]:
    """``comm_skew.per_step`` rows: the :data:`TOP_STRAGGLER_STEPS` with most caused wait."""
    cs: Mapping[str, Any] = summary.get("comm_skew") or {}
    rows: list[Mapping[str, Any]] = [r for r in cs.get("per_step") or [] if isinstance(r, Mapping)]
    top = sorted(rows, key=lambda r: -int(r.get("straggler_caused_wait_ns") or 0))
    return [dict(r) for r in sorted(top[:TOP_STRAGGLER_STEPS], key=lambda r: int(r.get("step", 0)))]


def integrity(summary: Summary) -> list[dict[str, Any]]:
    """Per rank with notes: ``rank``, ``capture`` and its ``integrity.notes``
    (docs/metrics.md §10)."""
    out = []
    for r in ranks(summary):
        i: Mapping[str, Any] = r.get("integrity") or {}
        if i.get("notes"):
            out.append(
                {"rank": int(r["rank"]), "capture": bool(i["capture"]), "notes": list(i["notes"])}
            )
    return out


def build_payload(summary: Summary, gate: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole report payload (JSON-ready)."""
    if gate is None and isinstance(summary.get("gate"), Mapping):
        gate = summary["gate"]
    return {
        "format": "gpuscope-report",
        "version": 1,
        "header": header(summary),
        "gate": gate_banner(gate),
        "fix_first": fix_first_payload(summary),
        "cards": cards(summary),
        "integrity": integrity(summary),
        "findings": findings(summary),
        "steps": html_series.step_breakdown(summary),
        "ranges": annotated_ranges(summary),
        "kernels": kernels(summary),
        "collectives": collectives(summary),
        "comm_ranks": comm_ranks(summary),
        "comm_skew_steps": straggler_steps(summary),
        "occupancy": occupancy(summary),
        "roofline": roofline(summary),
        "counters": html_series.counters(summary),
        "heatmap": html_series.heatmap(summary),
        "serving": serving_payload(summary),
    }
