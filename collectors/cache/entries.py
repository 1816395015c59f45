"""Checked, atomically written cache entries: a manifest (a JSON document and the list of the
entry's table files) and one Arrow IPC file per table.

Every part carries a check verified on read: the manifest must carry the expected versions and
key and its own SHA-256 (``checksum``, over everything else in it: key, versions, the file list
and the document, so an edited number in the document is caught); each table file must have the
size and CRC-32 recorded in the manifest, its column names and row count.  Any failure raises
:class:`~collectors.cache.errors.CacheCorruptError`; the caller removes the entry and rebuilds.
Entries are written into ``ROOT/tmp`` and renamed into place (atomic on one file system);
concurrent writers of one key keep the first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectors.cache.errors import CacheCorruptError
from collectors.cache.hashing import crc32, json_checksum

if TYPE_CHECKING:
    import pandas as pd

MANIFEST = "manifest.json"


@dataclass
class AreaInfo:
    """Entries of one cache area."""

    entries: int = 0
    stale_entries: int = 0
    bytes: int = 0


class EntryStore:
    """Entries under ``ROOT/<area>/<key[:2]>/<key>/`` (see the module docstring)."""

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

    def _manifest(self, key: str, expect: dict[str, Any]) -> dict[str, Any]:
        """The manifest of *key*, after its version, key and checksum checks."""
        try:
            text = (self.path(key) / MANIFEST).read_text(encoding="utf-8")
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
        claimed = man.pop("checksum", None)
        try:
            ok = claimed == json_checksum(man)
        except ValueError:  # NaN or Infinity written into it
            ok = False
        if not ok:
            raise CacheCorruptError("manifest checksum differs")
        return man

    def read(
        self, key: str, expect: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
        """The document and tables stored under *key*, after every check.

        Raises:
            FileNotFoundError: no entry.
            CacheCorruptError: the entry fails a check (the caller removes it).
        """
        import pyarrow as pa

        from collectors.cache.arrow_tables import read_ipc, table_from_arrow

        man = self._manifest(key, expect)
        d = self.path(key)
        tables = {}
        try:
            for name, t in man["files"].items():
                try:
                    data = (d / t["file"]).read_bytes()
                except OSError as e:
                    raise CacheCorruptError(f"{t['file']}: {e}") from None
                if len(data) != t["bytes"] or crc32(data) != t["crc32"]:
                    raise CacheCorruptError(f"{t['file']}: size or checksum differs")
                tbl = read_ipc(data)
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
        from collectors.cache.arrow_tables import ipc_bytes, table_to_arrow

        files: dict[str, bytes] = {}
        listing = {}
        for i, (name, df) in enumerate(tables.items()):
            batch, specs = table_to_arrow(df)
            data = ipc_bytes(batch)
            fname = f"{i}.arrow"
            files[fname] = data
            listing[name] = {
                "file": fname,
                "bytes": len(data),
                "crc32": crc32(data),
                "rows": batch.num_rows,
                "columns": specs,
            }
        manifest: dict[str, Any] = {
            "key": key,
            "versions": versions,
            "created_unix_ns": time.time_ns(),
            "files": listing,
            "doc": doc,
        }
        manifest["checksum"] = json_checksum(manifest)
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


def atomic_write(path: Path, text: str) -> None:
    """Write *text* to *path* through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
