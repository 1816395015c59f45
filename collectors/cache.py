"""Columnar cache of parsed traces: each input's Traces as Arrow IPC files + a JSON manifest.

Re-analysing or re-reporting a trace reads its four tables back from Arrow (no JSON or SQLite
parsing), which is what makes a second ``gpuscope analyze`` near-instant.  Full description,
including the trade-offs below: ``docs/scale.md`` §2.

Where: ``$GPUSCOPE_CACHE_DIR``, else ``~/.cache/gpuscope``.  Layout::

    ROOT/traces/<key[:2]>/<key>/manifest.json   versions, checksums, per trace: meta, tables
    ROOT/traces/<key[:2]>/<key>/<n>.arrow       one Arrow IPC file per (trace, table)
    ROOT/results/<key[:2]>/<key>/...            per-rank summaries (reports.parallel), alike
    ROOT/stat/<hash of the absolute path>.json  path → (size, mtime, ctime, inode) → digest

**Key** of an entry: a hash of the cache format, :data:`collectors.model.MODEL_VERSION`,
gpuscope's version, a fingerprint of the ``collectors`` package's source code (so that a fixed
reader never serves traces parsed by the old one), the reader (``kind``) and, per input file,
its base name (Kineto ranks may come from the name) and the SHA-256 digest of its **full
content**.  Hashing a file is far cheaper than parsing it (≈0.4 GB/s vs ≈20 MB/s), and is skipped
when the file's ``(size, mtime_ns, ctime_ns, inode, device)`` equal those recorded with its
digest in ``ROOT/stat`` (as ``git`` does for its index): a file rewritten in place changes its
ctime, which no user-level tool can set back.

**Trust**: nothing read from the cache is believed without checks.  The manifest must carry
the current versions and the expected key; each table file must have the recorded size and
CRC-32 checksum, column names and row count.  Any failure (a truncated or edited file, a
missing file, an entry written by another version) removes the entry; the trace is parsed from
its source again and a new entry written.  Entries are written into ``ROOT/tmp`` and renamed
into place (atomic on one file system); concurrent writers of one key keep the first.

**Exactness**: int64/float64 columns are stored as is; categoricals as Arrow dictionaries with
the pandas dtype of their categories recorded; object columns (``comm_args``, ``payload``,
``input_dims``...) as strings, or as JSON text with tags that keep tuples, non-string dict
keys, big integers and NaN.  A value that cannot be stored exactly (any other Python type)
makes that input uncacheable: it is parsed every time, never stored approximately.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

from collectors import model
from collectors.model import DeviceInfo, Trace, TraceMeta

CACHE_FORMAT = 1
"""Bumped whenever the layout of entries changes."""
CACHE_ENV = "GPUSCOPE_CACHE_DIR"
TABLES = ("gpu", "host", "annotations", "counters")
MANIFEST = "manifest.json"
_CHUNK = 1 << 20


class CacheCorruptError(Exception):
    """An entry failed a check (internal: the entry is removed and rebuilt, never raised out)."""


class UnencodableError(Exception):
    """A value cannot be stored exactly; the input is not cached."""


# --------------------------------------------------------------------------------------------
# where, and identities


def cache_dir(root: str | Path | None = None) -> Path:
    """The cache root: *root*, else ``$GPUSCOPE_CACHE_DIR``, else ``~/.cache/gpuscope``."""
    if root is not None:
        return Path(root)
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return Path.home() / ".cache" / "gpuscope"


def _sha(data: bytes | None = None) -> Any:
    h = hashlib.sha256()
    if data is not None:
        h.update(data)
    return h


def _crc(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


def file_digest(path: Path) -> str:
    """SHA-256 of the whole file's bytes (hex)."""
    h = _sha()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return str(h.hexdigest())


@functools.cache
def source_fingerprint(*packages: str) -> str:
    """Hash of the named packages' ``*.py`` files (subpackages included) and ``data/`` files.

    Keys that include it change whenever that code changes, so results of old code are never
    served (a conservative rule: any edit, even a comment, invalidates).
    """
    import importlib.util

    h = _sha()
    for pkg in packages:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            h.update(f"{pkg}:missing".encode())
            continue
        here = Path(next(iter(spec.submodule_search_locations)))
        files = sorted(here.rglob("*.py")) + sorted(p for p in here.glob("data/*") if p.is_file())
        for p in files:
            h.update(f"{pkg}/{p.relative_to(here)}".encode())
            with contextlib.suppress(OSError):
                h.update(p.read_bytes())
    return str(h.hexdigest())


