"""Chunked reading of Kineto trace files: the text in pieces (:mod:`collectors.kineto.source`),
``traceEvents`` decoded a few MB at a time, so that neither the whole JSON text nor a Struct per
event is ever held at once.

:func:`stream_chunks` finds ``"traceEvents": [`` in the text, decodes the keys before it, then cuts
the array at event boundaries (``}`` ``,`` ``{``) into chunks of about :data:`CHUNK_BYTES` and
decodes each one into typed Structs by ``ph`` (:data:`collectors.kineto.decode.EVENTS`).  The last
chunk is decoded together with the keys after the array.  A cut that is not an event boundary
(``}, {`` inside a string or a nested list) cannot decode, so a chunk that decodes is exactly the
events the whole text holds; a chunk that does not is retried at the previous few cuts.  Anything
else the chunked reader does not expect (no ``traceEvents`` key, malformed JSON, an
:class:`InputError`) raises :class:`Fallback`; the caller then reads the file with
:func:`whole_chunks`, which decodes the whole text at once (as the reader did before it read in
chunks) and reports errors exactly as it did.

Chunks whose typed decode fails validation (an unknown ``ph``, ``args`` that are not an object)
are decoded with the generic Struct and normalized (:func:`normalize`), which applies the rules
of the whole-text reader: only the ``args`` of the events that become rows must be objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from collectors.errors import InputError
from collectors.kineto.decode import (
    COMM_FIELDS,
    COMM_KEYS,
    COMM_SCAN,
    EVENTS,
    EVENTS_COMM,
    GENERIC_EVENTS,
    HEAD,
    SKIP,
    TAIL,
    TAIL_COMM,
    TAIL_GENERIC,
    CEvent,
    Event,
    ExactEvent,
    IEvent,
    KinetoFile,
    MemoryArgs,
    MetaArgs,
    MEvent,
    XArgs,
    XEvent,
    XEventComm,
    comm_args,
    comm_scan,
    decode,
    decode_args,
    decode_args_joined,
    exact_times,
    has_comm_marker,
    merge_top,
)
from collectors.kineto.native import NativeChunk
from collectors.kineto.native import enabled as native_enabled
from collectors.kineto.native import scan as native_scan
from collectors.kineto.scan_thread import AheadScanner, gunzip_ahead
from collectors.kineto.source import Fallback, read_bytes, text_pieces

CHUNK_BYTES = 2 << 20
"""Decode ``traceEvents`` in chunks of about this much JSON text."""
PIECE_BYTES = 1 << 20
"""Decompress (or read) this much at a time."""
HEAD_LIMIT = 16 << 20
"""Give up chunked reading when ``"traceEvents": [`` is not within this much text."""

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_ANY_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:')
_CUT = re.compile(rb"\}\s*,\s*\{")
_COMM_SCAN = re.compile(b"|".join(re.escape(m) for m in COMM_SCAN))
"""Any :data:`COMM_SCAN` text: one pass counts them all, 0.16 s against 0.23 s for the four
``bytes.count`` per 100 MB of JSON.  In JSON text the two give the same number: a marker's
closing quote is followed by a structural character, never by the next marker's word (an
escaped quote follows a backslash, which no marker ends with), so no two markers share a quote
(tested on generated JSON); a text that is not JSON fails to decode whatever the count."""
_CUT_WINDOW = 1 << 16
_CUT_TRIES = 8
_DECODERS = {
    (False, False): EVENTS,
    (False, True): EVENTS_COMM,
    (True, False): TAIL,
    (True, True): TAIL_COMM,
}
"""Typed decoder by (tail?, text names a collective key?)."""
META_NAMES = ("process_name", "thread_name", "process_labels")
"""The ``M`` events the model keeps."""


class _BadCut(Fallback):
    """A chunk's text is not valid JSON: the cut was inside an event (or the text is bad)."""


