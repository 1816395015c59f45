"""Host side of an nsys export: CUDA API calls → ``host`` rows, NVTX ranges → ``annotations``.

``globalTid`` packs the process and the thread: ``pid = (globalTid >> 24) & 0xFFFFFF``,
``tid = globalTid & 0xFFFFFF``; the process key is ``globalPid = globalTid & ~0xFFFFFF``.

* ``CUPTI_ACTIVITY_KIND_RUNTIME``: ``eventClass`` 0 → ``cat = cuda_runtime``, 1 →
  ``cuda_driver``; other classes (e.g. 67 "CUDA backtrace" rows of the 2022.2 export, which
  duplicate the runtime calls) are not API calls and are skipped.  ``name`` is the API name
  without nsys's ``_v<N>`` version suffix (``cudaLaunchKernel_v7000`` → ``cudaLaunchKernel``).
* ``NVTX_EVENTS``: push/pop (``eventType`` 59) and start/end (60) ranges become annotations of
  kind ``nvtx``; ``name`` = ``text``, else the registered string ``textId``; ``domain`` = the
  text of the domain-create row (``eventType`` 75) with that ``domainId`` (NaN for the default
  domain 0); ``payload`` = the range's payload values (``docs/nsys.md``).  Marks (34), thread
  names (39) and domain rows are not ranges and are skipped.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import numpy as np
import pandas as pd

from collectors.limits import nested_deeper
from collectors.nsys.schema import NsysDb
from collectors.nsys.strings import MISSING, categorical, lookup

RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"

API_CLASSES = {0: "cuda_runtime", 1: "cuda_driver"}
"""``eventClass`` (ENUM_NSYS_EVENT_CLASS) values that are CUDA API calls → model ``cat``."""

NVTX_PUSH_POP = 59
NVTX_START_END = 60
NVTX_DOMAIN_CREATE = 75
NVTX_RANGE_TYPES = (NVTX_PUSH_POP, NVTX_START_END)

PAYLOAD_COLUMNS = (
    "uint64Value",
    "int64Value",
    "doubleValue",
    "uint32Value",
    "int32Value",
    "floatValue",
    "jsonTextId",
    "jsonText",
)

NCCL_PAYLOAD_KEYS = {
    "NCCL communicator ID": "comm_id",
    "Message size [bytes]": "message_size_bytes",
    "Reduction operation": "reduction_op",
    "Root": "root",
    "Peer rank": "peer",
    "No. of ranks": "n_ranks",
    "Rank": "rank",
    "CUDA device": "cuda_device",
}
"""NCCL's NVTX payload schema entry names → normalized ``payload`` keys (NCCL ≥ 2.16)."""

PID_MASK = 0xFFFFFF
GPID_MASK = ~0xFFFFFF