def code_fingerprint() -> str:
    """:func:`source_fingerprint` of ``collectors`` (the readers and the trace model)."""
    return source_fingerprint("collectors")


@functools.cache
def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour shapes the tables."""
    return {"pandas": pd.__version__, "numpy": np.__version__, "pyarrow": pa.__version__}


@functools.cache
def tool_version() -> str:
    """gpuscope's installed version (``0+unknown`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuscope")
    except PackageNotFoundError:  # pragma: no cover - bare checkout
        return "0+unknown"


def versions() -> dict[str, Any]:
    """What an entry must have been written by to be used (read at each call: tests patch
    ``MODEL_VERSION``)."""
    return {
        "cache_format": CACHE_FORMAT,
        "model_version": model.MODEL_VERSION,
        "tool_version": tool_version(),
        "code": code_fingerprint(),
        "libraries": library_versions(),
    }


# --------------------------------------------------------------------------------------------
# exact JSON for object values and meta


def _tag(v: Any) -> Any:
    t = type(v)
    if v is None or t is str or t is bool or t is int or t is float:
        return v
    if t is list:
        return [_tag(x) for x in v]
    if t is tuple:
        return {"__tuple__": [_tag(x) for x in v]}
    if t is dict:
        if all(type(k) is str and not k.startswith("__") for k in v):
            return {k: _tag(x) for k, x in v.items()}
        return {"__dict__": [[_tag(k), _tag(x)] for k, x in v.items()]}
    raise UnencodableError(f"cannot cache a value of type {t.__module__}.{t.__qualname__}")


def _untag(d: dict[str, Any]) -> Any:
    if len(d) == 1:
        if "__tuple__" in d:
            return tuple(d["__tuple__"])
        if "__dict__" in d:
            return {k: v for k, v in d["__dict__"]}
    return d


