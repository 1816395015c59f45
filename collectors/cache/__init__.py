"""Columnar cache of parsed traces: each input's Traces as Arrow IPC files + a JSON manifest.

Re-analysing or re-reporting a trace reads its four tables back from Arrow (no JSON or SQLite
parsing), which is what makes a second ``gpuscope analyze`` near-instant.  Full description,
including the trade-offs below: ``docs/scale.md`` §2.

Where: ``$GPUSCOPE_CACHE_DIR``, else ``~/.cache/gpuscope``.  Layout::

    ROOT/traces/<key[:2]>/<key>/manifest.json   versions, checksums, per trace: meta, tables
    ROOT/traces/<key[:2]>/<key>/<n>.arrow       one Arrow IPC file per (trace, table)
    ROOT/results/<key[:2]>/<key>/...            per-rank results (reports.summary), alike
    ROOT/stat/<hash of the absolute path>.json  path → (size, mtime, ctime, inode) → digest,
                                                checksum

**Key** of an entry: a hash of the cache format, :data:`collectors.model.MODEL_VERSION`,
gpuscope's version, a fingerprint of the ``collectors`` package's source code (so that a fixed
reader never serves traces parsed by the old one), the reader (``kind``) and, per input file,
its base name (Kineto ranks may come from the name) and the SHA-256 digest of its **full
content**.  Hashing a file is far cheaper than parsing it (≈0.4 GB/s vs ≈20 MB/s), and is skipped
when the file's ``(size, mtime_ns, ctime_ns, inode, device)`` equal those recorded with its
digest in ``ROOT/stat`` (as ``git`` does for its index): a file rewritten in place changes its
ctime, which no user-level tool can set back.

**Trust**: nothing read from the cache is believed without checks, and every stored part
carries one.  The manifest must carry the current versions, the expected key and its own
SHA-256 over everything else in it (the document included: a trace's meta, a rank's results);
each table file must have the recorded size and CRC-32 checksum, column names and row count; a
``ROOT/stat`` record must match its own SHA-256.  Any failure (a truncated or edited file, a
missing file, an entry written by another version) removes the entry (or ignores the record);
the trace is parsed, the results computed or the file hashed again, a new entry written, and
:attr:`TraceCache.notes` gets one line saying so (``gpuscope analyze`` prints it once).
Entries are written into ``ROOT/tmp`` and renamed into place (atomic on one file system);
concurrent writers of one key keep the first.

**Exactness**: int64/float64 columns are stored as is; categoricals as Arrow dictionaries with
the pandas dtype of their categories recorded; object columns (``comm_args``, ``payload``,
``input_dims``...) as strings, or as JSON text with tags that keep tuples, non-string dict
keys, big integers and NaN.  A value that cannot be stored exactly (any other Python type)
makes that input uncacheable: it is parsed every time, never stored approximately.

Modules: :mod:`~collectors.cache.hashing` (digests, fingerprints, versions),
:mod:`~collectors.cache.exact_json` and :mod:`~collectors.cache.arrow_tables` (the two codecs),
:mod:`~collectors.cache.entries` (the checked entry store), :mod:`~collectors.cache.trace_cache`
(the cache of parsed Traces), :mod:`~collectors.cache.results` (per-rank results, versioned by
the caller), :mod:`~collectors.cache.readers` (readers through the trace cache),
:mod:`~collectors.cache.spill` (a rank's numeric columns memory-mapped from the cache's
``spill`` directory when its analysis would not fit in memory).

The names below are imported from their modules on first use (``from collectors.cache import
TraceCache`` works; importing the package alone loads nothing else, so ``--no-cache`` pays for
none of it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collectors.cache.arrow_tables import table_from_arrow, table_to_arrow
    from collectors.cache.entries import MANIFEST, AreaInfo, EntryStore
    from collectors.cache.errors import CacheCorruptError, UnencodableError
    from collectors.cache.exact_json import dumps_exact, loads_exact, meta_from_dict, meta_to_dict
    from collectors.cache.hashing import (
        CACHE_FORMAT,
        code_fingerprint,
        file_digest,
        library_versions,
        source_fingerprint,
        versions,
    )
    from collectors.cache.readers import LoadOutcome, read_kineto_cached, read_nsys_cached
    from collectors.cache.results import RankResult, ResultStore
    from collectors.cache.trace_cache import (
        CACHE_ENV,
        TABLES,
        CacheInfo,
        TraceCache,
        cache_dir,
    )

_WHERE = {
    "table_from_arrow": "arrow_tables",
    "table_to_arrow": "arrow_tables",
    "MANIFEST": "entries",
    "AreaInfo": "entries",
    "EntryStore": "entries",
    "CacheCorruptError": "errors",
    "UnencodableError": "errors",
    "dumps_exact": "exact_json",
    "loads_exact": "exact_json",
    "meta_from_dict": "exact_json",
    "meta_to_dict": "exact_json",
    "CACHE_FORMAT": "hashing",
    "code_fingerprint": "hashing",
    "file_digest": "hashing",
    "library_versions": "hashing",
    "source_fingerprint": "hashing",
    "versions": "hashing",
    "read_kineto_cached": "readers",
    "read_nsys_cached": "readers",
    "RankResult": "results",
    "ResultStore": "results",
    "CACHE_ENV": "trace_cache",
    "TABLES": "trace_cache",
    "CacheInfo": "trace_cache",
    "LoadOutcome": "readers",
    "TraceCache": "trace_cache",
    "cache_dir": "trace_cache",
}

__all__ = [
    "CACHE_ENV",
    "CACHE_FORMAT",
    "MANIFEST",
    "TABLES",
    "AreaInfo",
    "CacheCorruptError",
    "CacheInfo",
    "EntryStore",
    "LoadOutcome",
    "RankResult",
    "ResultStore",
    "TraceCache",
    "UnencodableError",
    "cache_dir",
    "code_fingerprint",
    "dumps_exact",
    "file_digest",
    "library_versions",
    "loads_exact",
    "meta_from_dict",
    "meta_to_dict",
    "read_kineto_cached",
    "read_nsys_cached",
    "source_fingerprint",
    "table_from_arrow",
    "table_to_arrow",
    "versions",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'collectors.cache' has no attribute {name!r}")
    return getattr(importlib.import_module(f"collectors.cache.{module}"), name)
