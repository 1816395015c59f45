"""The per-rank results area of the cache: what a caller derived from an input's Traces.

For the summary engine (:mod:`reports.summary`) that is, per rank, the rank's JSON entry, the
small parts of the run sections (a DataFrame part is stored as an Arrow table, any other value
as exact JSON) and, for a rank analysed as its run's only one, the run sections of that run
(exact JSON).  The caller keys the entries and passes in the versions they must carry
(a fingerprint of the code that computed them): this module knows nothing of the analyses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.cache.entries import EntryStore
from collectors.cache.errors import CacheCorruptError, UnencodableError
from collectors.cache.exact_json import dumps_exact, loads_exact, meta_from_dict, meta_to_dict
from collectors.model import TraceMeta

AREA = "results"


@dataclass
class RankResult:
    """One rank's cached results."""

    rank: int
    entry: dict[str, Any]
    """A JSON-ready object (stored as exact JSON)."""
    meta: TraceMeta
    parts: dict[str, Any] = field(default_factory=dict)
    """Named values: DataFrames (stored as tables) or exact-JSON values."""
    alone: dict[str, Any] = field(default_factory=dict)
    """Named JSON-ready values (stored as exact JSON; a value that cannot be is left out, for
    the caller to compute again)."""


class ResultStore(EntryStore):
    """Entries under ``ROOT/results``, each the results of one input's ranks.

    *versions* (given by the caller) says what an entry must have been computed by; without it
    entries can be listed and cleared but not read or written.
    """

    def __init__(self, root: Path, versions: Callable[[], dict[str, Any]] | None = None) -> None:
        super().__init__(root, AREA, versions)

    def _versions(self) -> dict[str, Any]:
        if self.current is None:
            raise ValueError("the results store was opened without the versions of its results")
        return self.current()

    def read_ranks(self, key: str) -> list[RankResult]:
        """The ranks stored under *key*, after every check of the entry.

        Raises:
            FileNotFoundError: no entry.
            CacheCorruptError: the entry fails a check (the caller removes it).
        """
        import pandas as pd

        doc, tables = self.read(key, self._versions())
        try:
            out = []
            for rec in doc["ranks"]:
                parts = {}
                for name, v in rec["parts"].items():
                    parts[name] = tables[v["table"]] if "table" in v else loads_exact(v["json"])
                    if "table" in v and not isinstance(parts[name], pd.DataFrame):
                        raise CacheCorruptError(f"part {name!r} is not a table")
                entry = loads_exact(rec["entry"])
                if not isinstance(entry, dict) or not isinstance(rec["rank"], int):
                    raise CacheCorruptError("a rank's entry is not an object")
                meta = meta_from_dict(loads_exact(rec["meta"]))
                alone = {name: loads_exact(v) for name, v in rec.get("alone", {}).items()}
                out.append(RankResult(rec["rank"], entry, meta, parts, alone))
            return out
        except CacheCorruptError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CacheCorruptError(f"results unreadable: {type(e).__name__}: {e}") from None

    def write_ranks(self, key: str, ranks: Sequence[RankResult]) -> int:
        """Store the results of *ranks* under *key*; returns the entry's bytes (0 when another
        writer stored *key* first).

        Raises:
            UnencodableError: a value cannot be stored exactly (nothing is written).
            OSError: the cache directory is not writable.
        """
        import pandas as pd

        tables: dict[str, pd.DataFrame] = {}
        recs = []
        for i, r in enumerate(ranks):
            parts: dict[str, Any] = {}
            for name, value in r.parts.items():
                if isinstance(value, pd.DataFrame):
                    tname = f"{i}.{name}"
                    tables[tname] = value
                    parts[name] = {"table": tname}
                else:
                    parts[name] = {"json": dumps_exact(value)}
            alone: dict[str, str] = {}
            for name, value in r.alone.items():
                with contextlib.suppress(UnencodableError):  # left out: computed again
                    alone[name] = dumps_exact(value)
            recs.append(
                {
                    "rank": r.rank,
                    "entry": dumps_exact(r.entry),
                    "meta": dumps_exact(meta_to_dict(r.meta)),
                    "parts": parts,
                    "alone": alone,
                }
            )
        return self.write(key, self._versions(), {"ranks": recs}, tables)
