"""The cache of parsed traces: each input's Traces as Arrow tables (docs/scale.md §2).

Where: ``$GPUSCOPE_CACHE_DIR``, else ``~/.cache/gpuscope``.  Identities: an entry's key hashes
the versions (:func:`collectors.cache.hashing.versions`), the reader and, per input file, its
base name and content digest; a file's digest is recorded in ``ROOT/stat`` with its
``(size, mtime_ns, ctime_ns, inode, device)`` and reused while those are unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectors.cache.entries import AreaInfo, EntryStore, atomic_write
from collectors.cache.errors import CacheCorruptError, UnencodableError
from collectors.cache.exact_json import dumps_exact, loads_exact, meta_from_dict, meta_to_dict
from collectors.cache.hashing import file_digest, json_checksum, sha256, versions
from collectors.cache.readers import LoadOutcome
from collectors.cache.results import ResultStore
from collectors.model import TABLES, Trace

if TYPE_CHECKING:
    import pandas as pd

CACHE_ENV = "GPUSCOPE_CACHE_DIR"


def cache_dir(root: str | Path | None = None) -> Path:
    """The cache root: *root*, else ``$GPUSCOPE_CACHE_DIR``, else ``~/.cache/gpuscope``."""
    if root is not None:
        return Path(root)
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return Path.home() / ".cache" / "gpuscope"


@dataclass
class CacheInfo:
    """What ``gpuscope cache info`` prints: per area (``traces``, ``results``)."""

    root: str
    areas: dict[str, AreaInfo] = field(default_factory=dict)

    @property
    def entries(self) -> int:
        return sum(a.entries for a in self.areas.values())

    @property
    def bytes(self) -> int:
        return sum(a.bytes for a in self.areas.values())


@dataclass
class _StatRecord:
    """What ``ROOT/stat`` knows of one input file."""

    path: Path
    """The record's own file."""
    apath: str
    ident: list[int]
    """The file's (size, mtime_ns, ctime_ns, inode, device) now."""
    digest: str | None = None
    """The recorded content digest, when the record is intact and the file unchanged."""
    damaged: bool = False
    """The record is unreadable or fails its checksum."""


