"""The text of an nccl-tests log: launcher prefixes stripped, cut into sections (one per
``# Collective test starting:`` or ``# nThread`` header), and each section's data lines split
into raw result tokens per placement (the parsing rule of ``docs/communication.md`` §4)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.nccl_formulas import COLLECTIVES, canonical_collective
from collectors.nccl_tests.log import PLACEMENTS

_PREFIX = re.compile(r"^\s*(?:\d+:\s|\[[^\]]*\]<std(?:out|err)>:\s?|\[default\d+\]:\s?)")
_DEVICE = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<dev>\d+)\s+\[[^\]]*\]\s+(?P<name>.*?)\s*$"
)
_START = re.compile(r"^#\s*Collective test starting:\s*(?P<prog>\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(?P<v>\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>\S+)")
_PARAMS = re.compile(r"^#\s*nThread\b")
_INT = re.compile(r"^-?\d+$")
_TIME_NAMES = ("time", "cputime")
_WRONG_NAMES = ("#wrong", "error", "res", "wrong")
_TESTS = tuple(c for c in COLLECTIVES if c not in ("send", "recv", "barrier"))
"""Collectives that have an nccl-tests binary (``<collective>_perf``)."""
_FILENAME_TOKENS = (
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("sendrecv", "send_recv"),
    ("reduce", "reduce"),
    ("gather", "gather"),
    ("scatter", "scatter"),
)


def half_unit(token: str) -> float:
    """Half a unit of the last printed digit of a number token (``12.90`` → 0.005)."""
    t = token.strip()
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    try:
        half = 0.5 * 10.0**-decimals
        if exp:
            half *= 10.0 ** int(exp)
    except (OverflowError, ValueError):  # 1e999, 1.0e
        return math.nan
    return half


def num(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        return math.nan


def collective_from_name(name: str | None) -> str | None:
    """The collective named by an nccl-tests binary (``all_reduce_perf``) or a file name."""
    if not name:
        return None
    stem = Path(name).name.lower()
    prog = stem.split("_perf", 1)[0] if "_perf" in stem else None
    if prog:
        c = canonical_collective(prog)
        if c in _TESTS:
            return c
    squashed = re.sub(r"[^a-z]", "", stem)
    for token, coll in _FILENAME_TOKENS:
        if token in squashed:
            return coll
    return None


@dataclass
class Section:
    """One section of a log: its header facts and its data lines (not yet parsed)."""

    start_line: int
    program: str | None = None
    version: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    devices: dict[int, tuple[str, str]] = field(default_factory=dict)
    header: list[str] | None = None
    units: list[str] | None = None
    avg: float | None = None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def split_sections(lines: list[str]) -> list[Section]:
    sections: list[Section] = []
    cur: Section | None = None

    def new(lineno: int) -> Section:
        s = Section(start_line=lineno)
        sections.append(s)
        return s

    for i, raw in enumerate(lines, start=1):
        line = _PREFIX.sub("", raw.rstrip("\r\n"))
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            m = _START.match(stripped)
            if m:
                cur = new(i) if cur is None or cur.rows or cur.program else cur
                cur.program = m.group("prog")
                continue
            m = _VERSION.match(stripped)
            if m:
                if cur is None or cur.rows:
                    cur = new(i)
                cur.version = m.group("v")
                continue
            if _PARAMS.match(stripped):
                if cur is None or cur.rows or cur.params:
                    cur = new(i)
                toks = re.findall(r"(\w[\w ]*?):?\s+(-?\d+(?:\([a-z]+\))?)", stripped[1:])
                cur.params = {k.strip(): v for k, v in toks}
                continue
            m = _DEVICE.match(stripped)
            if m:
                cur = cur or new(i)
                cur.devices[int(m.group("rank"))] = (m.group("host"), m.group("name"))
                continue
            m = _AVG.match(stripped)
            if m and cur is not None:
                cur.avg = num(m.group("v"))
                continue
            toks = stripped[1:].split()
            low = [t.lower() for t in toks]
            if any(t in _TIME_NAMES for t in low) and ("size" in low or "bytes" in low):
                if cur is None or cur.rows:
                    cur = new(i)
                cur.header = low
                continue
            if "(b)" in low or "(elements)" in low:
                if cur is not None:
                    cur.units = low
                continue
            continue
        toks = stripped.split()
        if len(toks) >= 2 and _INT.match(toks[0]) and _INT.match(toks[1]):
            cur = cur or new(i)
            cur.rows.append((i, toks))
    return sections


def tail_layout(header: list[str] | None) -> tuple[list[str], str]:
    """Names of the trailing result columns, and the layout era."""
    if header is None:
        return ["time", "algbw", "busbw", "#wrong"] * 2, "headerless"
    first = next(i for i, t in enumerate(header) if t in _TIME_NAMES)
    tail = header[first:]
    if "#wrong" in tail:
        era = "2.13+"
    elif "res" in tail:
        era = "2017"
    else:
        era = "2.4-2.12"
    return tail, era


def parse_rows(sec: Section, tail: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Row dicts (one per placement) from the section's data lines."""
    t = len(tail)
    starts = [i for i, name in enumerate(tail) if name in _TIME_NAMES]
    groups = [tail[s : (starts[k + 1] if k + 1 < len(starts) else t)] for k, s in enumerate(starts)]
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    for lineno, toks in sec.rows:
        if len(toks) < 3 + t:
            warnings.append(
                f"line {lineno}: row has {len(toks)} fields, expected at least {3 + t} "
                "(truncated?); dropped"
            )
            continue
        lead = toks[2 : len(toks) - t]
        vals = toks[len(toks) - t :]
        dtype = lead[0] if lead else None
        redop: str | None = None
        root = -1
        for tok in lead[1:]:
            if _INT.match(tok):
                root = int(tok)
            else:
                redop = tok
        off = 0
        for k, names in enumerate(groups):
            g = dict(zip(names, vals[off : off + len(names)], strict=True))
            off += len(names)
            time_tok = next((g[n] for n in _TIME_NAMES if n in g), None)
            wrong_tok = next((g[n] for n in _WRONG_NAMES if n in g), None)
            if time_tok is None or "algbw" not in g or "busbw" not in g:
                continue
            out.append(
                {
                    "size_bytes": int(toks[0]),
                    "count": int(toks[1]),
                    "dtype": dtype,
                    "redop": redop,
                    "root": root,
                    "placement": PLACEMENTS[k] if k < 2 else f"placement_{k}",
                    "_time": time_tok,
                    "_algbw": g["algbw"],
                    "_busbw": g["busbw"],
                    "_wrong": wrong_tok,
                    "line": lineno,
                }
            )
    return out, warnings
