"""Rich tables of the ``idle``, ``launch`` and ``memory`` summary sections (one rank each).

Rendered from the JSON summary (the same numbers as ``--json``).  Kernel, operator and API
names come from the trace and are untrusted: they reach rich as :class:`rich.text.Text`, never
as markup.  Times are shown in ms (ns / 10⁶) or µs (ns / 10³), memory in MiB (bytes / 2²⁰).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports import fmt
from reports.table_text import Fast

TOP_KERNELS = 10
"""Kernel rows shown in the launch table (the JSON has more)."""


_ms = fmt.ms
_us = fmt.us


def _mib(b: int | None) -> str:
    return "–" if b is None else f"{b / 2**20:,.1f}"


def _share(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _text(s: Any, width: int = 60) -> Text:
    return fmt.name_text(s, width)


def idle_table(rank: Mapping[str, Any]) -> Table | None:
    """Per-stream HTA breakdown and the GPU-wide attribution of idle time."""
    idle = rank.get("idle")
    if not idle:
        return None
    t = Table(
        title=(
            f"Rank {rank['rank']}: GPU idle time, HTA window (threshold "
            f"{_us(idle['threshold_ns'])} µs)"
        ),
        title_justify="left",
    )
    t.add_column("where")
    t.add_column("category")
    t.add_column("ms", justify="right")
    t.add_column("% of idle", justify="right")
    for s in idle.get("streams", []):
        t.add_row(f"stream {s['stream']}", s["category"], _ms(s["idle_ns"]), _share(s["ratio"]))
    g = idle.get("gpu") or {}
    total = g.get("idle_ns") or 0
    for key, label in (("by_cause", "GPU-wide"), ("by_cpu_activity", "CPU was in")):
        for k, v in (g.get(key) or {}).items():
            if v:
                share = v / total if total else None
                t.add_row(label, k.removesuffix("_ns"), _ms(v), _share(share))
    return t


def _verdict_word(verdict: str | None, basis: str) -> str:
    if verdict is not None:
        return verdict
    return "no verdict (graph-capture trace)" if basis == "capture trace" else "no GPU work"


def _basis_words(basis: str) -> str:
    return {
        "steps": "step time on the GPU clock",
        "gpu span": "the GPU span",
        "capture trace": "the steps",
    }.get(basis, basis)


def host_bound_line(rank: Mapping[str, Any]) -> Text | None:
    """The rank's verdict in one line (for a rank without steps: no per-step table)."""
    idle = rank.get("idle")
    if not idle:
        return None
    hb = idle.get("host_bound") or {}
    basis = hb.get("basis", "")
    return Text(
        f"Rank {rank['rank']}: {_verdict_word(hb.get('verdict'), basis)} (host wait "
        f"{_share(hb.get('host_share'))} %, exposed comm {_share(hb.get('comm_share'))} % of "
        f"{_basis_words(basis)})"
    )


def host_bound_table(rank: Mapping[str, Any]) -> Table | None:
    """Verdict per step (and for the rank) with the CPU ops behind the host wait; None when
    the rank has no steps (:func:`host_bound_line` says the verdict then)."""
    idle = rank.get("idle")
    if not idle or not idle.get("steps"):
        return None
    title = host_bound_line(rank)
    t = Table(title=title.plain if title is not None else None, title_justify="left")
    t.add_column("step", justify="right")
    t.add_column("GPU ms", justify="right")
    t.add_column("idle ms", justify="right")
    t.add_column("host wait %", justify="right")
    t.add_column("exposed comm %", justify="right")
    t.add_column("verdict")
    t.add_column("CPU ops during host wait (ms)")
    basis = (idle.get("host_bound") or {}).get("basis", "")
    for s in idle.get("steps", []):
        ops = Text()
        for i, op in enumerate(s.get("top_ops", [])[:3]):
            if i:
                ops.append("; ")
            ops.append_text(_text(op["name"], 40))
            ops.append(f" {_ms(op['overlap_ns'])}")
        t.add_row(
            str(s["step"]),
            _ms(s.get("gpu_duration_ns", s["duration_ns"])),
            _ms(s["idle_ns"]),
            _share(s["host_share"]),
            _share(s["comm_share"]),
            _verdict_word(s["verdict"], basis),
            ops,
        )
    return t


