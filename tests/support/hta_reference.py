"""Raw-file facts that HTA's critical-path output is keyed by, for comparing with it.

HTA numbers events by their position in ``traceEvents``; :func:`raw_events` reads the raw file
(test side only, with the stdlib ``json`` module) so that a test can name an event by that
position and check the trace model's ``event_index`` against it.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from collectors.model import Trace
from tests.support.raw_kineto import trace_events


def raw_events(path: Path) -> list[dict[str, Any]]:
    return trace_events(path)


def _ns(x: Any) -> int:
    if isinstance(x, int):
        return x * 1000
    return int((Decimal(repr(x)) * 1000).to_integral_value())


def with_raw_fields(trace: Trace, path: Path) -> Trace:
    """*trace* with ``event_index`` / ``wait_on_*`` columns taken from the raw file *path*."""
    raw = raw_events(path)
    slots: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, e in enumerate(raw):
        if e.get("ph") != "X" or "dur" not in e:
            continue
        s = _ns(e["ts"])
        slots[(s, s + _ns(e["dur"]), e.get("name"), e.get("pid"), e.get("tid"))].append(i)

    def match(starts: Any, ends: Any, names: Any, pids: Any, tids: Any) -> np.ndarray:
        out = np.full(len(starts), -1, dtype=np.int64)
        used: dict[tuple[Any, ...], int] = defaultdict(int)
        for k, key in enumerate(zip(starts, ends, names, pids, tids, strict=True)):
            cand = slots.get(key, [])
            j = used[key]
            if j < len(cand):
                out[k] = cand[j]
                used[key] = j + 1
        return out

    h, g = trace.host.copy(), trace.gpu.copy()
    h["event_index"] = match(
        h["start_ns"], h["end_ns"], h["name"].astype(object), h["pid"], h["tid"]
    )
    g_tid = [s if s >= 0 else -1 for s in g["stream"]]
    g["event_index"] = match(
        g["start_ns"], g["end_ns"], g["name"].astype(object), g["device"], g_tid
    )
    wos, woc = [], []
    for i in g["event_index"]:
        a = raw[i].get("args", {}) if i >= 0 else {}
        wos.append(int(a.get("wait_on_stream", -1)))
        woc.append(int(a.get("wait_on_cuda_event_record_corr_id", -1)))
    g["wait_on_stream"] = np.asarray(wos, dtype=np.int64)
    g["wait_on_event_correlation"] = np.asarray(woc, dtype=np.int64)
    return Trace(trace.meta, g, h, trace.annotations, trace.counters)
