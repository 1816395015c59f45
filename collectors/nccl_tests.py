"""Parse nccl-tests ``*_perf`` output (every layout since 2017, and ``-J`` JSON) and recheck it.

A log holds one or more *sections* (one per ``# Collective test starting:`` or ``# nThread``
header); each becomes an :class:`NcclTestsLog` whose ``rows`` table has one row per result line
and placement (out-of-place / in-place).

Parsing rule (docs/communication.md §4): strip launcher prefixes (``0: ``,
``[1,0]<stdout>:``); a data row is a line whose first two tokens are integers (size, count);
its *last* ``T`` tokens are the result columns named by the header (``time algbw busbw
#wrong|error|res`` per placement, ``T = 8`` without a header); the tokens between are ``type
[redop] [root]``, some of which old versions leave blank.  NCCL ``INFO`` lines, ``...``
excerpt lines, missing headers and footers are tolerated; a row cut short is dropped with a
warning.

Every row is rechecked: the printed ``algbw`` must equal ``size / time`` and ``busbw`` must equal
``algbw × factor(collective, nranks)`` *to the printed precision*: the interval of true values
allowed by the rounding of ``time`` (half a unit of its last printed digit) and of the
bandwidth itself (±0.005 GB/s for ``%.2f``) must contain the printed value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.nccl_formulas import (
    COLLECTIVES,
    bus_factor,
    canonical_collective,
    canonical_dtype,
)

ROW_COLUMNS = (
    "collective",
    "size_bytes",
    "count",
    "dtype",
    "redop",
    "root",
    "placement",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "wrong",
    "algbw_expected",
    "busbw_expected",
    "algbw_ok",
    "busbw_ok",
    "line",
)
"""Columns of :attr:`NcclTestsLog.rows` (and of commbench's table)."""

PLACEMENTS = ("out_of_place", "in_place")

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


@dataclass(frozen=True)
class NcclTestsLog:
    """One section of an nccl-tests log: its facts, its rows and what could not be checked."""

    path: str | None
    collective: str | None
    collective_source: str
    """``header`` (``# Collective test starting``), ``filename``, ``option``, ``inferred``
    (from the busbw/algbw ratio and the redop column) or ``unknown``."""
    nranks: int | None
    nranks_source: str
    """``devices`` (the ``# Using devices`` block), ``busbw/algbw``, ``option`` or ``unknown``."""
    rows: pd.DataFrame
    layout: str
    """``2.13+`` (``#wrong`` column), ``2.4-2.12`` (``error``), ``2017`` (``res``, time in ms),
    ``json`` or ``headerless``."""
    time_unit: str
    devices: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    version: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    avg_busbw_footer: float | None = None
    """The ``# Avg bus bandwidth`` line: a mean over every row, never a peak (kept for display)."""
    warnings: tuple[str, ...] = ()

    @property
    def checked_ok(self) -> bool:
        """True when every checkable algbw/busbw value matched (unverifiable ones excluded)."""
        r = self.rows
        return bool((r["algbw_ok"].fillna(True) & r["busbw_ok"].fillna(True)).all())


def _half_unit(token: str) -> float:
    """Half a unit of the last printed digit of a number token (``12.90`` → 0.005)."""
    t = token.strip()
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    half = 0.5 * 10.0**-decimals
    if exp:
        half *= 10.0 ** int(exp)
    return half


def _num(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        return math.nan


def _collective_from_name(name: str | None) -> str | None:
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
class _Section:
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


def _split_sections(lines: list[str]) -> list[_Section]:
    sections: list[_Section] = []
    cur: _Section | None = None

    def new(lineno: int) -> _Section:
        s = _Section(start_line=lineno)
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
                cur.avg = _num(m.group("v"))
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


def _tail_layout(header: list[str] | None) -> tuple[list[str], str]:
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


def _parse_rows(sec: _Section, tail: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
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


def _check(rows: pd.DataFrame, factor: float, time_scale_ns: float) -> tuple[np.ndarray, ...]:
    """Expected algbw/busbw and whether the printed values lie within rounding of them."""
    size = rows["size_bytes"].to_numpy(dtype=np.float64)
    t = rows["time_us"].to_numpy(dtype=np.float64) * time_scale_ns
    ht = rows["_ht"].to_numpy(dtype=np.float64) * time_scale_ns
    ha = rows["_ha"].to_numpy(dtype=np.float64)
    hb = rows["_hb"].to_numpy(dtype=np.float64)
    alg = rows["algbw_gbps"].to_numpy(dtype=np.float64)
    bus = rows["busbw_gbps"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = size / t
        lo = size / (t + ht)
        hi = np.where(t - ht > 0, size / (t - ht), np.inf)
    eps = 1e-9
    alg_ok = (alg >= lo - ha - eps) & (alg <= hi + ha + eps)
    bus_ok = (bus >= lo * factor - hb - eps) & (bus <= hi * factor + hb + eps)
    known_t = np.isfinite(t) & np.isfinite(alg)
    alg_ok = np.where(known_t, alg_ok, np.nan)
    bus_ok = np.where(known_t & np.isfinite(bus) & np.isfinite(factor), bus_ok, np.nan)
    return expected, expected * factor, alg_ok, bus_ok


def _factor_interval(rows: pd.DataFrame, time_scale_ns: float) -> tuple[float, float]:
    """Range of busbw/algbw factors consistent with every row's rounding (lo > hi: none)."""
    ok = rows[np.isfinite(rows["busbw_gbps"]) & np.isfinite(rows["time_us"])]
    ok = ok[ok["size_bytes"] > 0]
    if ok.empty:
        return 0.0, math.inf
    size = ok["size_bytes"].to_numpy(np.float64)
    t = ok["time_us"].to_numpy(np.float64) * time_scale_ns
    ht = ok["_ht"].to_numpy(np.float64) * time_scale_ns
    hb = ok["_hb"].to_numpy(np.float64)
    bus = ok["busbw_gbps"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg_lo = size / (t + ht)
        alg_hi = np.where(t - ht > 0, size / (t - ht), np.inf)
        f_lo = (bus - hb) / alg_hi
        f_hi = np.where(alg_lo > 0, (bus + hb) / alg_lo, np.inf)
    return float(np.max(np.maximum(f_lo, 0.0))), float(np.min(f_hi))


_MAX_RANKS = 1 << 20


def _consistent_n(rows: pd.DataFrame, collective: str, time_scale_ns: float) -> list[int]:
    """Rank counts ``n ≥ 2`` whose bus factor fits every row (solved from the factor range)."""
    f_lo, f_hi = _factor_interval(rows, time_scale_ns)
    if f_lo > f_hi:
        return []
    top = 2.0 if collective == "all_reduce" else 1.0  # factor = top × (n−1)/n

    def n_of(f: float) -> float:
        return math.inf if f >= top else top / (top - f)

    n_lo, n_hi = n_of(f_lo), n_of(f_hi)
    if n_lo > _MAX_RANKS:
        return []
    lo = max(2, math.ceil(n_lo - 1e-9))
    hi = min(_MAX_RANKS, math.floor(n_hi + 1e-9) if math.isfinite(n_hi) else _MAX_RANKS)
    if hi - lo > 16:  # too loose to name n (only tiny messages, or n very large)
        return []
    return [n for n in range(lo, hi + 1) if f_lo <= bus_factor(collective, n) <= f_hi]


def _infer_collective(
    rows: pd.DataFrame, time_scale_ns: float, nranks: int | None
) -> tuple[str | None, list[str]]:
    """Collective from the busbw/algbw family and the redop column, when the log has no name."""
    f_lo, f_hi = _factor_interval(rows, time_scale_ns)
    fits = []
    for coll in ("broadcast", "all_reduce", "all_gather"):
        if nranks:
            if f_lo <= bus_factor(coll, nranks) <= f_hi:
                fits.append(coll)
        elif coll == "broadcast":
            if f_lo <= 1.0 <= f_hi:
                fits.append(coll)
        elif _consistent_n(rows, coll, time_scale_ns):
            fits.append(coll)
    redops = {r for r in rows["redop"].dropna().unique() if r.lower() != "none"}
    if fits == ["all_reduce"]:
        return "all_reduce", []
    if fits == ["broadcast"]:
        return ("reduce" if redops else "broadcast"), []
    if fits == ["all_gather"]:
        if redops:
            return "reduce_scatter", []
        return None, ["all_gather", "all_to_all", "gather", "scatter"]
    return None, fits


def _finish(
    sec: _Section,
    path: str | None,
    collective: str | None,
    nranks: int | None,
) -> NcclTestsLog:
    tail, era = _tail_layout(sec.header)
    time_unit = "ms" if era == "2017" else "us"
    if sec.units and "(ms)" in sec.units:
        time_unit = "ms"
    if sec.units and "(us)" in sec.units:
        time_unit = "us"
    recs, warnings = _parse_rows(sec, tail)
    warnings = list(sec.warnings) + warnings
    df = pd.DataFrame.from_records(recs)
    if df.empty:
        df = pd.DataFrame(
            columns=[
                "size_bytes",
                "count",
                "dtype",
                "redop",
                "root",
                "placement",
                "_time",
                "_algbw",
                "_busbw",
                "_wrong",
                "line",
            ]
        )
    df["time_us"] = [_num(x) for x in df["_time"]]
    if time_unit == "ms":
        df["time_us"] = df["time_us"] * 1000.0
    df["algbw_gbps"] = [_num(x) for x in df["_algbw"]]
    df["busbw_gbps"] = [_num(x) for x in df["_busbw"]]
    df["wrong"] = [math.nan if x is None else _num(x) for x in df["_wrong"]]
    scale_unit = 1000.0 if time_unit == "ms" else 1.0
    df["_ht"] = [_half_unit(x) * scale_unit for x in df["_time"]]
    df["_ha"] = [_half_unit(x) for x in df["_algbw"]]
    df["_hb"] = [_half_unit(x) for x in df["_busbw"]]
    bad = df["time_us"].isna() & df["_time"].astype(str).str.upper().ne("N/A")
    for ln in df.loc[bad, "line"]:
        warnings.append(f"line {ln}: time is not a number")

    # which collective, how many ranks
    coll_source = "option" if collective else "unknown"
    if collective is None and sec.program:
        collective = _collective_from_name(sec.program)
        coll_source = "header" if collective else coll_source
    if collective is None and path:
        collective = _collective_from_name(path)
        coll_source = "filename" if collective else coll_source
    n_source = "option" if nranks else "unknown"
    if nranks is None and sec.devices:
        nranks = max(sec.devices) + 1
        n_source = "devices"
    candidates: list[str] = []
    if collective is None and not df.empty:
        collective, candidates = _infer_collective(df, 1000.0, nranks)
        coll_source = "inferred" if collective else "unknown"
        if collective is None:
            warnings.append(
                "the collective is not named (no '# Collective test starting' line, file name "
                "without it) and the numbers fit "
                + (" or ".join(candidates) if candidates else "no known collective")
                + "; pass --collective to check busbw"
            )
    needs_n = collective is not None and math.isnan(bus_factor(collective, None))
    if needs_n and not df.empty:
        factor = bus_factor(collective, nranks) if nranks else math.nan
        _, _, _, bus_ok = _check(df, factor, 1000.0)
        if nranks is None or np.any(bus_ok == 0):
            fits = _consistent_n(df, collective, 1000.0)
            if fits and (nranks is None or nranks not in fits):
                if nranks is not None:
                    warnings.append(
                        f"busbw does not fit {nranks} ranks ({n_source}); it fits {fits[0]}"
                    )
                if n_source != "option":
                    nranks, n_source = fits[0], "busbw/algbw"
                if len(fits) > 1:
                    warnings.append(f"busbw fits {fits} ranks; using {fits[0]}")
    if nranks is None and needs_n:
        warnings.append("number of ranks unknown: busbw cannot be rechecked")

    factor = bus_factor(collective, nranks)
    if collective is None and "all_gather" in candidates:
        factor = bus_factor("all_gather", nranks)  # every candidate shares (n−1)/n
    exp_alg, exp_bus, alg_ok, bus_ok = _check(df, factor, 1000.0)
    df["algbw_expected"] = exp_alg
    df["busbw_expected"] = exp_bus
    df["algbw_ok"] = pd.array([None if np.isnan(v) else bool(v) for v in alg_ok], dtype="boolean")
    df["busbw_ok"] = pd.array([None if np.isnan(v) else bool(v) for v in bus_ok], dtype="boolean")
    for ln, a, b in zip(df["line"], df["algbw_ok"], df["busbw_ok"], strict=True):
        failed = [n for n, v in (("algbw", a), ("busbw", b)) if v is not pd.NA and not v]
        if failed:
            which = " and ".join(failed)
            warnings.append(f"line {ln}: printed {which} does not match size/time")
    if era in ("2.13+", "headerless"):
        # #wrong counts elements that failed nccl-tests' own validation
        for ln, w in zip(df["line"], df["wrong"], strict=True):
            if w > 0:
                warnings.append(f"line {ln}: {int(w)} wrong elements (data corruption)")
    df["collective"] = collective
    df["dtype"] = [canonical_dtype(x) or x for x in df["dtype"]]
    rows = df[list(ROW_COLUMNS)].reset_index(drop=True)
    rows = rows.astype({"size_bytes": "int64", "count": "int64", "root": "int64", "line": "int64"})
    hosts = tuple(dict.fromkeys(h for h, _ in sec.devices.values()))
    devices = tuple(name for _, name in (sec.devices[k] for k in sorted(sec.devices)))
    return NcclTestsLog(
        path=path,
        collective=collective,
        collective_source=coll_source,
        nranks=nranks,
        nranks_source=n_source if nranks else "unknown",
        rows=rows,
        layout=era,
        time_unit=time_unit,
        devices=devices,
        hosts=hosts,
        version=sec.version,
        params=dict(sec.params),
        avg_busbw_footer=sec.avg,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _parse_json(
    obj: dict[str, Any], path: str | None, collective: str | None, nranks: int | None
) -> list[NcclTestsLog]:
    """nccl-tests ``-J`` output: ``results[]`` with ``out_of_place`` / ``in_place`` objects."""
    recs = []
    for i, r in enumerate(obj.get("results") or [], start=1):
        for placement in PLACEMENTS:
            p = r.get(placement) or {}
            recs.append(
                {
                    "size_bytes": int(r.get("size", -1)),
                    "count": int(r.get("count", -1)),
                    "dtype": canonical_dtype(r.get("type")) or r.get("type"),
                    "redop": r.get("redop"),
                    "root": int(r.get("root", -1)),
                    "placement": placement,
                    "time_us": float(p.get("time", math.nan)),
                    "algbw_gbps": float(p.get("alg_bw", math.nan)),
                    "busbw_gbps": float(p.get("bus_bw", math.nan)),
                    "wrong": float(p.get("nwrong", math.nan)),
                    "line": i,
                }
            )
    coll = (
        collective
        or _collective_from_name(obj.get("test") or obj.get("name"))
        or (_collective_from_name(path))
    )
    df = pd.DataFrame.from_records(
        recs,
        columns=[
            c
            for c in ROW_COLUMNS
            if c not in ("collective", "algbw_expected", "busbw_expected", "algbw_ok", "busbw_ok")
        ],
    )
    n = nranks or obj.get("nranks")
    factor = bus_factor(coll, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = df["size_bytes"].to_numpy(np.float64) / (df["time_us"].to_numpy(np.float64) * 1e3)
    df["collective"] = coll
    df["algbw_expected"] = exp
    df["busbw_expected"] = exp * factor
    tol = lambda a, b: np.isclose(a, b, rtol=1e-3, atol=0.005)  # noqa: E731
    a_ok = tol(df["algbw_gbps"], df["algbw_expected"])
    b_ok = tol(df["busbw_gbps"], df["busbw_expected"])
    df["algbw_ok"] = pd.array(
        [None if np.isnan(e) else bool(o) for e, o in zip(exp, a_ok, strict=True)], "boolean"
    )
    df["busbw_ok"] = pd.array(
        [None if np.isnan(e * factor) else bool(o) for e, o in zip(exp, b_ok, strict=True)],
        "boolean",
    )
    avg = obj.get("average_bus_bandwidth")
    return [
        NcclTestsLog(
            path=path,
            collective=coll,
            collective_source="option" if collective else ("filename" if coll else "unknown"),
            nranks=n,
            nranks_source="option" if nranks else ("json" if n else "unknown"),
            rows=df[list(ROW_COLUMNS)],
            layout="json",
            time_unit="us",
            avg_busbw_footer=float(avg) if avg is not None else None,
        )
    ]


def parse_nccl_tests_text(
    text: str,
    path: str | None = None,
    *,
    collective: str | None = None,
    nranks: int | None = None,
) -> list[NcclTestsLog]:
    """Parse the text of an nccl-tests log; one :class:`NcclTestsLog` per section.

    Args:
        text: the log (stdout of ``*_perf``, possibly with launcher prefixes and NCCL INFO
            lines), or the ``-J`` JSON output.
        path: where it came from (used in messages, and to name the collective when the log
            does not).
        collective: override the collective (any spelling :func:`canonical_collective` knows).
        nranks: override the number of ranks.

    Raises:
        InputError: no nccl-tests result row in the text (another tool's output, an empty or
            badly truncated file).
    """
    if collective is not None:
        c = canonical_collective(collective)
        if c is None:
            raise InputError(f"unknown collective {collective!r}", path=path)
        collective = c
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON ({e.msg} at line {e.lineno})", path=path) from None
        if not isinstance(obj, dict) or "results" not in obj:
            raise InputError("JSON without a 'results' list: not nccl-tests -J output", path=path)
        return _parse_json(obj, path, collective, nranks)
    sections = [s for s in _split_sections(text.splitlines()) if s.rows]
    if not sections:
        raise InputError(
            "no nccl-tests result rows found (expected lines 'size count type ... time algbw "
            "busbw ...' from an *_perf binary)",
            path=path,
        )
    logs = [_finish(s, path, collective, nranks) for s in sections]
    if all(log.rows.empty for log in logs):
        raise InputError(
            "no complete nccl-tests result row: " + "; ".join(logs[0].warnings[:3]), path=path
        )
    for log in logs:
        if log.layout == "headerless" and not log.rows.empty:
            ok = log.rows["algbw_ok"].dropna()
            if len(ok) and not ok.any():
                raise InputError(
                    "lines look like result rows but no algbw equals size/time: not nccl-tests "
                    "output",
                    path=path,
                )
    return logs


def read_nccl_tests(
    path: str | Path, *, collective: str | None = None, nranks: int | None = None
) -> list[NcclTestsLog]:
    """Read and parse one log file (see :func:`parse_nccl_tests_text`).

    Raises:
        InputError: missing/unreadable file, binary content, or no result rows.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except IsADirectoryError:
        raise InputError("is a directory (give the log files)", path=p) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=p) from None
    if b"\x00" in raw[:4096]:
        raise InputError("binary file, not an nccl-tests text log", path=p)
    text = raw.decode("utf-8", errors="replace")
    return parse_nccl_tests_text(text, str(p), collective=collective, nranks=nranks)


def peak_table(logs: Iterable[NcclTestsLog]) -> pd.DataFrame:
    """Peak busbw per (collective, ranks, size): the best row over placements and logs.

    Columns: collective, nranks, size_bytes, busbw_gbps, algbw_gbps, time_us, placement, path.
    Rows whose time is unknown (``N/A``) are ignored; sorted by collective, ranks, size.
    """
    frames = []
    for log in logs:
        r = log.rows
        if r.empty:
            continue
        r = r[np.isfinite(r["busbw_gbps"])].copy()
        r["nranks"] = log.nranks if log.nranks is not None else -1
        r["path"] = log.path
        r["collective"] = r["collective"].fillna("unknown")
        frames.append(r)
    cols = [
        "collective",
        "nranks",
        "size_bytes",
        "busbw_gbps",
        "algbw_gbps",
        "time_us",
        "placement",
        "path",
    ]
    if not frames:
        return pd.DataFrame(columns=cols)
    allr = pd.concat(frames, ignore_index=True)
    idx = allr.groupby(["collective", "nranks", "size_bytes"], sort=True)["busbw_gbps"].idxmax()
    return allr.loc[idx, cols].reset_index(drop=True)