def launch_table(rank: Mapping[str, Any], top: int = TOP_KERNELS) -> Table | None:
    """HTA's launch figures, gpuscope's distributions and the kernels with most launch delay.

    "waiting ms" is the union of the waits ``[call end, op start)`` (docs/idle-and-launch.md
    §4.2), not their sum: delays of queued ops overlap.  Ops a graph launch enqueued are left
    out of the delay rows (their "delay" is a position inside the graph).
    """
    la = rank.get("launch")
    if not la:
        return None
    h = la.get("hta") or {}
    a = la.get("all") or {}
    t = Table(title=f"Rank {rank['rank']}: kernel launches", title_justify="left")
    t.add_column("what")
    t.add_column("n", justify="right")
    t.add_column("p50 µs", justify="right")
    t.add_column("p90 µs", justify="right")
    t.add_column("max µs", justify="right")
    t.add_column("waiting ms (union)", justify="right")
    t.add_row(
        "HTA-selected pairs: launch delay (p50 = median)",
        str(h.get("launches", 0)),
        "–" if h.get("launch_delay_median_us") is None else f"{h['launch_delay_median_us']:,.1f}",
        "–",
        _us(h.get("launch_delay_max_ns")),
        "–",
    )
    union = {"launch_delay": a.get("launch_delay_union_ns")}
    for key, label in (
        ("cpu_duration", "all launch calls: CPU duration"),
        ("launch_delay", "all launched ops: launch delay"),
        ("start_after_call", "all launched ops: call start to GPU start"),
    ):
        d = a.get(key) or {}
        t.add_row(
            label,
            str(d.get("n", 0)),
            _us(d.get("p50_ns")),
            _us(d.get("p90_ns")),
            _us(d.get("max_ns")),
            _ms(union.get(key)),
        )
    if a.get("graph_ops"):
        t.add_row(
            "graph-launched ops (left out: delay = position in the graph)",
            str(a["graph_ops"]),
            "–",
            "–",
            "–",
            "–",
        )
    for k in (la.get("per_kernel") or [])[:top]:
        d = k["launch_delay"]
        t.add_row(
            _text(k["name"]),
            str(k["launches"]),
            _us(d.get("p50_ns")),
            _us(d.get("p90_ns")),
            _us(d.get("max_ns")),
            _ms(k.get("launch_delay_union_ns")),
        )
    return t


def queue_table(rank: Mapping[str, Any]) -> Table | None:
    """Queue length per stream: HTA's maximum and gpuscope's time-weighted mean."""
    q = (rank.get("launch") or {}).get("queue") or []
    if not q:
        return None
    t = Table(title=f"Rank {rank['rank']}: launch queue length", title_justify="left")
    t.add_column("stream", justify="right")
    t.add_column("max", justify="right")
    t.add_column("time-weighted mean", justify="right")
    for r in q:
        tw = r["time_weighted_mean"]
        t.add_row(str(r["stream"]), str(r["max"]), "–" if tw is None else f"{tw:.2f}")
    return t


def memory_table(rank: Mapping[str, Any]) -> Table | None:
    """Peak memory per device and series, with the op that reached it."""
    mem = rank.get("memory")
    if not mem or not mem.get("series"):
        return None
    t = Table(title=f"Rank {rank['rank']}: GPU memory", title_justify="left")
    t.add_column("device", justify="right")
    t.add_column("series")
    t.add_column("peak MiB", justify="right")
    t.add_column("at op")
    t.add_column("first → last MiB", justify="right")
    for s in mem["series"]:
        t.add_row(
            str(s["device"]),
            s["series"],
            _mib(s["peak_bytes"]),
            _text(s["peak_op"]),
            f"{_mib(s['first_bytes'])} → {_mib(s['last_bytes'])}",
        )
    return t


def print_wait_sections(rank: Mapping[str, Any], console: Console | None = None) -> None:
    """Print one rank's idle, host-bound, launch, queue and memory tables, then its notes."""
    console = console or Console()
    tables = (
        idle_table(rank),
        host_bound_table(rank) or host_bound_line(rank),
        launch_table(rank),
        queue_table(rank),
        memory_table(rank),
    )
    for table in tables:
        if table is not None:
            console.print(Fast(table) if isinstance(table, Table) else table)
    notes: list[str] = []
    for key in ("idle", "launch", "memory"):
        for n in (rank.get(key) or {}).get("notes", []):
            if n not in notes:
                notes.append(n)
    for n in notes:
        console.print(Text(f"note (rank {rank['rank']}): {n}"))
