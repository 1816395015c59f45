"""Identities of what the cache stores: content digests, code fingerprints and versions, and the
checksums of stored parts."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import pickle
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collectors import model
from collectors.version import VERSION

CACHE_FORMAT = 2
"""Bumped whenever the layout of entries changes (2: every manifest carries a checksum of its
whole content, document included)."""
_CHUNK = 1 << 20


def sha256(data: bytes | None = None) -> Any:
    """A SHA-256 hash object, fed *data* when given."""
    h = hashlib.sha256()
    if data is not None:
        h.update(data)
    return h


def crc32(data: bytes) -> str:
    """CRC-32 of *data* as 8 hex digits (the table files' check)."""
    return f"{zlib.crc32(data):08x}"


def json_checksum(doc: Any) -> str:
    """SHA-256 (hex) of *doc* as canonical JSON (sorted keys, no spaces, ASCII).

    A JSON document read back from disk gives the same text, so an edited or damaged document
    (a changed number, a dropped key) gives another checksum.

    Raises:
        ValueError: *doc* holds NaN or an infinity (never written by the cache).
    """
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return str(sha256(text.encode()).hexdigest())


def value_digest(value: Any) -> str:
    """SHA-256 (hex) of *value* pickled in its :func:`canonical` form: the same in every
    process for equal values (raises what pickling raises for an unpicklable one)."""
    return hashlib.sha256(pickle.dumps(canonical(value), protocol=5)).hexdigest()


def canonical(value: Any) -> Any:
    """*value* with every set and frozenset replaced by its elements in a fixed order, through
    dataclasses, mappings, lists and tuples (each tagged with its type); anything else as it
    is.  A set's own order follows its elements' hashes, and a string's hash changes from one
    process to the next (``PYTHONHASHSEED``), so a pickled set (the peak table's
    ``unverified`` keys, say) differs between two runs of one command."""
    if isinstance(value, (set, frozenset)):
        items = [canonical(x) for x in value]
        items.sort(key=lambda x: (type(x).__name__, repr(x)))
        return ("set", _type_name(value), tuple(items))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (
            "dataclass",
            _type_name(value),
            tuple((f.name, canonical(getattr(value, f.name))) for f in fields),
        )
    if isinstance(value, Mapping):
        items = tuple((canonical(k), canonical(v)) for k, v in value.items())
        return ("mapping", _type_name(value), items)
    if isinstance(value, (list, tuple)):
        return ("sequence", _type_name(value), tuple(canonical(x) for x in value))
    return value


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def file_digest(path: Path) -> str:
    """SHA-256 of the whole file's bytes (hex)."""
    h = sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return str(h.hexdigest())


def _package_files(here: Path) -> list[Path]:
    """Every ``*.py`` file of the package at *here*, its subpackages' included, and its
    ``data/`` files, in a stable order."""
    files = [p for p in here.rglob("*.py") if "__pycache__" not in p.parts]
    files += [p for p in here.glob("data/*") if p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(here).as_posix())


@functools.cache
def source_fingerprint(*packages: str) -> str:
    """Hash of the named packages' ``*.py`` files (subpackages included) and ``data/`` files.

    Keys that include it change whenever that code changes, so results of old code are never
    served (a conservative rule: any edit, even a comment, invalidates).
    """
    import importlib.util

    h = sha256()
    for pkg in packages:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            h.update(f"{pkg}:missing".encode())
            continue
        here = Path(next(iter(spec.submodule_search_locations)))
        for p in _package_files(here):
            h.update(f"{pkg}/{p.relative_to(here).as_posix()}".encode())
            with contextlib.suppress(OSError):
                h.update(p.read_bytes())
    return str(h.hexdigest())


def code_fingerprint() -> str:
    """:func:`source_fingerprint` of ``collectors`` (the readers and the trace model)."""
    return source_fingerprint("collectors")


@functools.cache
def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour shapes the tables."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    return {"pandas": pd.__version__, "numpy": np.__version__, "pyarrow": pa.__version__}


def versions() -> dict[str, Any]:
    """What an entry must have been written by to be used (read at each call: tests patch
    ``MODEL_VERSION``)."""
    return {
        "cache_format": CACHE_FORMAT,
        "model_version": model.MODEL_VERSION,
        "tool_version": VERSION,
        "code": code_fingerprint(),
        "libraries": library_versions(),
    }
