"""The console output of ``gpuscope compare`` (rich tables) and the one-line texts the HTML page
shares, from the JSON document of :mod:`reports.compare_json`.  Names come from traces and are
untrusted: rich gets them as :class:`rich.text.Text`.  Times print in ms (ns / 10⁶) or µs
(ns / 10³)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports.compare_json import VIEW_TITLES

TOP_ROWS = 20
"""Entries printed per view on the console (the JSON has them all)."""


def _ms(ns: Any, signed: bool = False) -> str:
    if ns is None:
        return "–"
    return f"{ns / 1e6:+,.3f}" if signed else f"{ns / 1e6:,.3f}"


def _us(ns: Any) -> str:
    return "–" if ns is None else f"{ns / 1e3:,.1f}"


def _pct(p: Any, signed: bool = True) -> str:
    if p is None:
        return "–"
    return f"{p:+.1f}" if signed else f"{p:.1f}"


def cut(s: str, width: int) -> str:
    """*s*, cut to *width* characters with an ellipsis."""
    return s if len(s) <= width else s[: width - 1] + "…"


def side_line(name: str, s: Mapping[str, Any]) -> str:
    """One side: label, formats, ranks and window steps per rank."""
    fmt = "/".join(s["formats"])
    ranks = s["ranks"]
    steps = sorted(set(s["steps_per_rank"]))
    st = "/".join(map(str, steps)) if steps else "0"
    return (
        f"{name}: {s['label']} ({fmt}; {len(ranks)} rank{'s' if len(ranks) != 1 else ''}, "
        f"{st} window step{'s' if steps != [1] else ''} per rank)"
    )


def _unit(mode: str) -> str:
    return "rank-step" if mode != "span" else "rank"


def total_line(doc: Mapping[str, Any]) -> str:
    """``T`` on both sides, ΔT and the per-unit means (one line)."""
    b, c = doc["base"], doc["current"]
    what = "step time" if doc["mode"] != "span" else "GPU span"
    u = _unit(doc["mode"])

    def units(n: int) -> str:
        return f"{n} {u}{'s' if n != 1 else ''}"

    return (
        f"{what}: BASE {_ms(b['total_ns'])} ms over {units(b['units'])} → CURRENT "
        f"{_ms(c['total_ns'])} ms over {units(c['units'])}; ΔT = "
        f"{_ms(doc['total_change_ns'], True)} ms ({_pct(doc['total_change_pct'])} %); mean per "
        f"{u} {_ms(b['mean_ns'])} → {_ms(c['mean_ns'])} ms"
    )


def identity_line(view: Mapping[str, Any]) -> str:
    """matched + added + removed + other = ΔT, in ms."""
    return (
        f"matched {_ms(view['matched_ns'], True)} + added {_ms(view['added_ns'], True)} + "
        f"removed {_ms(view['removed_ns'], True)} + other {_ms(view['other_ns'], True)} = ΔT "
        f"{_ms(view['total_change_ns'], True)} ms"
    )


def unattributed_line(view: Mapping[str, Any], by: str) -> str:
    """Of ``other``: the GPU work in no entry, and the rest (not GPU work)."""
    un = view["unattributed_ns"]
    share = (
        f" ({100 * un / view['total_change_ns']:+.1f} % of ΔT)" if view["total_change_ns"] else ""
    )
    return (
        f"of other: GPU work in no {by} entry {_ms(un, True)} ms{share}; the remaining "
        f"{_ms(view['other_ns'] - un, True)} ms is not GPU work (idle, host time, overlap)"
    )


def entry_label(e: Mapping[str, Any], view: str) -> str:
    """What a row is called: the key, and for steps the ProfilerStep ids."""
    if view == "step" and e["names"]:
        return f"{e['key']} ({e['names'][0]})"
    return str(e["key"])


WIDE_COLUMNS = (
    "status",
    "count",
    "BASE ms",
    "CURRENT ms",
    "BASE µs/call",
    "CURRENT µs/call",
    "Δ ms",
    "Δ %",
    "share %",
)
NARROW_COLUMNS = ("status", "BASE ms", "CURRENT ms", "Δ ms", "share %")
NARROW_HEADERS = {"BASE ms": "base ms", "CURRENT ms": "cur ms"}


def view_table(
    doc: Mapping[str, Any], by: str, top: int = TOP_ROWS, width: int = 70, wide: bool = True
) -> Table:
    """The entries of view *by* ranked by |Δ|, then the rows that close the sum: the entries not
    shown, ``other`` and ΔT.  Narrow consoles (``wide=False``) get fewer columns."""
    v = doc["views"][by]
    rows = v["entries"]
    total = v["total_change_ns"]
    cols = WIDE_COLUMNS if wide else NARROW_COLUMNS
    t = Table(
        title=f"{VIEW_TITLES[by]}: top {min(top, len(rows))} of {len(rows)} by |contribution|",
        title_justify="left",
    )
    t.add_column(by, overflow="ellipsis", no_wrap=True, min_width=12, max_width=width)
    for col in cols:
        head = col if wide else NARROW_HEADERS.get(col, col)
        num = col != "status"
        t.add_column(head, justify="right" if num else "left", no_wrap=True, min_width=len(head))

    def share(d: int) -> str:
        return _pct(100.0 * d / total) if total else "–"

    def add(label: str, values: dict[str, str], **kw: Any) -> None:
        t.add_row(Text(cut(label, width)), *(values.get(c, "") for c in cols), **kw)

    for e in rows[:top]:
        b, c = e["base"], e["current"]
        add(
            entry_label(e, by),
            {
                "status": e["status"],
                "count": f"{b['count']}→{c['count']}",
                "BASE ms": _ms(b["total_ns"]),
                "CURRENT ms": _ms(c["total_ns"]),
                "BASE µs/call": _us(b["per_call_ns"]),
                "CURRENT µs/call": _us(c["per_call_ns"]),
                "Δ ms": _ms(e["delta_ns"], True),
                "Δ %": _pct(e["delta_pct"]),
                "share %": _pct(e["share_pct"]),
            },
        )
    rest = rows[top:]
    if rest:
        d = sum(e["delta_ns"] for e in rest)
        add(f"… {len(rest)} more entries", {"Δ ms": _ms(d, True), "share %": share(d)})
    add(
        "other (not in any entry)",
        {"Δ ms": _ms(v["other_ns"], True), "share %": share(v["other_ns"])},
    )
    add(
        "total change ΔT",
        {
            "BASE ms": _ms(doc["base"]["total_ns"]),
            "CURRENT ms": _ms(doc["current"]["total_ns"]),
            "Δ ms": _ms(total, True),
            "Δ %": _pct(doc["total_change_pct"]),
            "share %": share(total),
        },
    )
    return t


def steps_table(doc: Mapping[str, Any]) -> Table:
    """Step-time distributions side by side (ms)."""
    st = doc["step_time"]
    t = Table(title="step time per step (slowest compared rank), ms", title_justify="left")
    t.add_column("")
    for col in ("n", "min", "p10", "median", "p90", "max", "mean"):
        t.add_column(col, justify="right")
    for name in ("base", "current"):
        d = st[name]
        t.add_row(
            name.upper(),
            str(d["n"]),
            *(_ms(d[k]) for k in ("min_ns", "p10_ns", "median_ns", "p90_ns", "max_ns", "mean_ns")),
        )
    return t


def print_comparison(
    doc: Mapping[str, Any], console: Console, by: str = "kernel", top: int = TOP_ROWS
) -> None:
    """The console output of ``gpuscope compare``."""
    console.print(Text(side_line("BASE", doc["base"])))
    console.print(Text(side_line("CURRENT", doc["current"])))
    pairs = doc["rank_pairs"]
    console.print(
        Text(f"compared: {len(pairs)} rank pair(s), {doc['mode']} mode — {doc['definition']}")
    )
    for n in doc["notes"]:
        console.print(Text(f"note: {n}"))
    console.print(Text(total_line(doc)))
    console.print(Text(f"step times: {doc['step_time']['test']['statement']}"))
    if doc["step_time"]["base"]["n"] or doc["step_time"]["current"]["n"]:
        console.print(steps_table(doc))
    v = doc["views"][by]
    if not v["available"]:
        console.print(Text(f"{by} view {v['note']}"))
        return
    if v["note"] and v["note"] not in doc["notes"]:
        console.print(Text(f"note: {v['note']}"))
    wide = console.width >= 150
    width = max(12, console.width - (100 if wide else 56))
    console.print(view_table(doc, by, top, width=width, wide=wide))
    console.print(Text(identity_line(v)))
    if v.get("unattributed_ns") is not None:
        console.print(Text(unattributed_line(v, by)))
