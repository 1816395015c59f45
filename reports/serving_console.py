"""Rich tables of the ``serving`` summary section (one rank; docs/inference.md).

Rendered from the JSON (the same numbers as ``--json``).  Kernel, op and annotation names come
from the trace and are untrusted: they reach rich as :class:`rich.text.Text`, never as markup.
Times in ms (ns / 10⁶), shares in %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.table_text import Fast

_ms = fmt.ms


def _pct(x: float | None) -> str:
    return fmt.MISSING if x is None else f"{100 * x:.1f}"


def _num(x: float | int | None, digits: int = 0) -> str:
    return fmt.MISSING if x is None else f"{x:,.{digits}f}"


def _text(s: Any, width: int = 48) -> Text:
    return fmt.name_text(s, width)


def _section(rank: Mapping[str, Any]) -> Mapping[str, Any] | None:
    s = rank.get("serving")
    return s if isinstance(s, Mapping) else None


def categories_table(rank: Mapping[str, Any]) -> Table | None:
    """GPU time per op category, with how the kernels got their op."""
    s = _section(rank)
    if not s or not s.get("categories"):
        return None
    total = s.get("gpu_work_ns") or 0
    via = s.get("attribution_ns_by_source") or {}
    with_op = (via.get("op", 0) + via.get("capture", 0)) / total if total else None
    t = Table(
        title=f"Rank {rank['rank']}: GPU time by op category "
        f"({_pct(with_op)} % of it with a launching op)",
        title_justify="left",
    )
    cols = ("category", "kernels", "ms", "%", "modelled %", "% of roof")
    for c in cols:
        t.add_column(c, justify="left" if c == "category" else "right")
    for r in s["categories"]:
        mod = r.get("modelled_ns")
        t.add_row(
            r["category"],
            f"{r['kernels']:,}",
            _ms(r["time_ns"]),
            _pct(r["share"]),
            _pct(mod / r["time_ns"] if mod is not None and r["time_ns"] else None),
            _num(r.get("pct_of_roof"), 1),
        )
    return t


def mfu_label(m: Mapping[str, Any] | None) -> str:
    """``12.3 % of MI300X OAM 192 GB fp16_tensor`` (the peak and dtype beside every MFU), or
    why there is none."""
    if not m or m.get("mfu") is None:
        if m and m.get("dtype") and not m.get("peak"):
            return f"– (no {m['dtype']} peak for this device)"
        return "– (no FLOP model)" if m and not m.get("model_flops") else fmt.MISSING
    return f"{100 * m['mfu']:.1f} % of {m['peak']} {m['dtype']}"


def mfu_table(rank: Mapping[str, Any]) -> Table | None:
    """MFU per serving phase and of the rank: model FLOPs over GPU busy time against the
    device's dense peak for the dtype, with its coverage and exactness."""
    s = _section(rank)
    if not s or not s.get("mfu"):
        return None
    t = Table(
        title=f"Rank {rank['rank']}: model FLOPs utilisation (MFU; coverage = share of GPU time "
        "with a FLOP model)",
        title_justify="left",
    )
    cols = ("of", "GPU busy ms", "model TFLOP", "TFLOP/s", "MFU (peak, dtype)", "HFU %")
    for c in (*cols, "coverage %", "exact %"):
        t.add_column(c, justify="left" if c in ("of", "MFU (peak, dtype)") else "right")
    rows = [(f"phase {p['phase']}", p.get("mfu")) for p in s.get("phases", [])]
    for label, m in [*rows, ("all GPU work", s["mfu"])]:
        if not m:
            continue
        rate = m.get("achieved_flops_per_s")
        t.add_row(
            label,
            _ms(m["busy_ns"]),
            _num(m["model_flops"] / 1e12, 3),
            _num(rate / 1e12 if rate is not None else None, 1),
            Text(mfu_label(m)),
            _pct(m.get("hfu")),
            _pct(m.get("coverage")),
            _pct(m.get("exact_share")),
        )
    return t