class Chunk:
    """Decoded events of one stretch of ``traceEvents``.

    Attributes:
        events: typed events (:class:`XEvent` or, where the text names a collective key,
            :class:`XEventComm`; :class:`MEvent`, :class:`CEvent`, :class:`IEvent`, skipped).
        xcls: the class of this chunk's ``X`` events.
        comms: ``{position in events: comm dict}`` when known (from the generic decode, or
            ``{}`` when the text names no collective key), else None: then from the
            :class:`XArgsComm` fields when they account for all :attr:`markers`, else from
            a generic decode of the text (:meth:`comms_of`).
        markers: how many times :data:`COMM_SCAN` occurs in the text.
        top: the file's top-level keys, on the last chunk only.
    """

    def __init__(
        self,
        events: list[Any],
        *,
        xcls: type = XEvent,
        text: bytes | None = None,
        tail: bool = False,
        comms: dict[int, dict[str, Any]] | None = None,
        markers: int = 0,
        exact: Callable[[], list[ExactEvent]] | None = None,
        path: Path,
    ) -> None:
        self.events = events
        self.xcls = xcls
        self.text = text
        self.tail = tail
        self.comms = comms
        self.markers = markers
        self.top: KinetoFile | None = None
        self.path = path
        self._exact = exact
        self._exact_times_memo: list[ExactEvent] | None = None
        self._where: dict[int, int] | None = None

    def comms_of(self, acts: list[Any], args: list[Any]) -> dict[int, dict[str, Any]]:
        """``{row: comm dict}`` of the chunk's activity rows *acts* (with their *args*, in
        order): the collective metadata of :func:`comm_args`."""
        known = self.comms
        if known is None:
            # the XArgsComm fields, when they account for every COMM_SCAN text in the chunk: then
            # no marker key hides in a string or a nested object of an activity's args (without
            # a backslash in the text, each such field is one COMM_SCAN text: no \u escapes)
            some, found = comm_scan(args)
            assert self.text is not None
            if found == self.markers and b"\\" not in self.text:
                return {
                    i: {
                        k: msgspec.json.decode(raw)
                        for k, f in zip(COMM_KEYS, COMM_FIELDS, strict=True)
                        if (raw := getattr(args[i], f))
                    }
                    for i in some
                    if has_comm_marker(args[i])
                }
            known = self._generic_comms()
        if not known:
            return {}
        return {i: known[p] for i, p in enumerate(self._positions(acts)) if p in known}

    def exact_values(self, rows: list[Any], field: str, *, acts: bool = False) -> list[Any]:
        """*field* (``ts`` or ``dur``) of *rows* (events of this chunk; *acts*: all its activity
        rows, in order) as exact decimals: the text is decoded a second time, once, when first
        needed (:func:`exact_times`)."""
        if acts:
            ts, dur = self._exact_activity_times()
            col = ts if field == "ts" else dur
            if len(col) == len(rows):
                return col
        every = self._exact_times()
        return [getattr(every[i], field) for i in self._positions(rows)]

    def _positions(self, rows: list[Any]) -> list[int]:
        """Positions of *rows* (events of this chunk) in :attr:`events`."""
        if self._where is None:
            self._where = {id(e): i for i, e in enumerate(self.events)}
        where = self._where
        return [where[id(e)] for e in rows]

    def _exact_times(self) -> list[ExactEvent]:
        """Every event's times as exact decimals, by position (decoded once, when needed)."""
        if self._exact_times_memo is None:
            if self._exact is not None:
                self._exact_times_memo = self._exact()
            else:
                assert self.text is not None
                self._exact_times_memo = exact_times(self.text, self.path, array=not self.tail)
        return self._exact_times_memo

    def _exact_activity_times(self) -> tuple[list[Any], list[Any]]:
        """Exact ``ts`` and ``dur`` of the activity rows, in order."""
        acts = [
            e
            for e in self._exact_times()
            if e.ph == "X" and e.cat.__class__ is str and e.cat != "Trace"
        ]
        return [e.ts for e in acts], [e.dur for e in acts]

    def _generic_comms(self) -> dict[int, dict[str, Any]]:
        """``{position: comm dict}`` as :func:`comm_args` finds them in the undecoded ``args``."""
        assert self.text is not None
        events = _decode_generic(self.text, self.tail)[0]
        return normalize(events, self.path)[1]


def decode_meta_args(events: list[MEvent], path: Path) -> list[MetaArgs]:
    """The ``args`` of metadata events (:class:`MEvent`, undecoded until the last event of each
    (name, pid, tid) is known).

    Raises:
        InputError: an ``args`` value is not a JSON object.
    """
    return decode_args(events, MetaArgs, path)


