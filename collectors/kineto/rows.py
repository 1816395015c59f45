"""The rows stage of the Kineto reader: decoded chunks → numpy columns, without pandas.

:func:`read_rows` reads a file's chunks (:func:`collectors.kineto.stream.stream_chunks`, or the
whole text at once when the chunked reader cannot take it) and returns its :class:`RowParts`,
what :func:`collectors.kineto.tables.build_trace` assembles into the tables.  :class:`Rows`
turns each chunk into numpy columns of the ``gpu``, ``host`` and ``gpu_user`` rows, counter rows
and metadata, keyed by the chunk's index, so that a parallel read
(:mod:`collectors.kineto.parallel`) can read a share of the chunks in each process
(:func:`read_chunks`) and carry one process's rows into the other's (:meth:`Rows.state`,
:meth:`Rows.merge`) before :meth:`Rows.parts`.  Value conversions: :mod:`collectors.kineto.columns`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from threading import Event
from typing import Any

import msgspec
import numpy as np

from collectors.errors import InputError
from collectors.kinds import GPU_KINDS, LAUNCH_CATS
from collectors.kineto.columns import (
    EMPTY_INTS,
    NAME_NOT_TEXT,
    NEGATIVE_DUR,
    OK,
    OUT_OF_RANGE,
    Activities,
    InexactTimes,
    Rejections,
    copy_kinds,
    counter_rows,
    counts,
    decimal_us_to_ns,
    field,
    floats,
    gpu_user_part,
    ints,
    pick,
    triples,
    us_to_ns,
)
from collectors.kineto.decode import I_TYPES, CEvent, KinetoFile, MEvent, XEvent
from collectors.kineto.native import NativeChunk
from collectors.kineto.native_rows import add_native
from collectors.kineto.stream import (
    META_NAMES,
    Chunk,
    ChunkClaims,
    Fallback,
    decode_meta_args,
    stream_chunks,
    whole_chunks,
)
from collectors.limits import MAX_NESTING, TIME_LIMIT_NS, nested_deeper

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
"""``gpu.kind`` by Kineto category; any other category with a stream is ``other``.  The
``kind`` column of a part holds indices into :data:`collectors.model.GPU_KINDS`."""


def _devices(args: list[Any], rows: list[Any]) -> list[Any]:
    """``args.device`` of each device row, else its ``pid``."""
    dev = field(args, "device")
    if dev.count(None):
        dev = [d if d is not None else e.pid for d, e in zip(dev, rows, strict=True)]
    return dev


_TIME = {"ts": attrgetter("ts"), "dur": attrgetter("dur")}
_META, _OTHER, _X = 1, 2, 3
"""Codes of the events :meth:`Rows.add` keeps: metadata, counters/instants, activities."""
_CODE_OF_CLASS: dict[type, int] = {MEvent: _META, CEvent: _OTHER, **dict.fromkeys(I_TYPES, _OTHER)}

_MEMCPY = GPU_KINDS.index("memcpy")
_SYNC = GPU_KINDS.index("sync")

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
        self.activity_cat: dict[Any, bool] = {}
        self.copy_kind_of_name: dict[int, str | None] = {}
        self.n_acts = 0
        """Activity rows kept."""
        self.n_candidates = 0
        """Activity events (``ph == "X"``, a string ``cat`` other than ``Trace``), kept or
        rejected."""
        self.n_samples = 0
        """Counter samples, kept or rejected."""
        self.rejected = Rejections()
        self.event_counts: dict[int, int] = {}
        """Events (of every phase) in each chunk this reader decoded, by chunk index: each
        row's ``event_index`` is its position in its chunk until :meth:`parts` adds the events
        of the chunks before it."""
        self.top: KinetoFile | None = None
        """The file's top-level keys (from the last chunk, once added)."""

    # -- per chunk

    def add(self, chunk: Chunk | NativeChunk, index: int) -> None:
        """Add the rows of chunk number *index* (activity rows, counters, metadata)."""
        if isinstance(chunk, NativeChunk):
            add_native(self, chunk, index)
            return
        self.index = index
        self.chunks += 1
        self.event_counts[index] = len(chunk.events)
        events = chunk.events
        # each event's class as a code, in one C-level pass (no Python frame per event)
        code_of = {**_CODE_OF_CLASS, chunk.xcls: _X}
        codes = np.fromiter(map(code_of.get, map(type, events), repeat(0)), np.uint8, len(events))
        metas = pick(events, np.flatnonzero(codes == _META))
        if metas:
            self._add_metas(metas)
        others = pick(events, np.flatnonzero(codes == _OTHER))
        if others:
            self._add_counters(others, chunk)
        # activity rows (HTA): ph "X" with a string cat, cat != "Trace" (and a usable ts and
        # dur: :meth:`_add_activities` rejects the others); and their positions
        xat = np.flatnonzero(codes == _X)
        xs = pick(events, xat)
        cats = field(xs, "cat")
        is_act = self._activity_cats(cats)
        if not is_act.all():
            keep = np.flatnonzero(is_act)
            xat, xs, cats = xat[keep], pick(xs, keep), pick(cats, keep)
        if xs:
            self.n_candidates += len(xs)
            self._add_activities(xs, xat, cats, chunk)
        if chunk.top is not None:
            self.top = chunk.top

    def _activity_cats(self, cats: list[Any]) -> np.ndarray:
        """Per ``X`` event category: whether it makes an activity row (a string other than
        ``Trace``), memoised per distinct value (JSON values equal across types are numbers)."""
        memo = self.activity_cat
        try:
            flags = np.fromiter(map(memo.get, cats, repeat(2)), np.uint8, len(cats))
        except TypeError:  # an unhashable category (a list...): one by one
            return np.array([c.__class__ is str and c != "Trace" for c in cats], dtype=bool)
        new = np.flatnonzero(flags == 2).tolist()
        if new:
            for i in new:
                c = cats[i]
                flags[i] = memo.setdefault(c, c.__class__ is str and c != "Trace")
        return flags.astype(bool)

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

    def _ns(
        self, rows: list[Any], field: str, chunk: Chunk, *, acts: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact ns of *rows*' ``ts``/``dur`` (*acts*: the chunk's activity rows), re-read as
        decimals when floats are too large; and why each is unusable (0: usable)."""
        values = list(map(_TIME[field], rows))
        negative = NEGATIVE_DUR if field == "dur" else OUT_OF_RANGE
        try:
            return us_to_ns(values, negative)
        except InexactTimes:
            return decimal_us_to_ns(chunk.exact_values(rows, field, acts=acts), negative)

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
        if "kind" not in self._flags or len(self._flags["kind"]) != len(self.cats):
            cats = list(self.cats)
            self._flags = {
                "host": np.array([c in HOST_CATS for c in cats], dtype=bool),
                "sync": np.array([c == "cuda_sync" for c in cats], dtype=bool),
                "gpu_user": np.array([c == "gpu_user_annotation" for c in cats], dtype=bool),
                "python": np.array([c == "python_function" for c in cats], dtype=bool),
                "launch": np.array([c in LAUNCH_CATS for c in cats], dtype=bool),
                "kind": np.array(
                    [GPU_KINDS.index(GPU_KIND_BY_CAT.get(c, "other")) for c in cats], np.int64
                ),
            }
        return self._flags

    def _add_activities(
        self, acts: list[XEvent], at: np.ndarray, cats: list[str], chunk: Chunk
    ) -> None:
        """Split the chunk's activity rows (*at*: their positions in the chunk) into ``gpu``,
        ``host`` and ``gpu_user`` rows, after rejecting those whose ``ts``/``dur`` are not
        usable times or whose name is not a string (counted in :attr:`rejected`)."""
        start, bad = self._ns(acts, "ts", chunk, acts=True)
        dur, bad_dur = self._ns(acts, "dur", chunk, acts=True)
        end = start + dur
        bad = np.where(bad > 0, bad, np.where(end > TIME_LIMIT_NS, OUT_OF_RANGE, bad_dur))
        names = field(acts, "name")
        if set(map(type, names)) != {str}:
            not_text = np.array([n.__class__ is not str for n in names], dtype=bool)
            bad = np.where((bad == OK) & not_text, NAME_NOT_TEXT, bad)
        if bad.any():
            self.rejected.add("activity events", bad.astype(np.uint8))
            keep = np.flatnonzero(bad == OK)
            if not len(keep):
                return
            acts, at, names = pick(acts, keep), at[keep], pick(names, keep)
            cats = pick(cats, keep)
            start, end = start[keep], end[keep]
        self.n_acts += len(acts)
        args = field(acts, "args")
        cat = self._ids(self.cats, cats)
        flags = self._cat_flags()
        stream = ints(field(args, "stream"))
        is_gpu = ((stream != -1) & ~flags["host"][cat]) | flags["sync"][cat]
        is_gpu_user = flags["gpu_user"][cat] & ~is_gpu
        is_host = ~is_gpu & ~is_gpu_user
        if not self.include_python:
            is_host &= ~flags["python"][cat]
        name = self._ids(self.names, names)
        comms = chunk.comms_of(acts, args)
        deep = [i for i, d in comms.items() if nested_deeper(d)]
        for i in deep:  # kept whole: bounded, so that no later stage runs out of stack
            del comms[i]
            self.rejected.count("collective metadata", f"nested deeper than {MAX_NESTING} levels")
        cols = Activities(acts, args, name, cat, start, end, stream, comms, at)
        if is_gpu.any():
            self.gpu.append((self.index, self._gpu_part(cols, np.flatnonzero(is_gpu))))
        if is_host.any():
            self.host.append((self.index, self._host_part(cols, np.flatnonzero(is_host))))
        if is_gpu_user.any():
            self.gpu_user.append((self.index, gpu_user_part(cols, np.flatnonzero(is_gpu_user))))

    def _gpu_part(self, cols: Activities, idx: np.ndarray) -> dict[str, Any]:
        rows, a = cols.rows(idx)
        name = cols.name[idx]
        kind = self._cat_flags()["kind"][cols.cat[idx]] if len(idx) else np.zeros(0, np.int64)
        is_sync = kind == _SYNC
        grid = triples(field(a, "grid"))
        block = triples(field(a, "block"))
        return {
            "name": name,
            "kind": kind,
            "start_ns": cols.start[idx],
            "end_ns": cols.end[idx],
            "device": counts(_devices(a, rows)),
            "stream": cols.stream[idx],
            "correlation": cols.correlation[idx],
            "external_id": cols.external_id[idx],
            "grid_x": grid[0],
            "grid_y": grid[1],
            "grid_z": grid[2],
            "block_x": block[0],
            "block_y": block[1],
            "block_z": block[2],
            "registers_per_thread": counts(field(a, "registers")),
            "shared_mem_bytes": counts(field(a, "shared_memory")),
            "bytes": counts(field(a, "bytes")),
            "copy_kind": self._copy_kinds(name, kind, a),
            "est_achieved_occupancy": floats(field(a, "occupancy"), high=100.0),
            "blocks_per_sm": floats(field(a, "blocks_per_sm")),
            "warps_per_sm": floats(field(a, "warps_per_sm")),
            "comm_args": cols.comm(idx),
            "wait_on_stream": np.where(is_sync, ints(field(a, "wait_on_stream")), -1),
            "wait_on_event_correlation": np.where(is_sync, ints(field(a, "wait_on_event")), -1),
            "event_index": cols.position[idx],
        }

    def _copy_kinds(self, name: np.ndarray, kind: np.ndarray, a: list[Any]) -> list[str | None]:
        """Memcpy direction from the name, else from ``args.kind``; None for non-memcpy rows
        (:func:`~collectors.kineto.columns.copy_kinds`)."""
        by_name = self.copy_kind_of_name
        memcpy = np.flatnonzero(kind == _MEMCPY).tolist()
        return copy_kinds(name, memcpy, [a[i].kind for i in memcpy], by_name, self.names)

    def _host_part(self, cols: Activities, idx: np.ndarray) -> dict[str, Any]:
        a = cols.args_at(idx)
        launches = np.flatnonzero(self._cat_flags()["launch"][cols.cat[idx]]).tolist()
        kernels = [a[i].kernel for i in launches]
        launch_kernel = np.full(len(idx), -1, dtype=np.int64)
        if any(k.__class__ is str for k in kernels):
            ids = self._ids(self.names, [k if k.__class__ is str else "" for k in kernels])
            is_name = np.array([k.__class__ is str for k in kernels], dtype=bool)
            launch_kernel[np.array(launches, dtype=np.int64)[is_name]] = ids[is_name]
        return {
            "name": cols.name[idx],
            "cat": cols.cat[idx],
            "start_ns": cols.start[idx],
            "end_ns": cols.end[idx],
            "pid": cols.pid[idx],
            "tid": cols.tid[idx],
            "correlation": cols.correlation[idx],
            "external_id": cols.external_id[idx],
            "input_dims": self._compact(field(a, "input_dims")),
            "input_types": self._compact(field(a, "input_types")),
            "concrete_inputs": self._compact(field(a, "concrete_inputs")),
            "input_strides": self._compact(field(a, "input_strides")),
            "comm_args": cols.comm(idx),
            "launch_kernel": launch_kernel,
            "event_index": cols.position[idx],
        }

    def _compact(self, raws: list[msgspec.Raw]) -> list[str | None]:
        """Compact JSON text of undecoded values (``[[2048, 2048]]`` → ``[[2048,2048]]``)."""
        keys = b"\0".join(raws).split(b"\0") if raws else []  # JSON text holds no NUL byte
        memo = self.compact
        for k in set(keys).difference(memo):
            memo[k] = msgspec.json.encode(msgspec.json.decode(k)).decode()
        return list(map(memo.__getitem__, keys))

    def _add_counters(self, others: list[Any], chunk: Chunk) -> None:
        """The chunk's counter and ``[memory]`` rows (:func:`counter_rows`)."""
        for table, (names, at, values, devices) in zip(
            (self.counters, self.memory), counter_rows(others), strict=True
        ):
            if not names:
                continue
            self.n_samples += len(names)
            ts, bad = self._ns(at, "ts", chunk)
            if bad.any():
                self.rejected.add("counter samples", bad)
                keep = np.flatnonzero(bad == OK)
                if not len(keep):
                    continue
                names, values, devices = pick(names, keep), pick(values, keep), pick(devices, keep)
                ts = ts[keep]
            table.append((self.index, (names, ts, values, devices)))

    # -- at the end: the rows in the file's order, and two readers' rows together

    def parts(self) -> RowParts:
        """All rows, each table's parts in chunk order, and the file's metadata.

        Raises:
            InputError: no activity or counter rows; malformed ``args`` of a metadata event.
        """
        counters = _ordered(self.counters) + _ordered(self.memory)
        if not self.n_acts and not counters:
            if self.rejected.counts:
                raise InputError(f"no usable events: {self._rejected_text()}", path=self.path)
            raise InputError(
                "trace holds no events (no activity or counter events)", path=self.path
            )
        assert self.top is not None  # the last chunk was added
        notes = self._notes()
        if self.top.distributedInfo is not None and nested_deeper(self.top.distributedInfo):
            notes.append(f"distributedInfo nested deeper than {MAX_NESTING} levels: ignored")
            self.top.distributedInfo = None
        last: dict[Any, MEvent] = {}
        for chunk_metas in _ordered(self.metas):
            last.update(chunk_metas)
        e = EMPTY_INTS
        empty = Activities([], [], e, e, e, e, e, {}, e)
        before = self._events_before()
        for table in (self.gpu, self.host):
            for index, part in table:
                part["event_index"] = part["event_index"] + before[index]
        return RowParts(
            path=self.path,
            top=self.top,
            names=list(self.names),
            cats=list(self.cats),
            gpu=_ordered(self.gpu) or [self._gpu_part(empty, EMPTY_INTS)],
            host=_ordered(self.host) or [self._host_part(empty, EMPTY_INTS)],
            gpu_user=_ordered(self.gpu_user) or [gpu_user_part(empty, EMPTY_INTS)],
            counters=counters,
            processes=_process_thread_names(list(last.values()), self.path),
            chunks=self.chunks,
            notes=notes,
        )

    def _notes(self) -> list[str]:
        """One note per kind of rejected row (docs/reliability.md)."""
        r = self.rejected
        notes = [
            r.note("activity events", self.n_candidates),
            r.note("counter samples", self.n_samples),
        ]
        k = r.total("collective metadata")
        if k:
            why = r.reasons("collective metadata")
            notes.append(f"dropped the collective metadata of {k} events ({why})")
        return [n for n in notes if n]

    def _rejected_text(self) -> str:
        """``all 3 activity events were rejected (...)`` for the file's every kind of row."""
        parts = []
        for what, n in (
            ("activity events", self.n_candidates),
            ("counter samples", self.n_samples),
        ):
            if self.rejected.total(what):
                parts.append(f"all {n} {what} were rejected ({self.rejected.reasons(what)})")
        return "; ".join(parts)

    def _events_before(self) -> dict[int, int]:
        """Per chunk index, the events of the chunks before it (every chunk's count is known
        once the rows of every reader of the file are merged)."""
        before: dict[int, int] = {}
        total = 0
        for index in range(max(self.event_counts, default=-1) + 1):
            before[index] = total
            total += self.event_counts[index]  # KeyError: a chunk no reader decoded (a bug)
        return before

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
            "n_candidates": self.n_candidates,
            "n_samples": self.n_samples,
            "rejected": self.rejected.counts,
            "event_counts": self.event_counts,
            "top": self.top,
        }

    def merge(self, state: dict[str, Any]) -> None:
        """Add the rows of another reader of the same file (its :meth:`state`), whose chunks
        are not among these rows': its name and category ids are mapped onto these."""
        names = self._ids(self.names, state["names"])
        cats = self._ids(self.cats, state["cats"])
        for index, part in state["gpu"]:
            self.gpu.append((index, {**part, "name": names[part["name"]]}))
        for index, part in state["host"]:
            kernel = part["launch_kernel"]
            host = {**part, "name": names[part["name"]], "cat": cats[part["cat"]]}
            host["launch_kernel"] = np.where(kernel >= 0, names[np.maximum(kernel, 0)], -1)
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
        self.n_candidates += state["n_candidates"]
        self.n_samples += state["n_samples"]
        self.rejected.merge(state["rejected"])
        self.event_counts.update(state["event_counts"])
        if self.top is None:
            self.top = state["top"]


