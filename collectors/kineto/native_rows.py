"""The rows stage for chunks the native scanner read (:class:`.native.NativeChunk`).

:func:`add_native` is :meth:`collectors.kineto.rows.Rows.add` for a native chunk: the same
rejections, the same ``gpu`` / ``host`` / ``gpu_user`` parts (same keys, dtypes and values) and the
same metadata, built from the scanner's columns with numpy instead of from one Struct per event.
Each step names the msgspec-path function whose rule it applies; the two paths are compared on
every shared trace and on generated JSON (``tests/collectors/kineto/test_kineto_native.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from collectors.kinds import GPU_KINDS
from collectors.kineto.columns import NAME_NOT_TEXT, OK, OUT_OF_RANGE, comm_at, copy_kinds
from collectors.kineto.decode import COMM_KEYS, COMM_MARKER_KEYS, MEvent
from collectors.kineto.native import NativeChunk
from collectors.limits import MAX_NESTING, TIME_LIMIT_NS, nested_deeper

if TYPE_CHECKING:
    from collectors.kineto.rows import Rows

_MEMCPY = GPU_KINDS.index("memcpy")
_SYNC = GPU_KINDS.index("sync")
_MARKER_KEYS = frozenset(COMM_KEYS.index(k) for k in COMM_MARKER_KEYS)

Part = dict[str, Any]


def add_native(rows: Rows, chunk: NativeChunk, index: int) -> None:
    """Add the rows of chunk number *index*, read natively, to *rows* (as ``Rows.add``)."""
    rows.index = index
    rows.chunks += 1
    rows.event_counts[index] = chunk.n_events
    if chunk.metas:  # Rows._add_metas: the last event per key, keys in order of first appearance
        last = {
            (n, pid, tid): MEvent(name=n, pid=pid, tid=tid, args=msgspec.Raw(a))
            for n, pid, tid, a in chunk.metas
        }
        rows.metas.append((index, last))
    if len(chunk.cols["mem_ts"]):
        _add_memory(rows, chunk)
    if len(chunk):
        rows.n_candidates += len(chunk)
        _add_activities(rows, chunk)
    if chunk.top is not None:
        rows.top = chunk.top


_MEMORY_LABELS = np.array(["Total Allocated", "Total Reserved"], dtype=object)


def _add_memory(rows: Rows, chunk: NativeChunk) -> None:
    """Rows._add_counters for the ``[memory]`` samples (columns.counter_rows)."""
    c = chunk.cols
    ts, bad = c["mem_ts"], c["mem_ts_bad"]
    rows.n_samples += len(ts)
    label, value, device = c["mem_label"], c["mem_value"], c["mem_device"]
    if bad.any():
        rows.rejected.add("counter samples", bad)
        keep = np.flatnonzero(bad == OK)
        if not len(keep):
            return
        ts, label, value, device = ts[keep], label[keep], value[keep], device[keep]
    names = _MEMORY_LABELS[label].tolist()
    rows.memory.append((rows.index, (names, ts, value.tolist(), device.tolist())))


class _Columns:
    """The kept activity rows' columns (Rows._add_activities / columns.Activities)."""

    def __init__(self, chunk: NativeChunk, keep: np.ndarray | None) -> None:
        self.chunk = chunk
        self.keep = keep

    def __getitem__(self, key: str) -> np.ndarray:
        col = self.chunk.cols[key]
        return col if self.keep is None else col[self.keep]