def split_tid(global_tid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(globalPid, pid, tid)`` arrays from ``globalTid`` (-1 stays -1)."""
    known = global_tid >= 0
    gpid = np.where(known, global_tid & GPID_MASK, -1)
    pid = np.where(known, (global_tid >> 24) & PID_MASK, -1)
    tid = np.where(known, global_tid & PID_MASK, -1)
    return gpid, pid, tid


def _ints(values: list[Any], none: int = -1) -> np.ndarray:
    """int64 array of cells read with :meth:`NsysDb.rows`: integers kept, None → *none*,
    anything else (text, reals, blobs) → -1."""
    return np.array(
        [v if v.__class__ is int else (none if v is None else -1) for v in values], dtype=np.int64
    )


def _as_text(v: Any) -> str:
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)


def read_api_calls(db: NsysDb) -> dict[str, Any]:
    """CUDA runtime and driver API calls with their correlation ids (plus ``_gpid``), as
    column arrays in table order (empty dict when the table is absent)."""
    if not db.has(RUNTIME):
        return {}
    db.require(RUNTIME, ("start", "end", "globalTid", "correlationId", "nameId"))
    classes = ", ".join(str(c) for c in API_CLASSES)
    has_class = "eventClass" in db.columns(RUNTIME)
    cols = db.int_columns(
        RUNTIME,
        {
            "start_ns": "start",
            "end_ns": "end",
            "_gtid": "globalTid",
            "correlation": "correlationId",
            "_name": "nameId",
            "_class": "eventClass",
        },
        where=f"eventClass IN ({classes})" if has_class else None,
    )
    cols = db.valid_times(RUNTIME, cols)
    gpid, pid, tid = split_tid(cols.pop("_gtid"))
    klass = cols.pop("_class")
    names = cols.pop("_name")
    return {
        **cols,
        "pid": pid,
        "tid": tid,
        "_gpid": gpid,
        "name": categorical(db, names, strip_version=True, missing="API call names"),
        "cat": categorical(db, np.where(klass < 0, 0, klass), transform=API_CLASSES),
    }


def read_nvtx_ranges(db: NsysDb) -> pd.DataFrame:
    """NVTX push/pop and start/end ranges (plus ``_gpid``), sorted by start."""
    if not db.has(NVTX):
        return pd.DataFrame()
    db.require(NVTX, ("start", "end", "eventType", "globalTid"))
    have = set(db.columns(NVTX))
    text = "text" if "text" in have else "NULL"
    text_id = "textId" if "textId" in have else "NULL"
    domain = "domainId" if "domainId" in have else "0"
    types = ", ".join(str(t) for t in (*NVTX_RANGE_TYPES, NVTX_DOMAIN_CREATE))
    rows = db.rows(
        f"SELECT rowid, start, end, eventType, globalTid, {text}, {text_id}, {domain} "
        f"FROM {NVTX} WHERE eventType IN ({types})"
    )
    if not rows:
        return pd.DataFrame()
    rowid, start, end, etype, gtid, texts, text_ids, domains = (
        list(c) for c in zip(*rows, strict=True)
    )
    ids = _ints(text_ids)
    strings = lookup(db, ids)
    texts = [t if t is None or isinstance(t, str) else _as_text(t) for t in texts]
    names = [
        t
        if t is not None
        else (strings.get(int(i)) if i < 0 or i in strings else MISSING.format(i))
        for t, i in zip(texts, ids.tolist(), strict=True)
    ]
    etype_a = _ints(etype)
    dom_a = _ints(domains, none=0)
    domain_names = {
        int(d): n
        for d, n, e in zip(dom_a, names, etype_a, strict=True)
        if e == NVTX_DOMAIN_CREATE and n
    }
    is_range = np.isin(etype_a, NVTX_RANGE_TYPES)
    start_a = _ints(start)
    end_a = _ints(end)
    ended = np.array([e is not None for e in end], dtype=bool)  # an open range has no end
    ranges = np.flatnonzero(is_range & ended)
    checked = db.valid_times(
        NVTX, {"start_ns": start_a[ranges], "end_ns": end_a[ranges], "i": ranges}
    )
    keep = np.zeros(len(rows), dtype=bool)
    keep[checked["i"]] = True
    missing = {
        names[i] for i in np.flatnonzero(keep).tolist() if (names[i] or "").startswith("<missing")
    }
    if missing:
        db.missing_strings["NVTX range names"] = len(missing)
    gt = _ints(gtid)[keep]
    gpid, pid, tid = split_tid(gt)
    dom_kept = dom_a[keep]
    df = pd.DataFrame(
        {
            "start_ns": start_a[keep],
            "end_ns": end_a[keep],
            "pid": pid,
            "tid": tid,
            "_gpid": gpid,
            "_rowid": _ints(rowid)[keep],
        }
    )
    df["name"] = pd.Categorical([n for n, k in zip(names, keep, strict=False) if k])
    df["domain"] = pd.Categorical([domain_names.get(int(d)) for d in dom_kept])
    df["kind"] = "nvtx"
    df["payload"] = _payloads(db, df["_rowid"].to_numpy(), df["domain"])
    order = np.argsort(df["start_ns"].to_numpy(), kind="stable")
    return df.iloc[order].drop(columns=["_rowid"]).reset_index(drop=True)


def _payloads(db: NsysDb, rowids: np.ndarray, domains: pd.Series) -> np.ndarray:
    """One dict (or None) per range: raw payload values, parsed JSON, NCCL keys normalized."""
    out = np.full(len(rowids), None, dtype=object)
    cols = [c for c in PAYLOAD_COLUMNS if c in db.columns(NVTX)]
    if not cols or not len(rowids):
        return out
    rows = db.rows(
        f"SELECT rowid, {', '.join(cols)} FROM {NVTX} "
        f"WHERE coalesce({', '.join(cols)}) IS NOT NULL AND eventType IN "
        f"({NVTX_PUSH_POP}, {NVTX_START_END})"
    )
    if not rows:
        return out
    json_ids = _ints(
        [r[1 + cols.index("jsonTextId")] for r in rows] if "jsonTextId" in cols else []
    )
    json_strings = lookup(db, json_ids) if json_ids.size else {}
    pos = {int(r): i for i, r in enumerate(rowids)}
    dom = domains.to_numpy(dtype=object)
    for row in rows:
        i = pos.get(int(row[0]))
        if i is None:
            continue
        raw = {c: v for c, v in zip(cols, row[1:], strict=False) if v is not None}
        out[i] = payload_dict(raw, json_strings, nccl=dom[i] == "NCCL")
    return out


def payload_dict(raw: dict[str, Any], json_strings: dict[int, str], *, nccl: bool) -> dict:
    """Normalize one range's payload columns.

    ``uint64Value`` is re-read as unsigned (SQLite stores 64-bit signed); ``jsonTextId`` is
    resolved through ``StringIds`` into ``jsonText``; JSON text is parsed into ``json``; in the
    NCCL domain the schema entries of :data:`NCCL_PAYLOAD_KEYS` found in the JSON object are
    copied under their normalized keys (``comm_id``, ``message_size_bytes``, ...).
    """
    out: dict[str, Any] = dict(raw)
    if "uint64Value" in out and isinstance(out["uint64Value"], int):
        out["uint64Value"] &= 0xFFFFFFFFFFFFFFFF
    jid = out.pop("jsonTextId", None)
    if jid.__class__ is int and "jsonText" not in out and jid in json_strings:
        out["jsonText"] = json_strings[jid]
    if "jsonText" in out:
        with contextlib.suppress(TypeError, ValueError, RecursionError):
            out["json"] = json.loads(out["jsonText"])
        if "json" in out and nested_deeper(out["json"]):
            del out["json"]  # kept whole: bounded (collectors.limits)
    if nccl and isinstance(out.get("json"), dict):
        for src, key in NCCL_PAYLOAD_KEYS.items():
            if src in out["json"]:
                out[key] = out["json"][src]
    return out


def thread_names(db: NsysDb) -> dict[int, dict[int, str]]:
    """``{globalPid: {tid: thread name}}`` from ``ThreadNames``."""
    if not db.has("ThreadNames") or not {"nameId", "globalTid"} <= set(db.columns("ThreadNames")):
        return {}
    cols = db.int_columns("ThreadNames", {"name": "nameId", "gtid": "globalTid"})
    strings = lookup(db, cols["name"])
    gpid, _, tid = split_tid(cols["gtid"])
    out: dict[int, dict[int, str]] = {}
    for g, t, n in zip(gpid.tolist(), tid.tolist(), cols["name"].tolist(), strict=False):
        if n in strings:
            out.setdefault(g, {})[t] = strings[n]
    return out