def _ordered(parts: list[tuple[int, Any]]) -> list[Any]:
    """The parts (each keyed by its chunk's index) in chunk order."""
    return [part for _, part in sorted(parts, key=itemgetter(0))]


def _process_thread_names(rows: list[MEvent], path: Path) -> dict[str, Any]:
    """``process_names`` {pid: name}, ``process_labels`` {pid: labels}, ``thread_names``
    {pid: {tid: name}} from the last ``M`` event of each (name, pid, tid).

    Raises:
        InputError: the ``args`` of one of these events is not an object.
    """
    procs: dict[Any, str] = {}
    labels: dict[Any, str] = {}
    threads: dict[Any, dict[Any, str]] = {}
    for e, a in zip(rows, decode_meta_args(rows, path), strict=True):
        if e.name == "process_name" and isinstance(a.name, str):
            procs[e.pid] = a.name
        elif e.name == "process_labels" and isinstance(a.labels, str):
            labels[e.pid] = a.labels
        elif e.name == "thread_name" and isinstance(a.name, str):
            threads.setdefault(e.pid, {})[e.tid] = a.name
    return {"process_names": procs, "process_labels": labels, "thread_names": threads}


@dataclass
class RowParts:
    """A file's rows, ready to become its tables (:func:`collectors.kineto.tables.build_trace`,
    which consumes the part lists)."""

    path: Path
    top: KinetoFile
    """The file's top-level keys."""
    names: list[str]
    """Event names by id (the ``name`` columns of the parts hold ids)."""
    cats: list[str]
    """Categories by id (the ``cat`` column of host parts)."""
    gpu: list[Part]
    host: list[Part]
    gpu_user: list[Part]
    """Each table's parts in chunk order (at least one, maybe empty)."""
    counters: list[CounterPart]
    """Counter rows, then ``[memory]`` rows, each in chunk order."""
    processes: dict[str, Any]
    """:func:`_process_thread_names`."""
    chunks: int
    """Chunks this process decoded."""
    notes: list[str]
    """What was rejected (:meth:`Rows._notes`)."""