class ChunkClaims:
    """Which chunks one process of a parallel read decodes (an *owned* of :func:`stream_chunks`):
    chunk *index* is its own when no other process has claimed it yet.  *counter* is a shared
    ``multiprocessing.Value`` (with its lock) of the chunks claimed so far, in order."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter

    def __call__(self, index: int) -> bool:
        with self.counter.get_lock():
            if self.counter.value != index:
                return False  # another process has it
            self.counter.value = index + 1
            return True


def stream_chunks(
    path: Path,
    *,
    owned: Callable[[int], bool] | None = None,
    ends: list[int] | None = None,
    lookahead: bool = False,
) -> Iterator[Chunk | NativeChunk | None]:
    """The file's events chunk by chunk; the last chunk carries :attr:`Chunk.top`.

    With *owned* (a parallel read, :mod:`collectors.kineto.parallel`), only the chunks whose
    index (0, 1, ... in order; called once per chunk) it accepts are decoded; the others yield
    None and end at the last cut found, unchecked.
    *ends* receives each chunk's end offset in the text (the cut taken), so that two readers of
    the same file can check that they cut it alike (a reader that decodes a chunk takes the
    first cut that decodes, as the serial reader does).
    With *lookahead* (and no *owned*), each chunk is scanned natively in a worker thread
    (:class:`~collectors.kineto.scan_thread.AheadScanner`) while the caller handles the chunk
    before it and this generator gunzips the text after it: the same chunks, cut at the same
    places.

    Raises:
        Fallback: the text needs the whole-text reader (including every malformed file).
    """
    pieces = text_pieces(path, PIECE_BYTES)
    head = b""
    for piece in pieces:
        head += piece
        m = _EVENTS_KEY.search(head, max(0, len(head) - len(piece) - 256))
        if m:
            break
        if len(head) > HEAD_LIMIT:
            raise Fallback
    else:
        raise Fallback
    try:
        top = HEAD.decode(head[: m.start()] + b'"traceEvents":[]}')
    except msgspec.DecodeError:
        raise Fallback from None
    pending = [head[m.end() :]]
    offset = m.end()  # of pending[0] in the text
    index = 0  # of the chunk being cut
    size = len(pending[0])
    searched = 0  # text before this offset holds no cut
    wanted = CHUNK_BYTES
    del head
    scanner = AheadScanner() if lookahead and owned is None and native_enabled() else None
    held: list[Chunk | NativeChunk] = []  # read, yielded while the next one is scanned
    try:
        for piece in pieces:
            pending.append(piece)
            size += len(piece)
            if size < wanted:
                continue
            text = b"".join(pending)
            cuts = _cuts(text, len(text) - _CUT_WINDOW) or _cuts(text, searched - 16)
            if not cuts:  # one huge event: wait for twice as much text (linear copying)
                pending, searched, wanted = [text], len(text), 2 * size
                continue
            chunk: Chunk | NativeChunk | None = None
            ahead: list[bytes] = []
            if scanner is not None:
                scanner.submit(text, cuts[0].start() + 1)
                if held:  # the caller takes the chunk before while this one is scanned
                    yield held.pop()
                    ahead = gunzip_ahead(pieces, CHUNK_BYTES)
                chunk = scanner.result()
                if chunk is not None:
                    cut = cuts[0]
                else:
                    chunk, cut = _chunk_before(text, cuts, path, scanned_first=True)
                held.append(chunk)
                chunk = None
            elif owned is None or owned(index):
                chunk, cut = _chunk_before(text, cuts, path)
            else:
                cut = cuts[0]
            if ends is not None:
                ends.append(offset + cut.start() + 1)
            if scanner is None:
                yield chunk
            del chunk  # not alive while the next one decodes
            offset += cut.end() - 1
            index += 1
            pending = [text[cut.end() - 1 :], *ahead]
            size = sum(map(len, pending))
            searched, wanted = 0, CHUNK_BYTES
            del text, ahead
        rest = b"".join(pending)
        del pending
        if _ANY_EVENTS_KEY.search(rest):
            raise Fallback  # a second traceEvents key, or one inside an event: read it whole
        if ends is not None:
            ends.append(offset + len(rest))
        if owned is not None and not owned(index):
            yield None
            return
        if scanner is not None:
            scanner.submit(rest, len(rest), tail=True)
            if held:
                yield held.pop()
            native = _with_top(scanner.result(), rest)
        else:
            native = _with_top(native_scan(rest, 0, len(rest), tail=True), rest)
        last = native or _chunk(b'{"traceEvents":[' + rest, path, tail=True)
        last.top = merge_top(top, last.top)
        yield last
    finally:
        if scanner is not None:
            scanner.close()


def _with_top(native: NativeChunk | None, rest: bytes) -> NativeChunk | None:
    """The last chunk read natively (*rest*: its events, the array's ``]`` and the keys after
    it), with the top-level keys after the array decoded by msgspec; None where either
    declines (the msgspec path then reads it whole)."""
    if native is None:
        return None
    try:
        native.top = TAIL.decode(b'{"traceEvents":[]' + rest[native.end :])
    except msgspec.DecodeError:
        return None
    return native


def _cuts(text: bytes, start: int) -> list[re.Match[bytes]]:
    """The last few ``}`` ``,`` ``{`` in *text* from *start* on, last first."""
    return list(_CUT.finditer(text, max(0, start)))[: -_CUT_TRIES - 1 : -1]


def _chunk_before(
    text: bytes, cuts: list[re.Match[bytes]], path: Path, *, scanned_first: bool = False
) -> tuple[Chunk | NativeChunk, Any]:
    """The chunk of *text* up to the first of *cuts* that is an event boundary, and that cut:
    read by the native scanner (:mod:`collectors.kineto.native`), else, where it declines, by
    msgspec (which also tells a cut that is no event boundary: its text does not decode).
    *scanned_first*: the scanner has declined the first cut already.

    Raises:
        Fallback: none is (or the text is malformed).
    """
    for i, cut in enumerate(cuts):
        native = None if scanned_first and i == 0 else native_scan(text, 0, cut.start() + 1)
        if native is not None:
            return native, cut
        try:
            return _chunk(b"".join((b"[", memoryview(text)[: cut.start() + 1], b"]")), path), cut
        except _BadCut:
            continue
    raise Fallback


def whole_chunks(path: Path) -> Iterator[Chunk]:
    """The file's events as one chunk, decoded from the whole text at once (as the reader did
    before it read in chunks: errors are reported exactly as then).

    Raises:
        InputError: unreadable file, corrupt gzip, invalid JSON, not a Kineto trace, malformed
            ``args`` of a row.
    """
    data = read_bytes(path)
    doc = decode(data, path)
    events, comms = normalize(doc.traceEvents or [], path)
    doc.traceEvents = None
    chunk = Chunk(events, comms=comms, exact=lambda: exact_times(data, path), path=path)
    chunk.top = doc
    yield chunk


def normalize(events: list[Event], path: Path) -> tuple[list[Any], dict[int, dict[str, Any]]]:
    """Typed events (same positions; :data:`SKIP` for unused ones) from generic ones, and the
    collective metadata ``{position: dict}`` of the activity rows.

    Raises:
        InputError: the ``args`` of an activity row or a ``[memory]`` event is not an object.
    """
    out: list[Any] = [SKIP] * len(events)
    acts = [
        i
        for i, e in enumerate(events)
        if e.ph == "X" and e.cat.__class__ is str and e.cat != "Trace"
    ]
    rows = [events[i] for i in acts]
    args, joined, offsets = decode_args_joined(rows, XArgs, path)
    comms = {acts[i]: d for i, d in comm_args(rows, joined, offsets).items()}
    del joined
    for i, e, a in zip(acts, rows, args, strict=True):
        out[i] = XEvent(name=e.name, cat=e.cat, ts=e.ts, dur=e.dur, pid=e.pid, tid=e.tid, args=a)
    mem: list[int] = []
    for i, e in enumerate(events):
        if e.ph == "M" and e.name in META_NAMES:
            out[i] = MEvent(name=e.name, pid=e.pid, tid=e.tid, args=e.args)  # decoded later
        elif e.ph == "C":
            value = msgspec.json.decode(e.args) if e.args else None
            out[i] = CEvent(name=e.name, ts=e.ts, args=value)
        elif e.ph in ("i", "I") and e.name == "[memory]":
            mem.append(i)
    for i, m in zip(mem, decode_args([events[i] for i in mem], MemoryArgs, path), strict=True):
        out[i] = IEvent(name=events[i].name, ts=events[i].ts, args=m)
    return out, comms


def _chunk(text: bytes, path: Path, *, tail: bool = False) -> Chunk:
    """Decode one chunk's text: a JSON array of events, or the ``{"traceEvents":[...`` tail."""
    markers = len(_COMM_SCAN.findall(text))
    try:
        decoded = _DECODERS[tail, markers > 0].decode(text)
    except msgspec.ValidationError:
        events, top = _decode_generic(text, tail)
        try:
            typed, comms = normalize(events, path)
        except InputError:
            raise Fallback from None
        chunk = Chunk(typed, text=text, tail=tail, comms=comms, path=path)
        chunk.top = top
        return chunk
    except msgspec.DecodeError:
        raise _BadCut from None
    if tail:
        events, top = decoded.traceEvents, decoded
    else:
        events, top = decoded, None
    chunk = Chunk(
        events,
        xcls=XEventComm if markers else XEvent,
        text=text,
        tail=tail,
        comms=None if markers else {},
        markers=markers,
        path=path,
    )
    chunk.top = top
    return chunk


def _decode_generic(text: bytes, tail: bool) -> tuple[list[Event], Any]:
    try:
        if tail:
            top = TAIL_GENERIC.decode(text)
            return top.traceEvents, top
        return GENERIC_EVENTS.decode(text), None
    except msgspec.ValidationError:
        raise Fallback from None  # events that are not objects: the whole-text reader says so
    except msgspec.DecodeError:
        raise _BadCut from None