def graphs_table(rank: Mapping[str, Any]) -> Table | None:
    """Graph replays: one row per graph (launches with the same kernel sequence)."""
    s = _section(rank)
    g = (s or {}).get("graphs") or {}
    if not g.get("launches"):
        return None
    how = {
        "capture": f"attributed to capture ops: {_pct(g.get('coverage'))} % of replayed time",
        "kernel-name": "no capture trace: by kernel name only",
    }.get(g.get("method", ""), g.get("method", ""))
    t = Table(
        title=f"Rank {rank['rank']}: graph replays ({how})",
        title_justify="left",
    )
    for c in ("graph", "launches", "kernels/launch", "ms", "attributed %", "alignment"):
        t.add_column(c, justify="left" if c == "alignment" else "right")
    for r in g.get("per_graph", []):
        att = r["attributed_ns"] / r["kernel_ns"] if r["kernel_ns"] else None
        t.add_row(
            str(r["graph"]),
            str(r["launches"]),
            ", ".join(str(x) for x in r["kernels_per_launch"]),
            _ms(r["kernel_ns"]),
            _pct(att),
            Text(", ".join(r["match"])),
        )
    return t


def phases_table(rank: Mapping[str, Any]) -> Table | None:
    """Per serving phase: steps, requests, tokens, GPU time, rates, and the top categories."""
    s = _section(rank)
    if not s or not s.get("phases"):
        return None
    t = Table(title=f"Rank {rank['rank']}: serving phases", title_justify="left")
    cols = (
        "phase",
        "steps",
        "requests",
        "tokens",
        "prefill tok",
        "decode tok",
        "GPU busy ms",
        "GPU span ms",
        "tokens/s",
        "output tok/s",
        "TPOT ms",
        "top categories",
    )
    for c in cols:
        t.add_column(c, justify="left" if c in ("phase", "top categories") else "right")
    for p in s["phases"]:
        top = sorted(p.get("categories", []), key=lambda r: -r["time_ns"])[:3]
        t.add_row(
            p["phase"],
            str(p["steps"]),
            _num(p["requests"]),
            _num(p["tokens"]),
            _num(p["prefill_tokens"]),
            _num(p["decode_tokens"]),
            _ms(p["busy_ns"]),
            _ms(p["gpu_span_ns"]),
            _num(p["tokens_per_s"], 1),
            _num(p["output_tokens_per_s"], 1),
            _ms(p["time_per_output_token_ns"]),
            Text(", ".join(f"{r['category']} {_pct(r['share'])} %" for r in top)),
        )
    return t


def moe_table(rank: Mapping[str, Any]) -> Table | None:
    """MoE layers: time per role, share of the layer and of all GPU work."""
    s = _section(rank)
    m = (s or {}).get("moe")
    if not m:
        return None
    calls = {r["layer"]: r["calls"] for r in m.get("layers", [])}
    t = Table(title=f"Rank {rank['rank']}: MoE layers", title_justify="left")
    for c in ("layer type", "calls", "role", "kernels", "ms", "% of layer", "% of GPU"):
        t.add_column(c, justify="left" if c in ("layer type", "role") else "right")
    for r in m.get("roles", []):
        t.add_row(
            _text(r["layer"], 32),
            str(calls.get(r["layer"], "")),
            r["role"],
            f"{r['kernels']:,}",
            _ms(r["time_ns"]),
            _pct(r["share_of_layer"]),
            _pct(r["share_of_gpu"]),
        )
    return t


def serving_tables(rank: Mapping[str, Any]) -> list[Table]:
    """Every serving table that has rows, in display order."""
    tables = (categories_table, graphs_table, phases_table, mfu_table, moe_table)
    return [tb for tb in (f(rank) for f in tables) if tb is not None]


def print_serving_section(rank: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the serving tables and notes of one rank."""
    console = console or Console()
    for tb in serving_tables(rank):
        console.print(Fast(tb))
    s = _section(rank) or {}
    for n in s.get("notes", []):
        console.print(Text(f"note: {n}"))