def _add_activities(rows: Rows, chunk: NativeChunk) -> None:
    """Rows._add_activities: reject unusable times and names, then split the rows into parts."""
    c = chunk.cols
    start, bad = c["ts"], c["ts_bad"]
    end = start + c["dur"]
    bad = np.where(bad > 0, bad, np.where(end > TIME_LIMIT_NS, OUT_OF_RANGE, c["dur_bad"]))
    not_text = c["name"] < 0
    if not_text.any():
        bad = np.where((bad == OK) & not_text, NAME_NOT_TEXT, bad)
    keep: np.ndarray | None = None
    if bad.any():
        rows.rejected.add("activity events", bad.astype(np.uint8))
        keep = np.flatnonzero(bad == OK)
        if not len(keep):
            return
        start, end = start[keep], end[keep]
    cols = _Columns(chunk, keep)
    n = len(start)
    rows.n_acts += n
    cat = _mapped(rows.cats, chunk.cats, cols["cat"], rows)
    flags = rows._cat_flags()
    stream = cols["stream"]
    is_gpu = ((stream != -1) & ~flags["host"][cat]) | flags["sync"][cat]
    is_gpu_user = flags["gpu_user"][cat] & ~is_gpu
    is_host = ~is_gpu & ~is_gpu_user
    if not rows.include_python:
        is_host &= ~flags["python"][cat]
    name = _mapped(rows.names, chunk.names, cols["name"], rows)
    comms = _comms(chunk, keep, n)
    deep = [i for i, d in comms.items() if nested_deeper(d)]
    for i in deep:  # kept whole: bounded, so that no later stage runs out of stack
        del comms[i]
        rows.rejected.count("collective metadata", f"nested deeper than {MAX_NESTING} levels")
    ext = cols["external_id"]
    if (ext == -1).any():  # columns.external_ids: 2022 traces spell it "external id"
        ext = np.where(ext == -1, cols["external_id_2022"], ext)
    acts = _Acts(cols, name, cat, start, end, stream, ext, comms)
    if is_gpu.any():
        rows.gpu.append((rows.index, _gpu_part(rows, acts, np.flatnonzero(is_gpu))))
    if is_host.any():
        rows.host.append((rows.index, _host_part(rows, acts, np.flatnonzero(is_host))))
    if is_gpu_user.any():
        rows.gpu_user.append((rows.index, _gpu_user_part(acts, np.flatnonzero(is_gpu_user))))


def _mapped(table: dict[str, int], strings: list[str], ids: np.ndarray, rows: Rows) -> np.ndarray:
    """The file-wide ids (Rows._ids, in *table*) of the chunk's string *ids*; only the strings
    the rows use join the table (as on the msgspec path)."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    used = np.flatnonzero(np.bincount(ids[ids >= 0], minlength=len(strings)))
    lookup = np.full(len(strings) + 1, -1, dtype=np.int64)  # the last entry: -1 stays -1
    lookup[used] = rows._ids(table, [strings[i] for i in used.tolist()])
    return lookup[ids]


class _Acts:
    """The kept rows' columns every part takes from (columns.Activities)."""

    def __init__(
        self,
        cols: _Columns,
        name: np.ndarray,
        cat: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        stream: np.ndarray,
        external_id: np.ndarray,
        comms: dict[int, dict[str, Any]],
    ) -> None:
        self.cols = cols
        self.name = name
        self.cat = cat
        self.start = start
        self.end = end
        self.stream = stream
        self.external_id = external_id
        self.comms = comms

    def comm(self, idx: np.ndarray) -> list[dict[str, Any] | None]:
        """``comm_args`` of the rows at *idx* (sorted positions; columns.Activities.comm)."""
        return comm_at(self.comms, idx)


def _comms(chunk: NativeChunk, keep: np.ndarray | None, n: int) -> dict[int, dict[str, Any]]:
    """``{kept row: comm dict}`` (decode.comm_args): rows whose args text holds a marker key get
    the :data:`~collectors.kineto.decode.COMM_KEYS` at the top level of their args, decoded, in
    that order (a repeated key: its last value)."""
    hit = chunk.cols["comm_hit"]
    if not hit.any():
        return {}
    rows_hit = np.flatnonzero(hit)
    at = rows_hit if keep is None else np.searchsorted(keep, rows_hit)
    kept: dict[int, int] = {}  # candidate -> kept row
    for cand, j in zip(rows_hit.tolist(), at.tolist(), strict=True):
        if j < n and (keep is None or keep[j] == cand):
            kept[cand] = j
    raws: dict[int, dict[int, bytes]] = {cand: {} for cand in kept}
    for cand, key, raw in chunk.comms:
        if cand in raws:
            raws[cand][key] = raw
    out: dict[int, dict[str, Any]] = {}
    for cand, j in kept.items():
        values = raws[cand]
        out[j] = {COMM_KEYS[k]: msgspec.json.decode(values[k]) for k in sorted(values)}
    return out


def _counts(col: np.ndarray) -> np.ndarray:
    """columns.counts: negative → -1."""
    return np.where(col < 0, -1, col)


def _floats(col: np.ndarray, high: float = np.inf) -> np.ndarray:
    """columns.floats: numbers in [0, *high*] kept, anything else NaN."""
    return np.where((col >= 0) & (col <= high), col, np.nan)