def dumps_exact(value: Any) -> str:
    """JSON text from which :func:`loads_exact` rebuilds *value* with the same types.

    Raises:
        UnencodableError: *value* holds something other than None, bool, int, float, str,
            list, tuple or dict.
    """
    return json.dumps(_tag(value), separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def loads_exact(text: str) -> Any:
    """The value written by :func:`dumps_exact`."""
    return json.loads(text, object_hook=_untag)


def meta_to_dict(meta: TraceMeta) -> dict[str, Any]:
    """Every field of *meta* (devices as dicts of their fields)."""
    out = {f.name: getattr(meta, f.name) for f in dataclasses.fields(meta)}
    out["devices"] = [
        {f.name: getattr(d, f.name) for f in dataclasses.fields(d)} for d in meta.devices
    ]
    return out


def meta_from_dict(d: dict[str, Any]) -> TraceMeta:
    """Inverse of :func:`meta_to_dict`."""
    d = dict(d)
    d["devices"] = [DeviceInfo(**x) for x in d.get("devices", [])]
    return TraceMeta(**d)


# --------------------------------------------------------------------------------------------
# tables <-> Arrow


def _object_column(values: np.ndarray) -> tuple[pa.Array, dict[str, Any]]:
    kinds = {type(v) for v in values}
    if kinds <= {type(None)}:
        return pa.nulls(len(values), pa.string()), {"kind": "none"}
    if kinds <= {str, type(None)}:
        return pa.array(values, type=pa.string(), from_pandas=False), {"kind": "str"}
    enc = [None if v is None else dumps_exact(v) for v in values]
    return pa.array(enc, type=pa.string()), {"kind": "json"}


def _categorical_column(s: pd.Series) -> tuple[pa.Array, dict[str, Any]]:
    cats = s.cat.categories
    spec: dict[str, Any] = {
        "kind": "category",
        "categories_dtype": str(cats.dtype),
        "ordered": bool(s.cat.ordered),
    }
    if cats.dtype.kind in "iuf":
        dictionary = pa.array(cats.to_numpy())
    else:
        values = cats.to_numpy(dtype=object)
        if any(type(v) is not str for v in values):
            raise UnencodableError(f"categories of {s.name!r} are not all strings")
        dictionary = pa.array(values, type=pa.string())
    codes = s.cat.codes.to_numpy()
    spec["codes_dtype"] = str(codes.dtype)
    indices = pa.array(codes.astype(np.int32), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary), spec


def table_to_arrow(df: pd.DataFrame) -> tuple[pa.RecordBatch, dict[str, dict[str, Any]]]:
    """One trace table as an Arrow table, and per column how to rebuild it exactly.

    Raises:
        UnencodableError: a column holds values that cannot be stored exactly.
    """
    arrays = []
    specs: dict[str, dict[str, Any]] = {}
    for col in df.columns:
        s = df[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            arr, spec = _categorical_column(s)
        elif isinstance(s.dtype, pd.StringDtype):
            arr = pa.array(s.to_numpy(dtype=object, na_value=None), type=pa.string())
            spec = {"kind": "pdstr", "dtype": str(s.dtype)}
        elif s.dtype == np.dtype(object):
            arr, spec = _object_column(s.to_numpy())
        elif s.dtype.kind in "iufb":
            arr, spec = pa.array(s.to_numpy()), {"kind": "numpy", "dtype": str(s.dtype)}
        else:
            raise UnencodableError(f"column {col!r} has dtype {s.dtype}")
        arrays.append(arr)
        specs[str(col)] = spec
    if not isinstance(df.index, pd.RangeIndex) or df.index.start != 0 or df.index.step != 1:
        raise UnencodableError("table index is not a RangeIndex from 0")
    return pa.RecordBatch.from_arrays(arrays, names=[str(c) for c in df.columns]), specs


def _column_from_arrow(arr: pa.ChunkedArray, spec: dict[str, Any], n: int) -> Any:
    kind = spec["kind"]
    if kind == "numpy":
        return arr.to_numpy().astype(spec["dtype"], copy=False)
    if kind == "category":
        if arr.num_chunks != 1:
            raise CacheCorruptError("a categorical column is not one dictionary chunk")
        chunk = arr.chunk(0)
        codes = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        cats_dtype = spec["categories_dtype"]
        dictionary = chunk.dictionary
        if cats_dtype in ("object",) or cats_dtype.startswith(("str", "string")):
            values = dictionary.to_pylist()
        else:
            values = dictionary.to_numpy(zero_copy_only=False)
        cats = pd.Index(values, dtype=cats_dtype)
        cat = pd.Categorical.from_codes(
            codes.astype(spec["codes_dtype"]), categories=cats, ordered=spec["ordered"]
        )
        return cat
    if kind == "pdstr":
        got = arr.to_pandas().array
        if str(got.dtype) == spec["dtype"]:
            return got
        return pd.array(arr.to_pylist(), dtype=spec["dtype"])  # pragma: no cover - other pandas
    out = np.empty(n, dtype=object)
    if kind == "none" or arr.null_count == n:
        out[:] = None
        return pd.Series(out, dtype=object, copy=False)
    values = arr.to_pylist()
    if kind == "json":
        values = [None if v is None else loads_exact(v) for v in values]
    out[:] = values
    return pd.Series(out, dtype=object, copy=False)  # a Series: no str-dtype inference


def table_from_arrow(
    tbl: pa.Table | pa.RecordBatch, specs: dict[str, dict[str, Any]]
) -> pd.DataFrame:
    """The DataFrame :func:`table_to_arrow` was given (same columns, dtypes and values)."""
    if isinstance(tbl, pa.RecordBatch):
        tbl = pa.Table.from_batches([tbl])
    n = tbl.num_rows
    index = pd.RangeIndex(n)
    data = {}
    for name in specs:
        col = _column_from_arrow(tbl.column(name), specs[name], n)
        if isinstance(col, pd.Series):
            col.index = index
        data[name] = col
    return pd.DataFrame(data, index=index)


def _ipc_bytes(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)  # one batch even when empty: keeps the dictionaries
    return bytes(sink.getvalue())


def _read_ipc(data: bytes) -> pa.Table:
    return ipc.open_file(pa.BufferReader(data)).read_all()


# --------------------------------------------------------------------------------------------
# the cache


@dataclass
class LoadOutcome:
    """How one cached load went."""

    status: str
    """``hit`` | ``built`` (no entry: parsed and stored) | ``rebuilt`` (a bad entry was
    removed, parsed and stored) | ``uncacheable`` (parsed; a value cannot be stored exactly)
    | ``bypass`` (cache not used) | ``unwritable`` (parsed; the entry could not be written)."""
    key: str | None = None
    note: str | None = None
    entry_bytes: int = 0


@dataclass
class AreaInfo:
    """Entries of one cache area."""

    entries: int = 0
    stale_entries: int = 0
    bytes: int = 0


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


class EntryStore:
    """Checked, atomically written entries under ``ROOT/<area>``: a JSON document and named
    tables (Arrow IPC files), each file with its size and CRC-32 in the manifest."""

    def __init__(
        self, root: Path, area: str, current: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        self.base = root / area
        self.tmp = root / "tmp"
        self.area = area
        self.current = current
        """The versions an entry must carry to be current (None: not known here)."""

    def path(self, key: str) -> Path:
        return self.base / key[:2] / key

    def read(
        self, key: str, expect: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
        """The document and tables stored under *key*, after every check.

        Raises:
            FileNotFoundError: no entry.
            CacheCorruptError: the entry fails a check (the caller removes it).
        """
        d = self.path(key)
        try:
            text = (d / MANIFEST).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise
        except (OSError, UnicodeDecodeError) as e:
            raise CacheCorruptError(f"manifest unreadable: {e}") from None
        try:
            man = json.loads(text)
        except ValueError:
            raise CacheCorruptError("manifest is not JSON") from None
        if not isinstance(man, dict) or man.get("versions") != expect:
            raise CacheCorruptError("written by another gpuscope / model / code version")
        if man.get("key") != key:
            raise CacheCorruptError("manifest does not match its key")
        tables = {}
        try:
            for name, t in man["files"].items():
                try:
                    data = (d / t["file"]).read_bytes()
                except OSError as e:
                    raise CacheCorruptError(f"{t['file']}: {e}") from None
                if len(data) != t["bytes"] or _crc(data) != t["crc32"]:
                    raise CacheCorruptError(f"{t['file']}: size or checksum differs")
                tbl = _read_ipc(data)
                if tbl.num_rows != t["rows"] or tbl.column_names != list(t["columns"]):
                    raise CacheCorruptError(f"{t['file']}: rows or columns differ")
                tables[name] = table_from_arrow(tbl, t["columns"])
            return man["doc"], tables
        except CacheCorruptError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, pa.ArrowException) as e:
            raise CacheCorruptError(f"entry unreadable: {type(e).__name__}: {e}") from None

    def write(
        self,
        key: str,
        versions: dict[str, Any],
        doc: dict[str, Any],
        tables: dict[str, pd.DataFrame],
    ) -> int:
        """Store an entry; returns its bytes (0 when another writer stored *key* first).

        Raises:
            UnencodableError: a table cannot be stored exactly (nothing is written).
            OSError: the cache directory is not writable.
        """
        files: dict[str, bytes] = {}
        listing = {}
        for i, (name, df) in enumerate(tables.items()):
            batch, specs = table_to_arrow(df)
            data = _ipc_bytes(batch)
            fname = f"{i}.arrow"
            files[fname] = data
            listing[name] = {
                "file": fname,
                "bytes": len(data),
                "crc32": _crc(data),
                "rows": batch.num_rows,
                "columns": specs,
            }
        manifest = {
            "key": key,
            "versions": versions,
            "created_unix_ns": time.time_ns(),
            "files": listing,
            "doc": doc,
        }
        text = json.dumps(manifest, allow_nan=False)
        tmp = self.tmp / f"{self.area}.{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            (tmp / MANIFEST).write_text(text, encoding="utf-8")
            final = self.path(key)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError:
                if final.exists():  # another process stored it first: keep theirs
                    return 0
                raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return sum(len(b) for b in files.values()) + len(text)

    def remove(self, key: str) -> None:
        """Remove an entry (renamed away first, so readers never see half of it)."""
        d = self.path(key)
        if not d.exists():
            return
        trash = self.tmp / f"trash.{self.area}.{key}.{uuid.uuid4().hex[:8]}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(d, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def entries(self) -> Iterator[Path]:
        """Entry directories, in key order."""
        if not self.base.is_dir():
            return
        for sub in sorted(self.base.iterdir()):
            if sub.is_dir():
                yield from sorted(p for p in sub.iterdir() if p.is_dir())

    def is_stale(self, d: Path) -> bool:
        """True when the entry at *d* is unreadable or (when known) of other versions."""
        try:
            man = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
            ok = isinstance(man, dict) and isinstance(man.get("versions"), dict)
        except (OSError, ValueError):
            return True
        return not ok or (self.current is not None and man["versions"] != self.current())

    def info(self) -> AreaInfo:
        out = AreaInfo()
        for d in self.entries():
            out.entries += 1
            out.bytes += _dir_bytes(d)
            out.stale_entries += self.is_stale(d)
        return out

    def clear(self, *, stale_only: bool = False) -> AreaInfo:
        gone = AreaInfo()
        for d in list(self.entries()):
            stale = self.is_stale(d)
            if stale_only and not stale:
                continue
            gone.entries += 1
            gone.stale_entries += stale
            gone.bytes += _dir_bytes(d)
            self.remove(d.name)
        return gone


def _dir_bytes(d: Path) -> int:
    with contextlib.suppress(OSError):
        return sum(f.stat().st_size for f in d.iterdir() if f.is_file())
    return 0


class TraceCache:
    """The cache under :func:`cache_dir` (see the module docstring).

    ``traces`` holds parsed Traces; ``results`` holds what callers derive from them (the
    per-rank summaries of :mod:`reports.parallel`), keyed and versioned by those callers
    (*result_versions* tells ``info``/``clear`` which results entries are current).
    """

    def __init__(
        self,
        root: str | Path | None = None,
        result_versions: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.root = cache_dir(root)
        self.traces = EntryStore(self.root, "traces", versions)
        self.results = EntryStore(self.root, "results", result_versions)

    # -- identities --------------------------------------------------------------------------

    def _stat_record(self, path: Path) -> tuple[Path, str, list[int], str | None]:
        st = path.stat()
        ident = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
        apath = str(path.resolve())
        rec_path = self.root / "stat" / f"{_sha(apath.encode()).hexdigest()[:40]}.json"
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            rec = json.loads(rec_path.read_text(encoding="utf-8"))
            if rec["path"] == apath and rec["stat"] == ident and len(rec["digest"]) == 64:
                return rec_path, apath, ident, str(rec["digest"])
        return rec_path, apath, ident, None

    def known_digest(self, path: Path) -> str | None:
        """The digest recorded for *path* when the file is unchanged since, else None (cheap)."""
        try:
            return self._stat_record(path)[3]
        except OSError:
            return None

    def digest(self, path: Path) -> str:
        """Content digest of *path*, from the stat record when the file is unchanged.

        Raises:
            OSError: the file cannot be read.
        """
        rec_path, apath, ident, known = self._stat_record(path)
        if known is not None:
            return known
        digest = file_digest(path)
        if path.stat().st_mtime_ns == ident[1]:  # not rewritten while hashing
            with contextlib.suppress(OSError):
                _atomic_write(
                    rec_path, json.dumps({"path": apath, "stat": ident, "digest": digest})
                )
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
        return str(_sha(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:40])

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


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


# --------------------------------------------------------------------------------------------
# cached readers


def read_kineto_cached(
    path: Path, cache: TraceCache | None, key: str | None = None
) -> tuple[list[Trace], LoadOutcome]:
    """One Kineto file (as :func:`collectors.kineto.read_kineto` reads it), through *cache*
    (*key*: its entry key when the caller has computed it already)."""
    from collectors.kineto import read_kineto

    def read() -> list[Trace]:
        return [read_kineto(path)]

    if cache is None:
        return read(), LoadOutcome("bypass")
    return cache.load("kineto", [path], read, key=key)


def read_nsys_cached(
    sqlite: Sequence[Path],
    reps: Sequence[Path],
    cache: TraceCache | None,
    key: str | None = None,
) -> tuple[list[Trace], LoadOutcome]:
    """Nsight Systems exports read as one run (ranks are assigned across them), through *cache*.

    ``.nsys-rep`` inputs are not cached (they are exported with ``nsys`` each time; analyse the
    exported ``.sqlite`` to benefit from the cache).
    """
    from collectors.nsys import read_nsys_files

    def read() -> list[Trace]:
        return read_nsys_files(list(sqlite), list(reps))

    if cache is None or reps:
        note = "nsys-rep inputs are not cached" if reps else None
        return read(), LoadOutcome("bypass", note=note)
    return cache.load("nsys", list(sqlite), read, key=key)