class TraceCache:
    """The cache under :func:`cache_dir` (see the module docstring).

    ``traces`` holds parsed Traces; ``results`` (:class:`~collectors.cache.results.ResultStore`)
    holds what callers derive from them (the per-rank summaries of :mod:`reports.summary`),
    keyed and versioned by those callers: *result_versions*, passed in by the caller, is what a
    results entry must have been computed by (without it, results can be listed and cleared,
    not read).
    """

    def __init__(
        self,
        root: str | Path | None = None,
        result_versions: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.root = cache_dir(root)
        self.traces = EntryStore(self.root, "traces", versions)
        self.results = ResultStore(self.root, result_versions)
        self.notes: list[str] = []
        """One line per cached part that failed a check and was rebuilt (:meth:`note`)."""

    # -- identities --------------------------------------------------------------------------

    def note(self, label: str, what: str, reason: str, action: str) -> None:
        """Record, in one line, that a cached part failed a check and what was done instead."""
        self.notes.append(f"{label}: cached {what} failed a check ({reason}); {action}")

    def _stat_record(self, path: Path) -> _StatRecord:
        st = path.stat()
        ident = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
        apath = str(path.resolve())
        rec_path = self.root / "stat" / f"{sha256(apath.encode()).hexdigest()[:40]}.json"
        out = _StatRecord(rec_path, apath, ident)
        try:
            rec = json.loads(rec_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return out
        except (OSError, ValueError):
            out.damaged = True
            return out
        if not isinstance(rec, dict) or "checksum" not in rec:
            return out  # written before records carried a checksum: not believed, not damage
        body = {k: v for k, v in rec.items() if k != "checksum"}
        try:
            out.damaged = rec["checksum"] != json_checksum(body)
        except ValueError:
            out.damaged = True
        if out.damaged:
            return out
        with contextlib.suppress(KeyError, TypeError):
            if rec["path"] == apath and rec["stat"] == ident and len(rec["digest"]) == 64:
                out.digest = str(rec["digest"])
        return out

    def known_digest(self, path: Path) -> str | None:
        """The digest recorded for *path* when the file is unchanged since, else None (cheap)."""
        try:
            return self._stat_record(path).digest
        except OSError:
            return None

    def digest(self, path: Path) -> str:
        """Content digest of *path*, from the stat record when the file is unchanged and the
        record passes its checksum (a damaged record is noted, and rewritten).

        Raises:
            OSError: the file cannot be read.
        """
        rec = self._stat_record(path)
        if rec.digest is not None:
            return rec.digest
        if rec.damaged:
            self.note(str(path), "content digest", "checksum differs", "hashed again")
        digest = file_digest(path)
        if path.stat().st_mtime_ns == rec.ident[1]:  # not rewritten while hashing
            body = {"path": rec.apath, "stat": rec.ident, "digest": digest}
            with contextlib.suppress(OSError):
                atomic_write(rec.path, json.dumps({**body, "checksum": json_checksum(body)}))
        return digest

    def key(self, kind: str, paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
        """The entry key of reading *paths* with reader *kind* (see the module docstring).

        Raises:
            OSError: an input cannot be read.
        """
        ident = {
            **versions(),
            "kind": kind,
            "options": options or {},
            "sources": [[p.name, self.digest(p)] for p in paths],
        }
        return str(sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:40])

    # -- traces ------------------------------------------------------------------------------

    def get(self, key: str, paths: Sequence[Path]) -> list[Trace]:
        """The Traces stored under *key*, their ``source_path`` set to *paths*' spelling.

        Raises:
            FileNotFoundError: no entry.
            CacheCorruptError: the entry fails a check (the caller removes it).
        """
        doc, tables = self.traces.read(key, versions())
        try:
            if len(doc["sources"]) != len(paths):
                raise CacheCorruptError("manifest does not match its inputs")
            out = []
            for i, rec in enumerate(doc["traces"]):
                meta = meta_from_dict(loads_exact(rec["meta"]))
                src = rec["source_index"]
                meta.source_path = str(paths[src]) if src is not None else None
                out.append(Trace(meta=meta, **{n: tables[f"{i}.{n}"] for n in TABLES}))
            return out
        except CacheCorruptError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise CacheCorruptError(f"entry unreadable: {type(e).__name__}: {e}") from None

    def put(self, key: str, kind: str, paths: Sequence[Path], traces: Sequence[Trace]) -> int:
        """Store *traces* under *key*; returns the entry's bytes (0 when another writer won).

        Raises:
            UnencodableError: a value cannot be stored exactly (nothing is written).
            OSError: the cache directory is not writable.
        """
        spelled = [str(p) for p in paths]
        recs = []
        tables: dict[str, pd.DataFrame] = {}
        for i, tr in enumerate(traces):
            meta = meta_to_dict(tr.meta)
            src = meta.pop("source_path")
            recs.append(
                {
                    "rank": tr.rank,
                    "meta": dumps_exact({**meta, "source_path": None}),
                    "source_index": spelled.index(src) if src in spelled else None,
                }
            )
            for n in TABLES:
                tables[f"{i}.{n}"] = getattr(tr, n)
        doc = {"kind": kind, "sources": [p.name for p in paths], "traces": recs}
        return self.traces.write(key, versions(), doc, tables)

    def load(
        self,
        kind: str,
        paths: Sequence[Path],
        read: Callable[[], list[Trace]],
        options: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> tuple[list[Trace], LoadOutcome]:
        """The Traces of *paths*: from the entry when it passes every check, else ``read()``
        (then stored).  Errors of ``read()`` propagate; cache problems never do."""
        if key is None:
            try:
                key = self.key(kind, paths, options)
            except OSError:
                return read(), LoadOutcome("bypass", note="cannot stat or hash the input")
        status = "built"
        note = None
        try:
            return self.get(key, paths), LoadOutcome("hit", key)
        except FileNotFoundError:
            pass
        except CacheCorruptError as e:
            status, note = "rebuilt", str(e)
            self.traces.remove(key)
            label = str(paths[0]) + (f" (+{len(paths) - 1} more)" if len(paths) > 1 else "")
            self.note(label, "parsed trace", note, "parsed again")
        traces = read()
        try:
            size = self.put(key, kind, paths, traces)
        except UnencodableError as e:
            return traces, LoadOutcome("uncacheable", key, str(e))
        except OSError as e:
            return traces, LoadOutcome("unwritable", key, f"{e.strerror or e}")
        return traces, LoadOutcome(status, key, note, size)

    # -- maintenance -------------------------------------------------------------------------

    def info(self) -> CacheInfo:
        """Counts and sizes per area (stale = unreadable, or written by other versions)."""
        return CacheInfo(
            root=str(self.root),
            areas={s.area: s.info() for s in (self.traces, self.results)},
        )

    def clear(self, *, stale_only: bool = False) -> CacheInfo:
        """Remove every entry (or only the stale ones; with everything, the stat records and
        leftovers of interrupted writes too); returns what was removed."""
        gone = CacheInfo(
            root=str(self.root),
            areas={s.area: s.clear(stale_only=stale_only) for s in (self.traces, self.results)},
        )
        if not stale_only:
            for sub in ("stat", "tmp"):
                shutil.rmtree(self.root / sub, ignore_errors=True)
        return gone
