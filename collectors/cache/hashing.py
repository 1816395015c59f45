"""Identities of what the cache stores: content digests, code fingerprints and versions, and the
checksums of stored parts."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import zlib
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