class Cancelled(Exception):
    """A read stopped by its *stop* event (:func:`read_rows`)."""


def read_rows(
    path: Path, include_python: bool, *, lookahead: bool = False, stop: Event | None = None
) -> RowParts:
    """Every row of *path*, read by this process: chunk by chunk (*lookahead*: each chunk
    scanned in a worker thread while the one before becomes rows, :func:`stream_chunks`), else
    (the text does not suit the chunked reader, or is malformed) from the whole text at once,
    which reports errors.  *stop*: once set, the read raises :class:`Cancelled` at its next
    chunk.

    Raises:
        InputError: unreadable file, corrupt gzip, invalid JSON, not a Kineto trace, malformed
            ``args``, no events.
        Cancelled: *stop* was set.
    """
    try:
        rows = read_chunks(path, include_python, lookahead=lookahead, stop=stop)
    except Fallback:
        rows = _collect(whole_chunks(path), Rows(path, include_python))
    return rows.parts()


def read_chunks(
    path: Path,
    include_python: bool,
    *,
    claimed: Any = None,
    ends: list[int] | None = None,
    lookahead: bool = False,
    stop: Event | None = None,
) -> Rows:
    """The rows of the chunks of *path* this process decodes: all, or with *claimed* (the
    shared ``multiprocessing.Value`` of a parallel read: chunks claimed so far) those it claims
    (:class:`ChunkClaims`); *ends* and *lookahead* as in :func:`stream_chunks`; *stop* as in
    :func:`read_rows`.

    Raises:
        Fallback: the text needs the whole-text reader (including every malformed file).
    """
    owned = None if claimed is None else ChunkClaims(claimed)
    try:
        chunks = stream_chunks(path, owned=owned, ends=ends, lookahead=lookahead)
        return _collect(chunks, Rows(path, include_python), stop)
    except InputError:
        raise Fallback from None


def _collect(
    chunks: Iterator[Chunk | NativeChunk | None], rows: Rows, stop: Event | None = None
) -> Rows:
    """*rows* with every decoded chunk of *chunks* added (None: a chunk another process has).

    Raises:
        Cancelled: *stop* was set.
    """
    for index, chunk in enumerate(chunks):
        if stop is not None and stop.is_set():
            raise Cancelled
        if chunk is not None:
            rows.add(chunk, index)
        del chunk  # not alive while the next one decodes
    return rows
