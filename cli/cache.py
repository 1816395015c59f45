"""``gpuscope cache info`` and ``gpuscope cache clear``: the parse and results cache.

The cache (:mod:`collectors.cache`; docs/scale.md §2) lives in ``$GPUSCOPE_CACHE_DIR``, else
``~/.cache/gpuscope``.  Entries are never evicted automatically; ``clear`` removes them all (or,
with ``--stale``, only those written by another gpuscope, model or code version, which are
never read again).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from collectors.cache import TraceCache

DIR_HELP = "Cache directory (default: $GPUSCOPE_CACHE_DIR, else ~/.cache/gpuscope)."
STALE_HELP = (
    "Remove only stale entries (written by another gpuscope, trace-model or code version, or "
    "unreadable); keep the current ones."
)
AREA_LABELS = {"traces": "parsed traces", "results": "per-rank results"}


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _open(cache_dir: Path | None) -> TraceCache:
    from collectors.cache import TraceCache
    from reports.summary.tasks import result_versions

    return TraceCache(cache_dir, result_versions=result_versions)


def run_info(cache_dir: Path | None = None) -> list[str]:
    """The lines ``gpuscope cache info`` prints."""
    cache = _open(cache_dir)
    info = cache.info()
    lines = [f"cache: {info.root}"]
    for area, a in info.areas.items():
        lines.append(
            f"{AREA_LABELS.get(area, area)}: {a.entries} entries ({a.stale_entries} stale), "
            f"{_mib(a.bytes)}"
        )
    lines.append(f"total: {info.entries} entries, {_mib(info.bytes)}")
    return lines


def run_clear(cache_dir: Path | None = None, stale: bool = False) -> list[str]:
    """Clear the cache; the lines ``gpuscope cache clear`` prints."""
    cache = _open(cache_dir)
    gone = cache.clear(stale_only=stale)
    what = "stale entries" if stale else "entries"
    return [f"removed {gone.entries} {what} ({_mib(gone.bytes)}) from {gone.root}"]


def register(app: typer.Typer) -> None:
    """Add ``cache info`` and ``cache clear`` to *app*."""
    cache_app = typer.Typer(
        help="Inspect or clear the cache of parsed traces and per-rank results.",
        no_args_is_help=True,
    )

    @cache_app.command("info")
    def info(
        cache_dir: Annotated[
            Path | None, typer.Option("--dir", metavar="DIR", help=DIR_HELP)
        ] = None,
    ) -> None:
        """Where the cache is, how many entries it holds (and how many are stale), its size."""
        for line in run_info(cache_dir):
            typer.echo(line)

    @cache_app.command("clear")
    def clear(
        cache_dir: Annotated[
            Path | None, typer.Option("--dir", metavar="DIR", help=DIR_HELP)
        ] = None,
        stale: Annotated[bool, typer.Option("--stale", help=STALE_HELP)] = False,
    ) -> None:
        """Remove cached entries: the next analysis parses its traces again."""
        for line in run_clear(cache_dir, stale):
            typer.echo(line)

    app.add_typer(cache_app, name="cache")
