"""Per-chunk row building of the Kineto reader (:mod:`collectors.kineto`), without pandas.

:class:`Rows` turns each decoded chunk (:mod:`collectors.kineto_stream`) into numpy columns of the
``gpu``, ``host`` and ``gpu_user`` rows, counter rows and metadata, keyed by the chunk's index.
It imports only numpy and msgspec, so that a helper process of a parallel read
(:mod:`collectors.kineto_parallel`) starts quickly and small; :meth:`Rows.state` and
:meth:`Rows.merge` carry one reader's rows into another's.  The tables are assembled (with
pandas) by :func:`collectors.kineto.finish`.
"""

from __future__ import annotations

import contextlib
import re
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from collectors.kineto_decode import (
    COMM_FIELDS,
    COMM_KEYS,
    I_TYPES,
    CEvent,
    InexactTimes,
    MEvent,
    XEvent,
    comm_scan,
    decimal_us_to_ns,
    has_comm_marker,
    us_to_ns,
)
from collectors.kineto_stream import META_NAMES, Chunk

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

COPY_KIND_RE = re.compile(r"^(?:hip)?Memcpy\s*(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA|AtoA)")
COPY_KINDS = frozenset({"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD", "AtoH", "HtoA"})


def _skip(_: Any) -> None:
    pass


KINDS = ("kernel", "memcpy", "memset", "sync", "other")
"""Values of ``gpu.kind``: the ``kind`` column holds indices into this tuple."""
_MEMCPY = KINDS.index("memcpy")

Part = dict[str, Any]
"""One chunk's columns of one table (numpy arrays, or lists for object columns)."""
CounterPart = tuple[list[str], np.ndarray, list[float], list[int]]
"""One chunk's counter rows: names, ``ts_ns``, values, devices."""


class Rows:
    """The rows of every table, gathered chunk by chunk as numpy columns.

    Names and categories are kept as ids into one table per file (:attr:`names`,
    :attr:`cats`); each table's categoricals are built at the end, categories in order of first
    appearance in that table.  Every part is kept with the index of its chunk, so that the
    rows of two readers of one file (:meth:`merge`) come out in the file's order
    (:meth:`ordered`).
    """

    def __init__(self, path: Path, include_python: bool) -> None:
        self.path = path
        self.include_python = include_python
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self._flags: dict[str, np.ndarray] = {}
        self.gpu: list[tuple[int, Part]] = []
        self.host: list[tuple[int, Part]] = []
        self.gpu_user: list[tuple[int, Part]] = []
        self.counters: list[tuple[int, CounterPart]] = []
        self.memory: list[tuple[int, CounterPart]] = []
        self.metas: list[tuple[int, dict[Any, MEvent]]] = []
        self.index = 0
        """Index of the chunk being added."""
        self.chunks = 0
        """Chunks added."""
        self.compact: dict[bytes, str | None] = {b"": None}
        self.copy_kind_of_name: dict[int, str | None] = {}
        self.n_acts = 0

    # -- per chunk

    def add(self, chunk: Chunk, index: int) -> None:
        """Add the rows of chunk number *index* (activity rows, counters, metadata)."""
        self.index = index
        self.chunks += 1
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
        """Last event per (name, pid, tid) of the kept names (:data:`META_NAMES`), keys in order
        of first appearance; their ``args`` copied out of the chunk's text."""
        metas = [e for e in metas if e.name in META_NAMES]  # a tuple: == on unhashable names
        try:
            last = {(e.name, e.pid, e.tid): e for e in metas}
        except TypeError:  # an unhashable name/pid/tid: skip that event
            last = {}
            for e in metas:
                with contextlib.suppress(TypeError):
                    last[e.name, e.pid, e.tid] = e
        for e in last.values():
            e.args = msgspec.Raw(bytes(e.args))
        if last:
            self.metas.append((self.index, last))

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
                    [KINDS.index(GPU_KIND_BY_CAT.get(c, "other")) for c in cats], np.int64
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
            self.gpu.append((self.index, self._gpu_part(cols, np.flatnonzero(is_gpu))))
        if is_host.any():
            self.host.append((self.index, self._host_part(cols, np.flatnonzero(is_host))))
        if is_gpu_user.any():
            self.gpu_user.append((self.index, _gpu_user_part(cols, np.flatnonzero(is_gpu_user))))

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
            "concrete_inputs": self._compact([x.concrete_inputs for x in a]),
            "input_strides": self._compact([x.input_strides for x in a]),
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
            self.counters.append((self.index, (names, self._ns(at, "ts", chunk), values, devices)))
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
            self.memory.append((self.index, (names, self._ns(at, "ts", chunk), values, devices)))

    # -- at the end

    # -- the rows in the file's order, and two readers' rows together

    def ordered(self, table: str) -> list[Any]:
        """The parts of *table* (``gpu``, ``host``, ``gpu_user``, ``counters``, ``memory``,
        ``metas``) in chunk order."""
        parts: list[tuple[int, Any]] = getattr(self, table)
        return [part for _, part in sorted(parts, key=itemgetter(0))]

    def empty_part(self, table: str) -> Part:
        """A part with no rows of *table* (``gpu``, ``host`` or ``gpu_user``)."""
        empty = _Activities(
            [], [], _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, _EMPTY_INTS, {}
        )
        if table == "gpu":
            return self._gpu_part(empty, _EMPTY_INTS)
        if table == "host":
            return self._host_part(empty, _EMPTY_INTS)
        return _gpu_user_part(empty, _EMPTY_INTS)

    def state(self) -> dict[str, Any]:
        """What :meth:`merge` needs of these rows (plain values: picklable)."""
        metas = [
            (i, [(k, e.name, e.pid, e.tid, bytes(e.args)) for k, e in d.items()])
            for i, d in self.metas
        ]
        return {
            "names": list(self.names),
            "cats": list(self.cats),
            "gpu": self.gpu,
            "host": self.host,
            "gpu_user": self.gpu_user,
            "counters": self.counters,
            "memory": self.memory,
            "metas": metas,
            "n_acts": self.n_acts,
        }

    def merge(self, state: dict[str, Any]) -> None:
        """Add the rows of another reader of the same file (its :meth:`state`), whose chunks
        are not among these rows': its name and category ids are mapped onto these."""
        names = self._ids(self.names, state["names"])
        cats = self._ids(self.cats, state["cats"])
        for index, part in state["gpu"]:
            self.gpu.append((index, {**part, "name": names[part["name"]]}))
        for index, part in state["host"]:
            host = {**part, "name": names[part["name"]], "cat": cats[part["cat"]]}
            self.host.append((index, host))
        for index, part in state["gpu_user"]:
            self.gpu_user.append((index, {**part, "name": names[part["name"]]}))
        self.counters += state["counters"]
        self.memory += state["memory"]
        for index, events in state["metas"]:
            last = {
                k: MEvent(name=n, pid=pid, tid=tid, args=msgspec.Raw(args))
                for k, n, pid, tid, args in events
            }
            self.metas.append((index, last))
        self.n_acts += state["n_acts"]


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
