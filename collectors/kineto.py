"""Kineto / PyTorch-profiler trace reader: ``*.json`` / ``*.json.gz`` → one :class:`Trace` per rank.

The mapping is HTA-compatible (reference/metrics.md §1–2) and documented in full in
``docs/kineto-reader.md``.  In short:

* activity rows are the ``ph == "X"`` events that have ``dur`` and ``cat`` and ``cat != "Trace"``;
* a row whose ``args.stream`` is an integer is a device activity (``gpu`` table), unless its
  ``cat`` is a host category (Inductor's launcher ``cpu_op`` records the stream it launches on);
  ``cuda_sync`` rows without a stream (Event/Context Sync) are ``gpu`` rows on stream -1;
* ``gpu_user_annotation`` rows go to ``annotations`` (kind ``gpu_user``);
* every other row goes to ``host`` (``python_function`` only with ``include_python=True``);
  ``ProfilerStep#N`` rows are also ``step`` annotations, other ``user_annotation`` rows ``user``;
* times are exact integer nanoseconds (:func:`collectors.kineto_decode.us_to_ns`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.kineto_decode import (
    COMM_FIELDS,
    COMM_KEYS,
    I_TYPES,
    CEvent,
    InexactTimes,
    KinetoFile,
    MetaArgs,
    MEvent,
    XEvent,
    comm_scan,
    decimal_us_to_ns,
    decode_args,
    has_comm_marker,
    us_to_ns,
)
from collectors.kineto_stream import META_NAMES, Chunk, Fallback, stream_chunks, whole_chunks
from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace

ProgressFn = Callable[[int, int, str], None]

HOST_CATS = frozenset(
    {
        "cpu_op",
        "user_annotation",
        "python_function",
        "cuda_runtime",
        "cuda_driver",
        "Runtime",
        "Operator",
        "mtia_runtime",
        "cpu_instant_event",
    }
)
"""Categories that are host-side even when their ``args`` name a stream."""

GPU_KIND_BY_CAT = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_sync": "sync",
}
"""``gpu.kind`` by Kineto category; any other category with a stream is ``other``."""

STEP_RE = re.compile(r"^ProfilerStep#(\d+)")
COPY_KIND_RE = re.compile(r"^(?:hip)?Memcpy\s*(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)")
COPY_KINDS = frozenset({"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD", "AtoH", "HtoA"})

RANK_NAME_RES = (
    re.compile(r"(?:^|[^A-Za-z])rank[-_]?(\d+)", re.IGNORECASE),
    re.compile(r"\.(\d{1,5})\.json(?:\.gz)?$", re.IGNORECASE),
)
"""Rank from a file name: ``rank-3``, ``rank_3``, ``rank3`` (any case, anywhere in the name,
``rank`` not preceded by a letter), else ``NAME.3.json[.gz]`` (1–5 digits right before
``.json``, so that PIDs and timestamps elsewhere in torch's default names never match)."""


# --------------------------------------------------------------------------------------------
# public API


def read_kineto_files(paths: Sequence[Path], *, progress: ProgressFn | None = None) -> list[Trace]:
    """Read per-rank Kineto files; one Trace per file, sorted by rank.

    The rank of each file comes from ``distributedInfo.rank``, else from its name
    (:data:`RANK_NAME_RES`), else 0.  ``progress(done, total, label)`` is called after each file.

    Raises:
        InputError: a file is unreadable or not a trace, or two files claim the same rank.
    """
    unique: list[Path] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    traces: list[Trace] = []
    owner: dict[int, Trace] = {}
    for i, p in enumerate(unique):
        trace = read_kineto(p)
        other = owner.get(trace.rank)
        if other is not None:
            raise InputError(
                f"claims rank {trace.rank} ({trace.meta.rank_source}), as does "
                f"{other.meta.source_path} ({other.meta.rank_source}); pass one file per rank "
                "or name the files rank-N",
                path=p,
            )
        owner[trace.rank] = trace
        traces.append(trace)
        if progress is not None:
            progress(i + 1, len(unique), p.name)
    return sorted(traces, key=lambda t: t.rank)


def read_kineto(
    path: str | Path, *, rank: int | None = None, include_python: bool = False
) -> Trace:
    """Read one Kineto trace file (``.json`` or gzip-compressed) into a :class:`Trace`.

    *rank* overrides the rank found in the file; ``python_function`` events are skipped
    unless *include_python*.

    Raises:
        InputError: missing file, corrupt gzip, invalid JSON, not a Kineto trace, no events.
    """
    path = Path(path)
    try:
        return _read(stream_chunks(path), path, rank, include_python, streaming=True)
    except Fallback:
        return _read(whole_chunks(path), path, rank, include_python, streaming=False)


def rank_from_filename(name: str) -> int | None:
    """The rank encoded in a file name (:data:`RANK_NAME_RES`), or None."""
    for rx in RANK_NAME_RES:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------------------------
# building the tables


def _skip(_: Any) -> None:
    pass


_KINDS = ("kernel", "memcpy", "memset", "sync", "other")
_MEMCPY = _KINDS.index("memcpy")


def _read(
    chunks: Iterator[Chunk], path: Path, rank: int | None, include_python: bool, *, streaming: bool
) -> Trace:
    """Tables from *chunks*; when *streaming*, an InputError means: read the file whole."""
    tables = _Tables(path, include_python)
    top: KinetoFile | None = None
    try:
        for chunk in chunks:
            tables.add(chunk)
            if chunk.top is not None:
                top = chunk.top
            del chunk  # not alive while the next one decodes
    except InputError:
        if streaming:
            raise Fallback from None
        raise
    assert top is not None
    return tables.finish(top, rank)


class _Tables:
    """The rows of every table, gathered chunk by chunk as numpy columns.

    Names and categories are kept as ids into one table per file (:attr:`names`,
    :attr:`cats`); each table's categoricals are built at the end, categories in order of first
    appearance in that table.
    """

    def __init__(self, path: Path, include_python: bool) -> None:
        self.path = path
        self.include_python = include_python
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self._flags: dict[str, np.ndarray] = {}
        self.gpu: list[dict[str, Any]] = []
        self.host: list[dict[str, Any]] = []
        self.gpu_user: list[dict[str, Any]] = []
        self.counters: list[tuple[list[str], np.ndarray, list[float], list[int]]] = []
        self.memory: list[tuple[list[str], np.ndarray, list[float], list[int]]] = []
        self.metas: dict[Any, MEvent] = {}
        self.compact: dict[bytes, str | None] = {b"": None}
        self.copy_kind_of_name: dict[int, str | None] = {}
        self.n_acts = 0

    # -- per chunk

    def add(self, chunk: Chunk) -> None:
        """Add one chunk's rows (activity rows, counters, metadata)."""
        xs: list[XEvent] = []
        metas: list[MEvent] = []
        others: list[Any] = []
        put = {chunk.xcls: xs.append, MEvent: metas.append, CEvent: others.append}
        put.update(dict.fromkeys(I_TYPES, others.append))
        skip = _skip
        for e in chunk.events:  # one pass (three list comprehensions cost three times more)
            put.get(e.__class__, skip)(e)
        if metas:
            self._add_metas(metas)
        others = [e for e in others if e.ts is not None]
        if others:
            self._add_counters(others, chunk)
        # activity rows (HTA): ph "X" with dur and cat, cat != "Trace"
        acts = [
            e
            for e in xs
            if e.dur is not None
            and e.ts is not None
            and e.cat.__class__ is str
            and e.cat != "Trace"
        ]
        if acts:
            self.n_acts += len(acts)
            self._add_activities(acts, chunk)

    def _add_metas(self, metas: list[MEvent]) -> None:
        """Last event per (name, pid, tid), keys in order of first appearance; their ``args``
        copied out of the chunk's text."""
        try:
            last = {(e.name, e.pid, e.tid): e for e in metas}
        except TypeError:  # an unhashable name/pid/tid: skip that event
            last = {}
            for e in metas:
                with contextlib.suppress(TypeError):
                    last[e.name, e.pid, e.tid] = e
        for e in last.values():
            e.args = msgspec.Raw(bytes(e.args))
        self.metas.update(last)

    def _ns(self, rows: list[Any], field: str, chunk: Chunk, *, acts: bool = False) -> np.ndarray:
        """Exact ns of *rows*' ``ts``/``dur`` (*acts*: the chunk's activity rows); re-read as
        decimals when floats are too large."""
        values = [e.ts for e in rows] if field == "ts" else [e.dur for e in rows]
        try:
            return us_to_ns(values, self.path, field)
        except InexactTimes:
            col = None
            if acts:
                ts, dur = chunk.exact_activity_times()
                col = ts if field == "ts" else dur
            if col is None or len(col) != len(rows):
                every = chunk.exact_times()
                col = [getattr(every[i], field) for i in chunk.positions(rows)]
            return decimal_us_to_ns(col)

    @staticmethod
    def _ids(table: dict[str, int], values: list[Any]) -> np.ndarray:
        """Ids of *values* in *table*, new strings added (non-strings count as ``""``)."""
        add = table.setdefault
        try:
            ids = np.fromiter(map(table.get, values, repeat(-1)), np.int64, len(values))
        except TypeError:  # an unhashable value: one by one
            keys = [v if v.__class__ is str else "" for v in values]
            return np.array([add(k, len(table)) for k in keys], dtype=np.int64)
        new = np.flatnonzero(ids < 0).tolist()
        if new:
            keys = [v if v.__class__ is str else "" for v in map(values.__getitem__, new)]
            for k in dict.fromkeys(keys):
                add(k, len(table))
            ids[new] = list(map(table.__getitem__, keys))
        return ids

    def _cat_flags(self) -> dict[str, np.ndarray]:
        """Per category id: host category, cuda_sync, gpu_user_annotation, python_function,
        and the ``gpu.kind`` index."""
        if len(self._flags.get("kind", ())) != len(self.cats):
            cats = list(self.cats)
            self._flags = {
                "host": np.array([c in HOST_CATS for c in cats], dtype=bool),
                "sync": np.array([c == "cuda_sync" for c in cats], dtype=bool),
                "gpu_user": np.array([c == "gpu_user_annotation" for c in cats], dtype=bool),
                "python": np.array([c == "python_function" for c in cats], dtype=bool),
                "kind": np.array(
                    [_KINDS.index(GPU_KIND_BY_CAT.get(c, "other")) for c in cats], np.int64
                ),
            }
        return self._flags

    def _add_activities(self, acts: list[XEvent], chunk: Chunk) -> None:
        """Split the chunk's activity rows into ``gpu``, ``host`` and ``gpu_user`` rows."""
        start = self._ns(acts, "ts", chunk, acts=True)
        end = start + self._ns(acts, "dur", chunk, acts=True)
        args = [e.args for e in acts]
        cat = self._ids(self.cats, [e.cat for e in acts])
        flags = self._cat_flags()
        stream = _ints([a.stream for a in args])
        is_gpu = ((stream != -1) & ~flags["host"][cat]) | flags["sync"][cat]
        is_gpu_user = flags["gpu_user"][cat] & ~is_gpu
        is_host = ~is_gpu & ~is_gpu_user
        if not self.include_python:
            is_host &= ~flags["python"][cat]
        name = self._ids(self.names, [e.name for e in acts])
        comms = self._comms(acts, args, chunk)
        cols = _Activities(acts, args, name, cat, start, end, stream, comms)
        if is_gpu.any():
            self.gpu.append(self._gpu_part(cols, np.flatnonzero(is_gpu)))
        if is_host.any():
            self.host.append(self._host_part(cols, np.flatnonzero(is_host)))
        if is_gpu_user.any():
            self.gpu_user.append(_gpu_user_part(cols, np.flatnonzero(is_gpu_user)))

    def _comms(
        self, acts: list[XEvent], args: list[Any], chunk: Chunk
    ) -> dict[int, dict[str, Any]]:
        """``{row: comm dict}`` of the chunk's activity rows (see :func:`comm_args`)."""
        known = chunk.comms
        if known is None:
            # the XArgsComm fields, when they account for every COMM_SCAN text in the chunk: then
            # no marker key hides in a string or a nested object of an activity's args (without
            # a backslash in the text, each such field is one COMM_SCAN text: no \u escapes)
            some, found = comm_scan(args)
            assert chunk.text is not None
            if found == chunk.markers and b"\\" not in chunk.text:
                return {
                    i: {
                        k: msgspec.json.decode(raw)
                        for k, f in zip(COMM_KEYS, COMM_FIELDS, strict=True)
                        if (raw := getattr(args[i], f))
                    }
                    for i in some
                    if has_comm_marker(args[i])
                }
            known = chunk.generic_comms()
        if not known:
            return {}
        return {i: known[p] for i, p in enumerate(chunk.positions(acts)) if p in known}

    def _gpu_part(self, cols: _Activities, idx: np.ndarray) -> dict[str, Any]:
        rows, a = cols.rows(idx)
        name = cols.name[idx]
        kind = self._cat_flags()["kind"][cols.cat[idx]] if len(idx) else np.zeros(0, np.int64)
        grid = _triples([g.grid for g in a])
        block = _triples([g.block for g in a])
        return {
            "name": name,
            "kind": kind,
            "start_ns": cols.start[idx],
            "end_ns": cols.end[idx],
            "device": _ints(
                [g.device if g.device is not None else e.pid for g, e in zip(a, rows, strict=True)]
            ),
            "stream": cols.stream[idx],
            "correlation": cols.correlation[idx],
            "external_id": cols.external_id[idx],
            "grid_x": grid[0],
            "grid_y": grid[1],
            "grid_z": grid[2],
            "block_x": block[0],
            "block_y": block[1],
            "block_z": block[2],
            "registers_per_thread": _ints([g.registers for g in a]),
            "shared_mem_bytes": _ints([g.shared_memory for g in a]),
            "bytes": _ints([g.bytes for g in a]),
            "copy_kind": self._copy_kinds(name, kind, a),
            "est_achieved_occupancy": _floats([g.occupancy for g in a]),
            "blocks_per_sm": _floats([g.blocks_per_sm for g in a]),
            "warps_per_sm": _floats([g.warps_per_sm for g in a]),
            "comm_args": cols.comm(idx),
        }

    def _copy_kinds(self, name: np.ndarray, kind: np.ndarray, a: list[Any]) -> list[str | None]:
        """Memcpy direction from the name (``Memcpy HtoD (Pinned -> Device)`` → ``HtoD``), else
        from ``args.kind`` (ROCm writes ``"HtoD"`` there); None for non-memcpy rows."""
        out: list[str | None] = [None] * len(name)
        by_name = self.copy_kind_of_name
        strings: list[str] | None = None
        for i in np.flatnonzero(kind == _MEMCPY).tolist():
            n = int(name[i])
            if n not in by_name:
                strings = strings or list(self.names)
                m = COPY_KIND_RE.match(strings[n])
                by_name[n] = m.group(1) if m else None
            ck = by_name[n]
            k = a[i].kind
            if ck is None and k.__class__ is str and k in COPY_KINDS:
                ck = k
            out[i] = ck
        return out

    def _host_part(self, cols: _Activities, idx: np.ndarray) -> dict[str, Any]:
        a = cols.args_at(idx)
        return {
            "name": cols.name[idx],
            "cat": cols.cat[idx],
            "start_ns": cols.start[idx],
            "end_ns": cols.end[idx],
            "pid": cols.pid[idx],
            "tid": cols.tid[idx],
            "correlation": cols.correlation[idx],
            "external_id": cols.external_id[idx],
            "input_dims": self._compact([x.input_dims for x in a]),
            "input_types": self._compact([x.input_types for x in a]),
            "comm_args": cols.comm(idx),
        }

    def _compact(self, raws: list[msgspec.Raw]) -> list[str | None]:
        """Compact JSON text of undecoded values (``[[2048, 2048]]`` → ``[[2048,2048]]``)."""
        keys = b"\0".join(raws).split(b"\0") if raws else []  # JSON text holds no NUL byte
        memo = self.compact
        for k in set(keys).difference(memo):
            memo[k] = msgspec.json.encode(msgspec.json.decode(k)).decode()
        return list(map(memo.__getitem__, keys))

    def _add_counters(self, others: list[Any], chunk: Chunk) -> None:
        """``ph == "C"`` counter series and the ``[memory]`` instant events of ``profile_memory``.

        A ``C`` event yields one row per numeric ``args`` entry, named after the event when it
        has one entry and ``"<event>.<key>"`` otherwise (device -1).  A ``[memory]`` event yields
        ``Total Allocated`` and ``Total Reserved`` rows on its ``Device Id`` (-1 = CPU).
        """
        names: list[str] = []
        at: list[Any] = []
        values: list[float] = []
        devices: list[int] = []
        for e in others:
            if e.__class__ is not CEvent or not isinstance(e.args, dict):
                continue
            nums = {k: v for k, v in e.args.items() if v.__class__ in (int, float)}
            base = e.name if e.name.__class__ is str else "counter"
            for k, v in nums.items():
                names.append(base if len(nums) == 1 else f"{base}.{k}")
                at.append(e)
                values.append(float(v))
                devices.append(-1)
        if names:
            self.counters.append((names, self._ns(at, "ts", chunk), values, devices))
        names, at, values, devices = [], [], [], []
        for e in others:
            if e.__class__ not in I_TYPES or e.name != "[memory]":
                continue
            m = e.args
            dev = m.device_id if m.device_id.__class__ is int else -1
            for label, v in (
                ("Total Allocated", m.total_allocated),
                ("Total Reserved", m.total_reserved),
            ):
                if v.__class__ in (int, float):
                    names.append(label)
                    at.append(e)
                    values.append(float(v))
                    devices.append(dev)
        if names:
            self.memory.append((names, self._ns(at, "ts", chunk), values, devices))

    # -- at the end

    def finish(self, top: KinetoFile, rank: int | None) -> Trace:
        """The Trace.

        Raises:
            InputError: no activity or counter rows; malformed ``args`` of a metadata event.
        """
        parts = self.counters + self.memory
        counters = {
            "name": [n for p in parts for n in p[0]],
            "ts_ns": np.concatenate([p[1] for p in parts]) if parts else _EMPTY_INTS,
            "value": np.array([v for p in parts for v in p[2]], dtype=np.float64),
            "device": np.array([d for p in parts for d in p[3]], dtype=np.int64),
        }
        if not self.n_acts and not parts:
            raise InputError(
                "trace holds no events (no activity or counter events)", path=self.path
            )
        names = np.array(list(self.names), dtype=object)
        cats = np.array(list(self.cats), dtype=object)
        empty = _Activities(
            [], [], _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, {}
        )
        gpu = _concat(self.gpu or [self._gpu_part(empty, _EMPTY_INTS)])
        self.gpu.clear()
        gpu["name"] = _categorical(gpu["name"], names)
        gpu["kind"] = _categorical(gpu["kind"], np.array(_KINDS, dtype=object))
        gpu["copy_kind"] = pd.Categorical(gpu["copy_kind"])
        host = _concat(self.host or [self._host_part(empty, _EMPTY_INTS)])
        self.host.clear()
        host["name"] = _categorical(host["name"], names)
        host["cat"] = _categorical(host["cat"], cats)
        _mark_collectives(host)
        gpu_user = _concat(self.gpu_user or [_gpu_user_part(empty, _EMPTY_INTS)])
        gpu_user["name"] = names[gpu_user["name"]].tolist()
        annotations = _annotation_columns(host, gpu_user)
        metas = [e for e in self.metas.values() if e.name in META_NAMES]
        meta = _meta(top, self.path, rank, metas, set(self.cats))
        return make_trace(meta, gpu=gpu, host=host, annotations=annotations, counters=counters)


_EMPTY_INTS = np.zeros(0, dtype=np.int64)


class _Activities:
    """One chunk's activity rows and the columns every table takes from them."""

    def __init__(
        self,
        acts: list[XEvent],
        args: list[Any],
        name: np.ndarray,
        cat: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        stream: np.ndarray,
        comms: dict[int, dict[str, Any]],
    ) -> None:
        self.acts = acts
        self.args = args
        self.name = name
        self.cat = cat
        self.start = start
        self.end = end
        self.stream = stream
        self.comms = comms
        self.pid = _ints([e.pid for e in acts])
        self.tid = _ints([e.tid for e in acts])
        self.correlation = _ints([a.correlation for a in args])
        self.external_id = _external_ids(args)

    def rows(self, idx: np.ndarray) -> tuple[list[XEvent], list[Any]]:
        """The events and ``args`` at *idx*."""
        return _pick(self.acts, idx), _pick(self.args, idx)

    def args_at(self, idx: np.ndarray) -> list[Any]:
        """The ``args`` at *idx*."""
        return _pick(self.args, idx)

    def comm(self, idx: np.ndarray) -> list[dict[str, Any] | None]:
        """``comm_args`` of the rows at *idx* (sorted positions)."""
        out: list[dict[str, Any] | None] = [None] * len(idx)
        if self.comms:
            hits = np.fromiter(self.comms, np.int64, len(self.comms))
            at = np.searchsorted(idx, hits)
            for i, j in zip(hits.tolist(), at.tolist(), strict=True):
                if j < len(idx) and idx[j] == i:
                    out[j] = self.comms[i]
        return out


def _pick(values: list[Any], idx: np.ndarray) -> list[Any]:
    if len(idx) < 2:
        return [values[i] for i in idx.tolist()]
    return list(itemgetter(*idx.tolist())(values))


def _gpu_user_part(cols: _Activities, idx: np.ndarray) -> dict[str, Any]:
    tid = cols.tid[idx]
    stream = cols.stream[idx]
    return {
        "name": cols.name[idx],
        "start_ns": cols.start[idx],
        "end_ns": cols.end[idx],
        "pid": cols.pid[idx],
        "tid": tid,
        "stream": np.where(stream != -1, stream, tid),
    }


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's columns from its chunks' (numpy arrays or lists)."""
    out: dict[str, Any] = {}
    for key, first in parts[0].items():
        if isinstance(first, np.ndarray):
            out[key] = np.concatenate([p[key] for p in parts]) if len(parts) > 1 else first
        else:
            out[key] = list(chain.from_iterable(p[key] for p in parts))
    return out


def _categorical(ids: np.ndarray, strings: np.ndarray) -> pd.Categorical:
    """Categorical of ``strings[ids]``, categories in order of first appearance (interned)."""
    codes, uniques = pd.factorize(ids)
    return pd.Categorical.from_codes(
        codes, categories=pd.Index(strings[uniques], dtype=object).astype(str)
    )


def _mark_collectives(host: dict[str, Any]) -> None:
    """``record_param_comms`` and ``nccl:*`` rows are collectives even without metadata: ``{}``."""
    names: pd.Categorical = host["name"]
    is_coll = np.array(
        [c == "record_param_comms" or c.startswith("nccl:") for c in names.categories] + [False],
        dtype=bool,
    )[names.codes]
    comm = host["comm_args"]
    for i in np.flatnonzero(is_coll).tolist():
        if comm[i] is None:
            comm[i] = {}


def _ints(values: list[Any]) -> np.ndarray:
    """int64 column: integers kept (uint64 beyond int64 → -1), anything else → -1."""
    arr = np.array(values) if values else np.empty(0, dtype=np.int64)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    out = [v if v.__class__ is int and -(2**63) <= v < 2**63 else -1 for v in values]
    return np.array(out, dtype=np.int64)


def _floats(values: list[Any]) -> np.ndarray:
    """float64 column: numbers kept, anything else → NaN."""
    arr = np.array(values) if values else np.empty(0, dtype=np.float64)
    if arr.dtype.kind in "if":
        return arr.astype(np.float64, copy=False)
    out = [v if v.__class__ in (int, float) else np.nan for v in values]
    return np.array(out, dtype=np.float64)


def _triples(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z) int64 columns from ``[x, y, z]`` lists; anything else → -1."""
    out = np.full((len(values), 3), -1, dtype=np.int64)
    has = [i for i, v in enumerate(values) if v.__class__ is list]
    if has:
        try:
            arr = np.array([values[i] for i in has])
        except ValueError:
            arr = np.empty(0)
        if arr.dtype.kind == "i" and arr.ndim == 2 and arr.shape[1] == 3:
            out[has] = arr
        else:
            for i in has:
                v = values[i]
                if len(v) == 3 and all(x.__class__ is int for x in v):
                    out[i] = v
    return out[:, 0], out[:, 1], out[:, 2]


def _external_ids(args: list[Any]) -> np.ndarray:
    """``External id`` (2022 traces: ``external id``), -1 when absent."""
    ext = _ints([a.external_id for a in args])
    if (ext == -1).any():
        old = _ints([a.external_id_2022 for a in args])
        ext = np.where(ext == -1, old, ext)
    return ext


def _annotation_columns(host: dict[str, Any], gpu_user: dict[str, Any]) -> dict[str, Any]:
    """Step (``ProfilerStep#N``), user (``user_annotation``) and ``gpu_user`` annotations."""
    names: pd.Categorical = host["name"]
    step_of_cat = np.array(
        [int(m.group(1)) if (m := STEP_RE.match(c)) else -1 for c in names.categories] + [-1],
        dtype=np.int64,
    )
    host_step = step_of_cat[names.codes]
    is_step = host_step >= 0
    cats: pd.Categorical = host["cat"]
    user_cat = np.append(np.asarray(cats.categories) == "user_annotation", False)
    is_user = user_cat[cats.codes] & ~is_step
    pick = np.flatnonzero(is_step | is_user)

    gu_names: list[str] = gpu_user["name"]
    gu_step = [int(m.group(1)) if (m := STEP_RE.match(n)) else -1 for n in gu_names]
    kind = np.where(is_step[pick], "step", "user").tolist() + ["gpu_user"] * len(gu_names)
    return {
        "name": np.asarray(names.categories, dtype=object)[names.codes[pick]].tolist() + gu_names,
        "kind": kind,
        "start_ns": np.concatenate([host["start_ns"][pick], gpu_user["start_ns"]]),
        "end_ns": np.concatenate([host["end_ns"][pick], gpu_user["end_ns"]]),
        "step": np.concatenate([host_step[pick], np.array(gu_step, dtype=np.int64)]),
        "pid": np.concatenate([host["pid"][pick], gpu_user["pid"]]),
        "tid": np.concatenate([host["tid"][pick], gpu_user["tid"]]),
        "stream": np.concatenate([np.full(len(pick), -1, np.int64), gpu_user["stream"]]),
    }


# --------------------------------------------------------------------------------------------
# metadata


def _meta(
    doc: KinetoFile, path: Path, rank: int | None, metas: list[MEvent], cats: set[str]
) -> TraceMeta:
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None
    info_rank = _as_int(info.get("rank")) if info else None
    name_rank = rank_from_filename(path.name)
    if rank is not None:
        the_rank, source = int(rank), "argument"
    elif info_rank is not None:
        the_rank, source = info_rank, "distributedInfo"
    elif name_rank is not None:
        the_rank, source = name_rank, "filename"
    else:
        the_rank, source = 0, "default"

    extra: dict[str, Any] = {}
    if info is not None:
        extra["distributedInfo"] = info
    for key in (
        "traceName",
        "displayTimeUnit",
        "record_shapes",
        "trace_id",
        "cupti_version",
        "cuda_runtime_version",
        "cuda_driver_version",
    ):
        value = getattr(doc, key)
        if value is not None:
            extra[key] = value
    extra.update(_process_thread_names(metas, path))

    base = doc.baseTimeNanoseconds
    return TraceMeta(
        rank=the_rank,
        source_format="kineto",
        source_path=str(path),
        source_version=None if doc.schemaVersion is None else str(doc.schemaVersion),
        world_size=_as_int(info.get("world_size")) if info else None,
        rank_source=source,
        hostname=doc.host_name if isinstance(doc.host_name, str) else None,
        base_time_ns=base if base.__class__ is int else None,
        devices=_devices(doc.deviceProperties, cats),
        extra=extra,
    )


def _as_int(v: Any) -> int | None:
    if v.__class__ is int:
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def _process_thread_names(rows: list[MEvent], path: Path) -> dict[str, Any]:
    """``process_names`` {pid: name}, ``process_labels`` {pid: labels}, ``thread_names``
    {pid: {tid: name}} from the last ``M`` event of each (name, pid, tid)."""
    procs: dict[Any, str] = {}
    labels: dict[Any, str] = {}
    threads: dict[Any, dict[Any, str]] = {}
    for e, a in zip(rows, decode_args(rows, MetaArgs, path), strict=True):
        if e.name == "process_name" and isinstance(a.name, str):
            procs[e.pid] = a.name
        elif e.name == "process_labels" and isinstance(a.labels, str):
            labels[e.pid] = a.labels
        elif e.name == "thread_name" and isinstance(a.name, str):
            threads.setdefault(e.pid, {})[e.tid] = a.name
    return {"process_names": procs, "process_labels": labels, "thread_names": threads}


_DEVICE_FIELDS = {
    "computeMajor": "compute_major",
    "computeMinor": "compute_minor",
    "numSms": "sm_count",
    "totalGlobalMem": "total_memory_bytes",
    "maxThreadsPerBlock": "max_threads_per_block",
    "maxThreadsPerMultiprocessor": "max_threads_per_sm",
    "regsPerBlock": "regs_per_block",
    "regsPerMultiprocessor": "regs_per_sm",
    "warpSize": "warp_size",
    "sharedMemPerBlock": "smem_per_block_bytes",
    "sharedMemPerBlockOptin": "smem_per_block_optin_bytes",
    "sharedMemPerMultiprocessor": "smem_per_sm_bytes",
    "maxSharedMemoryPerMultiProcessor": "smem_per_sm_bytes",
    "l2CacheSize": "l2_cache_bytes",
    "clockRate": "clock_rate_khz",
}
"""Kineto ``deviceProperties`` key → :class:`DeviceInfo` field (ROCm spells the per-SM
shared memory ``maxSharedMemoryPerMultiProcessor``)."""

_AMD_RE = re.compile(r"AMD|Radeon|Instinct|\bMI\d{3}", re.IGNORECASE)
_MTIA_RE = re.compile(r"MTIA|ARTEMIS|FREYA", re.IGNORECASE)


def _vendor(name: str | None, cats: set[str]) -> str | None:
    """``AMD`` / ``MTIA`` / ``NVIDIA`` from the device name, else from the trace's categories."""
    if name and _AMD_RE.search(name):
        return "AMD"
    if (name and _MTIA_RE.search(name)) or any(c.startswith("mtia") for c in cats):
        return "MTIA"
    if name and re.search(r"NVIDIA|Tesla|Quadro|GeForce|RTX", name):
        return "NVIDIA"
    if cats & {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"}:
        return "NVIDIA"
    return None


def _devices(props: Any, cats: set[str]) -> list[DeviceInfo]:
    if not isinstance(props, list):
        return []
    out = []
    for p in props:
        if not isinstance(p, dict) or _as_int(p.get("id")) is None:
            continue
        name = p.get("name") if isinstance(p.get("name"), str) else None
        fields = {f: p[k] for k, f in _DEVICE_FIELDS.items() if k in p and p[k].__class__ is int}
        out.append(DeviceInfo(id=_as_int(p["id"]), name=name, vendor=_vendor(name, cats), **fields))
    return out
