"""Chrome-trace JSON of one or more ranks, to open in Perfetto (https://ui.perfetto.dev).

Built from the trace model (docs/report.md §7).  Layout:

* per rank two processes: ``rank R · host`` (pid 2R+1; host rows and host-side annotations,
  one thread per host tid) and ``rank R · GPU`` (pid 2R+2; one thread per stream, GPU rows and
  GPU-side annotations);
* step markers: each ``ProfilerStep#N`` is a slice on the host process *and* a counter track
  ``step number`` on both processes whose value is N during the step and -1 between steps;
* the trace's own counters (``[memory]``, nsys GPU metrics...) as counter tracks
  ``device D <counter>`` on the GPU process (device ≥ 0) or ``host <counter>``;
* NVML counters of a run directory (``{host: counters table}``): one process per node
  (``NVML <host>``, pid 1,000,000 + i) with one counter track ``gpuD <field>`` per (GPU,
  field) and a ``step number`` track from the sampler's ``step_begin`` marks (Perfetto names a
  counter track after the event's name and its argument's key).  NVML times are on the Unix
  clock; they are placed on the traces' clock by subtracting the first rank's
  ``meta.base_time_ns`` (docs/capture.md §6), or, without it, by matching ``step_begin`` k to
  ``ProfilerStep#k`` (:func:`nvml_offset`).

Times: ``ts``/``dur`` in µs (the format's unit) relative to the earliest event of all ranks
(``metadata.origin_ns``), written with ns precision; ranks keep their own clocks (no skew
correction).  Nothing is decimated: this export is the full-resolution view.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np

from collectors.errors import UsageError
from reports.output import write_atomic

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace

NVML_PID = 1_000_000
NO_STEP = -1
SKIP_NVML_FIELDS = ("step_begin",)


def host_pid(rank: int) -> int:
    return 2 * rank + 1


def gpu_pid(rank: int) -> int:
    return 2 * rank + 2


def _us(ns: Any, origin: int) -> float:
    return (int(ns) - origin) / 1000.0


def _meta(kind: str, pid: int, tid: int | None = None, **args: Any) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "M", "name": kind, "pid": pid, "args": args}
    if tid is not None:
        e["tid"] = tid
    return e


def _origin(traces: Sequence[Trace]) -> int:
    starts = []
    for t in traces:
        for df, col in (
            (t.gpu, "start_ns"),
            (t.host, "start_ns"),
            (t.annotations, "start_ns"),
            (t.counters, "ts_ns"),
        ):
            if len(df):
                starts.append(int(df[col].min()))
    return min(starts) if starts else 0


def _gpu_events(t: Trace, origin: int) -> Iterator[dict[str, Any]]:
    g = t.gpu
    pid = gpu_pid(t.rank)
    cols = {
        c: g[c].to_numpy().tolist()
        for c in ("start_ns", "end_ns", "stream", "correlation", "device", "bytes")
    }
    names = g["name"].astype(object).to_numpy().tolist()
    kinds = g["kind"].astype(object).to_numpy().tolist()
    for i, name in enumerate(names):
        args: dict[str, Any] = {"kind": kinds[i], "device": cols["device"][i]}
        if cols["correlation"][i] >= 0:
            args["correlation"] = cols["correlation"][i]
        if cols["bytes"][i] >= 0:
            args["bytes"] = cols["bytes"][i]
        yield {
            "ph": "X",
            "name": str(name),
            "cat": str(kinds[i]),
            "pid": pid,
            "tid": cols["stream"][i],
            "ts": _us(cols["start_ns"][i], origin),
            "dur": (cols["end_ns"][i] - cols["start_ns"][i]) / 1000.0,
            "args": args,
        }


def _host_events(t: Trace, origin: int) -> Iterator[dict[str, Any]]:
    h = t.host
    pid = host_pid(t.rank)
    starts, ends = h["start_ns"].to_numpy().tolist(), h["end_ns"].to_numpy().tolist()
    tids, corr = h["tid"].to_numpy().tolist(), h["correlation"].to_numpy().tolist()
    cats = h["cat"].astype(object).to_numpy().tolist()
    for i, name in enumerate(h["name"].astype(object).to_numpy().tolist()):
        e = {
            "ph": "X",
            "name": str(name),
            "cat": str(cats[i]),
            "pid": pid,
            "tid": tids[i],
            "ts": _us(starts[i], origin),
            "dur": (ends[i] - starts[i]) / 1000.0,
        }
        if corr[i] >= 0:
            e["args"] = {"correlation": corr[i]}
        yield e


def _annotation_events(t: Trace, origin: int) -> Iterator[dict[str, Any]]:
    a = t.annotations
    r: Any
    for r in a.itertuples(index=False):
        on_gpu = int(r.stream) >= 0
        yield {
            "ph": "X",
            "name": str(r.name),
            "cat": str(r.kind),
            "pid": gpu_pid(t.rank) if on_gpu else host_pid(t.rank),
            "tid": int(r.stream) if on_gpu else int(r.tid),
            "ts": _us(r.start_ns, origin),
            "dur": (int(r.end_ns) - int(r.start_ns)) / 1000.0,
        }


def step_counter(steps: pd.DataFrame) -> list[tuple[int, int]]:
    """(time ns, value) samples of the ``step`` track: N from a step's start, -1 after its end
    unless the next step starts at that very instant."""
    out: list[tuple[int, int]] = []
    rows = list(steps[["step", "start_ns", "end_ns"]].itertuples(index=False, name=None))
    for i, (n, s, e) in enumerate(rows):
        out.append((int(s), int(n)))
        nxt = rows[i + 1][1] if i + 1 < len(rows) else None
        if nxt is None or int(nxt) > int(e):
            out.append((int(e), NO_STEP))
    return out


def _counter(group: str, key: str, pid: int, ts: float, value: float) -> dict[str, Any]:
    """A ``C`` event; Perfetto names its track ``"<group> <key>"``."""
    return {"ph": "C", "name": group, "pid": pid, "ts": ts, "args": {key: value}}


def _counter_events(t: Trace, origin: int) -> Iterator[dict[str, Any]]:
    for ts, v in step_counter(t.steps()):
        for pid in (host_pid(t.rank), gpu_pid(t.rank)):
            yield _counter("step", "number", pid, _us(ts, origin), v)
    c = t.counters
    for (name, device), g in c.groupby(["name", "device"], sort=True, observed=True):
        dev = int(cast(int, device))
        group = f"device {dev}" if dev >= 0 else "host"
        pid = gpu_pid(t.rank) if dev >= 0 else host_pid(t.rank)
        for ts, v in zip(g["ts_ns"].tolist(), g["value"].tolist(), strict=True):
            if np.isfinite(v):
                yield _counter(group, str(name), pid, _us(ts, origin), v)


def nvml_offset(
    traces: Sequence[Trace], nvml: Mapping[str, pd.DataFrame]
) -> tuple[int, str] | None:
    """(ns to add to a Unix time to land on the traces' clock, method) or None.

    ``base_time_ns`` of the first rank that has one; else the lower median over the
    ``step_begin`` marks k of (start of ``ProfilerStep#k`` − mark time), first rank with a
    common step.
    """
    base = next((t.meta.base_time_ns for t in traces if t.meta.base_time_ns is not None), None)
    if base is not None:
        return -int(base), "base_time_ns"
    for t in traces:
        st = t.steps()
        steps = dict(zip(st["step"].tolist(), st["start_ns"].tolist(), strict=True))
        diffs = []
        for df in nvml.values():
            marks = df[df["name"] == "step_begin"]
            diffs += [
                int(steps[int(v)]) - int(ts)
                for ts, v in zip(marks["ts_ns"].tolist(), marks["value"].tolist(), strict=True)
                if int(v) in steps
            ]
        if diffs:
            return sorted(diffs)[(len(diffs) - 1) // 2], "steps"
    return None


def _nvml_events(
    nvml: Mapping[str, pd.DataFrame], shift: int, origin: int
) -> Iterator[dict[str, Any]]:
    for i, host in enumerate(sorted(nvml)):
        pid = NVML_PID + i
        yield _meta("process_name", pid, name=f"NVML {host}")
        yield _meta("process_sort_index", pid, sort_index=pid)
        df = nvml[host]
        for (name, dev), g in df.groupby(["name", "device"], sort=True, observed=True):
            group, key = ("step", "number") if name == "step_begin" else (f"gpu{dev}", str(name))
            for ts, v in zip(g["ts_ns"].tolist(), g["value"].tolist(), strict=True):
                if np.isfinite(v):
                    yield _counter(group, key, pid, _us(ts + shift, origin), v)


def chrome_trace(
    traces: Sequence[Trace], nvml: Mapping[str, pd.DataFrame] | None = None
) -> dict[str, Any]:
    """The Chrome-trace document (``traceEvents``, ``displayTimeUnit``, ``metadata``)."""
    if not traces:
        raise UsageError("nothing to export: no trace was loaded")
    origin = _origin(traces)
    events: list[dict[str, Any]] = []
    notes: list[str] = []
    for t in traces:
        hp, gp = host_pid(t.rank), gpu_pid(t.rank)
        host = f" ({t.meta.hostname})" if t.meta.hostname else ""
        dev = t.gpu_device
        events += [
            _meta("process_name", hp, name=f"rank {t.rank} · host{host}"),
            _meta("process_sort_index", hp, sort_index=hp),
            _meta(
                "process_name",
                gp,
                name=f"rank {t.rank} · GPU"
                + (f" {dev.id} {dev.name or ''}".rstrip() if dev else ""),
            ),
            _meta("process_sort_index", gp, sort_index=gp),
        ]
        for s in sorted({int(x) for x in t.gpu["stream"].tolist()}):
            events.append(_meta("thread_name", gp, s, name=f"stream {s}"))
        events += _gpu_events(t, origin)
        events += _host_events(t, origin)
        events += _annotation_events(t, origin)
        events += _counter_events(t, origin)
    method = None
    if nvml:
        off = nvml_offset(traces, nvml)
        if off is None:
            notes.append("NVML counters left out: no base time and no common step to align them")
        else:
            method = off[1]
            events += _nvml_events(nvml, off[0], origin)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "metadata": {
            "tool": "gpuscope",
            "origin_ns": origin,
            "ranks": [t.rank for t in traces],
            "sources": [t.meta.source_path for t in traces],
            "nvml_alignment": method,
            "notes": notes,
        },
    }


def write_perfetto(
    traces: Sequence[Trace],
    path: str | Path,
    nvml: Mapping[str, pd.DataFrame] | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write :func:`chrome_trace` as JSON to *path* atomically
    (:func:`reports.output.write_atomic`; streamed, not built as one string).

    Raises:
        UsageError: nothing to export, or *path* exists without *force*, or cannot be written.
    """
    doc = chrome_trace(traces, nvml)

    def dump(f: BinaryIO) -> None:
        text = io.TextIOWrapper(f, encoding="utf-8")
        json.dump(doc, text, separators=(",", ":"), allow_nan=False)
        text.flush()
        text.detach()

    return write_atomic(path, dump, force=force, what="Perfetto trace")