def _gpu_part(rows: Rows, acts: _Acts, idx: np.ndarray) -> Part:
    """Rows._gpu_part."""
    c = acts.cols
    name = acts.name[idx]
    kind = rows._cat_flags()["kind"][acts.cat[idx]] if len(idx) else np.zeros(0, np.int64)
    is_sync = kind == _SYNC
    return {
        "name": name,
        "kind": kind,
        "start_ns": acts.start[idx],
        "end_ns": acts.end[idx],
        "device": _counts(c["device"][idx]),
        "stream": acts.stream[idx],
        "correlation": c["correlation"][idx],
        "external_id": acts.external_id[idx],
        "grid_x": c["grid_x"][idx],
        "grid_y": c["grid_y"][idx],
        "grid_z": c["grid_z"][idx],
        "block_x": c["block_x"][idx],
        "block_y": c["block_y"][idx],
        "block_z": c["block_z"][idx],
        "registers_per_thread": _counts(c["registers"][idx]),
        "shared_mem_bytes": _counts(c["shared_memory"][idx]),
        "bytes": _counts(c["bytes"][idx]),
        "copy_kind": _copy_kinds(rows, acts, name, kind, idx),
        "est_achieved_occupancy": _floats(c["occupancy"][idx], high=100.0),
        "blocks_per_sm": _floats(c["blocks_per_sm"][idx]),
        "warps_per_sm": _floats(c["warps_per_sm"][idx]),
        "comm_args": acts.comm(idx),
        "wait_on_stream": np.where(is_sync, c["wait_on_stream"][idx], -1),
        "wait_on_event_correlation": np.where(is_sync, c["wait_on_event"][idx], -1),
        "event_index": c["event_index"][idx],
    }


def _copy_kinds(
    rows: Rows, acts: _Acts, name: np.ndarray, kind: np.ndarray, idx: np.ndarray
) -> list[str | None]:
    """Rows._copy_kinds: the direction from the name, else from ``args.kind``."""
    memcpy = np.flatnonzero(kind == _MEMCPY).tolist()
    kinds = acts.cols["kind"][idx]
    words = acts.cols.chunk.kinds
    arg = [words[k] if k >= 0 else None for k in kinds[memcpy].tolist()]
    return copy_kinds(name, memcpy, arg, rows.copy_kind_of_name, rows.names)


def _host_part(rows: Rows, acts: _Acts, idx: np.ndarray) -> Part:
    """Rows._host_part."""
    c = acts.cols
    launch = rows._cat_flags()["launch"][acts.cat[idx]]
    kernel = c["kernel"][idx]
    has = launch & (kernel >= 0)
    launch_kernel = np.full(len(idx), -1, dtype=np.int64)
    if has.any():
        launch_kernel[has] = _mapped(rows.names, acts.cols.chunk.names, kernel[has], rows)
    return {
        "name": acts.name[idx],
        "cat": acts.cat[idx],
        "start_ns": acts.start[idx],
        "end_ns": acts.end[idx],
        "pid": c["pid"][idx],
        "tid": c["tid"][idx],
        "correlation": c["correlation"][idx],
        "external_id": acts.external_id[idx],
        "input_dims": _compact(rows, acts, c["input_dims"][idx]),
        "input_types": _compact(rows, acts, c["input_types"][idx]),
        "concrete_inputs": _compact(rows, acts, c["concrete_inputs"][idx]),
        "input_strides": _compact(rows, acts, c["input_strides"][idx]),
        "comm_args": acts.comm(idx),
        "launch_kernel": launch_kernel,
        "event_index": c["event_index"][idx],
    }


def _compact(rows: Rows, acts: _Acts, ids: np.ndarray) -> np.ndarray:
    """Rows._compact: the compact JSON text of each row's raw value (None where absent), as an
    object array, memoised in ``rows.compact`` by raw text; only the texts these rows use are
    decoded."""
    raws = acts.cols.chunk.raws
    memo = rows.compact
    table: list[str | None] = [None] * (len(raws) + 1)  # the last entry: absent
    for i in np.flatnonzero(np.bincount(ids[ids >= 0], minlength=len(raws))).tolist():
        k = raws[i]
        if k not in memo:
            memo[k] = msgspec.json.encode(msgspec.json.decode(k)).decode()
        table[i] = memo[k]
    return np.array(table, dtype=object)[ids]


def _gpu_user_part(acts: _Acts, idx: np.ndarray) -> Part:
    """columns.gpu_user_part: the stream, else the thread."""
    tid = acts.cols["tid"][idx]
    stream = acts.stream[idx]
    return {
        "name": acts.name[idx],
        "start_ns": acts.start[idx],
        "end_ns": acts.end[idx],
        "pid": acts.cols["pid"][idx],
        "tid": tid,
        "stream": np.where(stream != -1, stream, tid),
    }
