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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.files import regular_file
from collectors.nccl_formulas import bus_factor, canonical_collective, canonical_dtype
from collectors.nccl_tests.log import PLACEMENTS, ROW_COLUMNS, NcclTestsLog
from collectors.nccl_tests.recheck import check, consistent_n, infer_collective
from collectors.nccl_tests.sections import (
    Section,
    collective_from_name,
    half_unit,
    num,
    parse_rows,
    split_sections,
    tail_layout,
)
from collectors.nccl_tests.validate import as_float, as_int, finite_or_nan, left_out


def _finish(
    sec: Section,
    path: str | None,
    collective: str | None,
    nranks: int | None,
) -> NcclTestsLog:
    tail, era = tail_layout(sec.header)
    time_unit = "ms" if era == "2017" else "us"
    if sec.units and "(ms)" in sec.units:
        time_unit = "ms"
    if sec.units and "(us)" in sec.units:
        time_unit = "us"
    recs, warnings = parse_rows(sec, tail)
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
    df["time_us"] = [num(x) for x in df["_time"]]
    if time_unit == "ms":
        df["time_us"] = df["time_us"] * 1000.0
    df["algbw_gbps"] = [num(x) for x in df["_algbw"]]
    df["busbw_gbps"] = [num(x) for x in df["_busbw"]]
    df["wrong"] = [math.nan if x is None else num(x) for x in df["_wrong"]]
    scale_unit = 1000.0 if time_unit == "ms" else 1.0
    df["_ht"] = [half_unit(x) * scale_unit for x in df["_time"]]
    df["_ha"] = [half_unit(x) for x in df["_algbw"]]
    df["_hb"] = [half_unit(x) for x in df["_busbw"]]
    bad = df["time_us"].isna() & df["_time"].astype(str).str.upper().ne("N/A")
    for ln in df.loc[bad, "line"]:
        warnings.append(f"line {ln}: time is not a number")
    n_read = len(df)
    df, dropped = left_out(df)
    warnings += dropped

    # which collective, how many ranks
    coll_source = "option" if collective else "unknown"
    if collective is None and sec.program:
        collective = collective_from_name(sec.program)
        coll_source = "header" if collective else coll_source
    if collective is None and path:
        collective = collective_from_name(path)
        coll_source = "filename" if collective else coll_source
    n_source = "option" if nranks else "unknown"
    if nranks is None and sec.devices:
        nranks = max(sec.devices) + 1
        n_source = "devices"
    candidates: list[str] = []
    if collective is None and not df.empty:
        collective, candidates = infer_collective(df, 1000.0, nranks)
        coll_source = "inferred" if collective else "unknown"
        if collective is None:
            warnings.append(
                "the collective is not named (no '# Collective test starting' line, file name "
                "without it) and the numbers fit "
                + (" or ".join(candidates) if candidates else "no known collective")
                + "; pass --collective to check busbw"
            )
    needs_n = collective is not None and math.isnan(bus_factor(collective, None))
    if needs_n and collective is not None and not df.empty:
        factor = bus_factor(collective, nranks) if nranks else math.nan
        _, _, _, bus_ok = check(df, factor, 1000.0)
        if nranks is None or np.any(bus_ok == 0):
            fits = consistent_n(df, collective, 1000.0)
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
    exp_alg, exp_bus, alg_ok, bus_ok = check(df, factor, 1000.0)
    df["algbw_expected"] = finite_or_nan(exp_alg)
    df["busbw_expected"] = finite_or_nan(exp_bus)
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
        avg_busbw_footer=sec.avg if sec.avg is None or math.isfinite(sec.avg) else None,
        warnings=tuple(dict.fromkeys(warnings)),
        left_out=n_read - len(rows),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parse_json(
    obj: dict[str, Any], path: str | None, collective: str | None, nranks: int | None
) -> list[NcclTestsLog]:
    """nccl-tests ``-J`` output: ``results[]`` with ``out_of_place`` / ``in_place`` objects.

    Values of the wrong type are unknown (NaN / None / -1); rows with impossible values are
    left out with a warning (:mod:`collectors.nccl_tests.validate`).

    Raises:
        InputError: ``results`` is not a list, or no row is usable.
    """
    results = obj.get("results")
    if not isinstance(results, list):
        raise InputError("'results' is not a list: not nccl-tests -J output", path=path)
    recs = []
    warnings: list[str] = []
    for i, r in enumerate(results, start=1):
        if not isinstance(r, dict):
            warnings.append(f"result {i} is not an object; left out")
            continue
        for placement in PLACEMENTS:
            p = r.get(placement)
            if p is not None and not isinstance(p, dict):
                warnings.append(f"result {i}: {placement} is not an object; read as unknown")
            p = p if isinstance(p, dict) else {}
            size, count, root = r.get("size"), r.get("count"), r.get("root", -1)
            recs.append(
                {
                    "size_bytes": size if as_int(size) is not None else -1,
                    "count": count if as_int(count) is not None else -1,
                    "dtype": canonical_dtype(_text(r.get("type"))) or _text(r.get("type")),
                    "redop": _text(r.get("redop")),
                    "root": root,
                    "placement": placement,
                    "time_us": as_float(p.get("time", math.nan)),
                    "algbw_gbps": as_float(p.get("alg_bw", math.nan)),
                    "busbw_gbps": as_float(p.get("bus_bw", math.nan)),
                    "wrong": as_float(p.get("nwrong", math.nan)),
                    "line": i,
                }
            )
    columns = [
        c
        for c in ROW_COLUMNS
        if c not in ("collective", "algbw_expected", "busbw_expected", "algbw_ok", "busbw_ok")
    ]
    df = pd.DataFrame.from_records(recs, columns=columns)
    n_read = len(df)
    df, dropped = left_out(df)
    warnings += [w.replace("line ", "result ", 1) for w in dropped]
    if df.empty:
        raise InputError(
            "no usable result row" + (": " + "; ".join(warnings[:3]) if warnings else ""),
            path=path,
        )
    df = df.astype({"size_bytes": "int64", "count": "int64", "root": "int64"})
    coll = (
        collective
        or collective_from_name(_text(obj.get("test")) or _text(obj.get("name")))
        or (collective_from_name(path))
    )
    n = nranks or as_int(obj.get("nranks"), lo=1)
    factor = bus_factor(coll, n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exp = df["size_bytes"].to_numpy(np.float64) / (df["time_us"].to_numpy(np.float64) * 1e3)
        exp = finite_or_nan(exp)
        exp_bus = finite_or_nan(exp * factor)
    df["collective"] = coll
    df["algbw_expected"] = exp
    df["busbw_expected"] = exp_bus
    for col, expected in (("algbw", exp), ("busbw", exp_bus)):
        printed = df[f"{col}_gbps"].to_numpy(np.float64)
        ok = np.isclose(printed, expected, rtol=1e-3, atol=0.005)
        flags: list[bool | None] = [
            None if np.isnan(e) else bool(o) for e, o in zip(expected, ok, strict=True)
        ]
        df[f"{col}_ok"] = pd.Series(flags, index=df.index, dtype="boolean")
    avg = as_float(obj.get("average_bus_bandwidth"))
    return [
        NcclTestsLog(
            path=path,
            collective=coll,
            collective_source="option" if collective else ("filename" if coll else "unknown"),
            nranks=n,
            nranks_source="option" if nranks else ("json" if n else "unknown"),
            rows=df[list(ROW_COLUMNS)].reset_index(drop=True),
            layout="json",
            time_unit="us",
            avg_busbw_footer=avg if math.isfinite(avg) else None,
            warnings=tuple(dict.fromkeys(warnings)),
            left_out=n_read - len(df),
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
        except RecursionError:
            raise InputError(
                "JSON nested too deeply: not nccl-tests -J output", path=path
            ) from None
        if not isinstance(obj, dict) or "results" not in obj:
            raise InputError("JSON without a 'results' list: not nccl-tests -J output", path=path)
        return _parse_json(obj, path, collective, nranks)
    sections = [s for s in split_sections(text.splitlines()) if s.rows]
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
    p = regular_file(path, directory="is a directory (give the log files)")
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
