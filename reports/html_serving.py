"""The HTML report's serving section: GPU time per op category (with the modelled part's
distance to its roof), graph replays and their attribution, serving phases with MFU (the peak
and dtype beside every figure), MoE layers, notes — rendered from ``ranks[].serving`` of the
summary (docs/inference.md).  Every string goes through :func:`reports.html_page.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.html_page import (
    Col,
    esc,
    fixed,
    integer,
    ms,
    no_data,
    note,
    pct,
    section,
    short,
    table,
)

MAX_RANKS = 4
"""Ranks shown (the JSON has them all)."""
MFU_DEFINITION = (
    "MFU = model FLOPs (from the op models: the op's recorded shapes; a graph replay: its "
    "capture op's) ÷ GPU busy time ÷ the device's dense peak for the dtype with the most "
    "FLOPs. Coverage = share of GPU time with a FLOP model (MFU counts only that part); exact "
    "= share of the FLOPs from exact costs. HFU adds recomputed FLOPs (shown only when "
    "recomputation is visible). % of roof = time at the roof ÷ time, over the category's "
    "modelled work. Definitions: docs/inference.md."
)


def _share(part: Any, whole: Any) -> float | None:
    return 100.0 * part / whole if part is not None and whole else None


def mfu_text(m: Mapping[str, Any] | None) -> str:
    """``12.3 % of MI300X OAM 192 GB fp16_tensor``, or why there is none."""
    if not m or m.get("mfu") is None:
        if m and m.get("dtype") and not m.get("peak"):
            return f"– (no {m['dtype']} peak for this device)"
        return "– (no FLOP model)" if m and not m.get("model_flops") else "–"
    return f"{100 * m['mfu']:.1f} % of {m['peak']} {m['dtype']}"


def _mfu_row(label: str, m: Mapping[str, Any]) -> dict[str, Any]:
    rate = m.get("achieved_flops_per_s")
    return {
        "of": label,
        "busy_ns": m["busy_ns"],
        "tflop": m["model_flops"] / 1e12,
        "tflops": rate / 1e12 if rate is not None else None,
        "mfu": mfu_text(m),
        "hfu": 100 * m["hfu"] if m.get("hfu") is not None else None,
        "coverage": 100 * m["coverage"] if m.get("coverage") is not None else None,
        "exact": 100 * m["exact_share"] if m.get("exact_share") is not None else None,
    }


def serving_payload(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per rank with a ``serving`` section (first :data:`MAX_RANKS`): its tables' rows."""
    out: list[dict[str, Any]] = []
    for r in summary.get("ranks") or []:
        s = r.get("serving")
        if not isinstance(s, Mapping) or len(out) >= MAX_RANKS:
            continue
        cats = [
            {
                **c,
                "pct": 100 * c["share"] if c.get("share") is not None else None,
                "modelled_pct": _share(c.get("modelled_ns"), c["time_ns"]),
            }
            for c in s.get("categories") or []
        ]
        phases = [
            {
                **{k: p.get(k) for k in ("phase", "steps", "requests", "tokens", "busy_ns")},
                "tokens_per_s": p.get("tokens_per_s"),
                "tpot_ns": p.get("time_per_output_token_ns"),
                "top": ", ".join(
                    f"{c['category']} {100 * (c['share'] or 0):.1f} %"
                    for c in sorted(p.get("categories") or [], key=lambda c: -c["time_ns"])[:3]
                ),
            }
            for p in s.get("phases") or []
        ]
        mfu = [_mfu_row(f"phase {p['phase']}", p["mfu"]) for p in s.get("phases") or []]
        mfu = [m for m, p in zip(mfu, s.get("phases") or [], strict=True) if p.get("mfu")]
        if s.get("mfu"):
            mfu.append(_mfu_row("all GPU work", s["mfu"]))
        g = s.get("graphs") or {}
        out.append(
            {
                "rank": r["rank"],
                "capture_trace": bool(s.get("capture_trace")),
                "categories": cats,
                "graphs": g if g.get("launches") else None,
                "phases": phases,
                "mfu": mfu,
                "moe": (s.get("moe") or {}).get("layers") or [],
                "notes": list(s.get("notes") or []),
            }
        )
    return out


def _rank_html(r: Mapping[str, Any]) -> str:
    rank = r["rank"]
    parts = [f"<h3>Rank {esc(rank)}</h3>"]
    parts += [note(n) for n in r["notes"]]
    if r["categories"]:
        cols = [
            Col("category", "category", str, numeric=False),
            Col("kernels", "kernels", integer),
            Col("GPU ms", "time_ns", ms),
            Col("% of GPU work", "pct", fixed),
            Col("modelled %", "modelled_pct", fixed),
            Col("% of roof", "pct_of_roof", fixed),
        ]
        parts.append(table(f"serving-categories-{rank}", cols, r["categories"]))
    g = r["graphs"]
    if g:
        how = (
            f"attributed to capture ops: {pct(100 * g['coverage'])} % of the replayed GPU time"
            if g["method"] == "capture" and g.get("coverage") is not None
            else "no capture trace: kernels grouped per graph, attribution by kernel name only"
        )
        parts.append(
            f"<p>{esc(g['launches'])} graph launches of {esc(g['graphs'])} graph(s), "
            f"{esc(ms(g['graph_kernel_ns']))} ms replayed; {esc(how)}</p>"
        )
    if r["phases"]:
        cols = [
            Col("phase", "phase", str, numeric=False),
            Col("steps", "steps", integer),
            Col("requests", "requests", integer),
            Col("tokens", "tokens", integer),
            Col("GPU busy ms", "busy_ns", ms),
            Col("tokens/s", "tokens_per_s", integer),
            Col("TPOT ms", "tpot_ns", ms),
            Col("top categories", "top", str, numeric=False),
        ]
        parts.append(table(f"serving-phases-{rank}", cols, r["phases"]))
    if r["mfu"]:
        cols = [
            Col("of", "of", str, numeric=False),
            Col("GPU busy ms", "busy_ns", ms),
            Col("model TFLOP", "tflop", lambda x: fixed(x, 3)),
            Col("TFLOP/s", "tflops", fixed),
            Col("MFU (peak, dtype)", "mfu", str, numeric=False),
            Col("HFU %", "hfu", fixed),
            Col("coverage %", "coverage", fixed),
            Col("exact %", "exact", fixed),
        ]
        parts.append(table(f"serving-mfu-{rank}", cols, r["mfu"]))
    if r["moe"]:
        cols = [
            Col("MoE layer type", "layer", short, numeric=False),
            Col("calls", "calls", integer),
            Col("GPU ms", "time_ns", ms),
            Col("% of GPU work", "share_pct", fixed),
        ]
        rows = [
            {**m, "share_pct": 100 * m["share_of_gpu"] if m.get("share_of_gpu") else None}
            for m in r["moe"]
        ]
        parts.append(table(f"serving-moe-{rank}", cols, rows))
    return "".join(parts)


def serving_section(p: Mapping[str, Any]) -> str:
    """The section (one line when no rank has a serving section)."""
    ranks = p.get("serving") or []
    if not ranks:
        body = no_data("no GPU work: no op categories, serving phases or MFU")
    else:
        body = f"<p>{esc(MFU_DEFINITION)}</p>" + "".join(_rank_html(r) for r in ranks)
    return section("serving", "Op categories, graph replays, serving phases and MFU", body)
