"""Many-rank analysis: per-rank work in worker processes or on a Dask cluster, small results.

:func:`analyze_paths` gives the same summary as ``build_summary(load_traces(paths))`` (tested),
but never holds more than one rank's Trace per worker:

* **map** (one task per input file; all Nsight Systems exports of a run form one task, since
  their ranks are assigned across files): load the Traces through the parse cache
  (:mod:`collectors.cache`), compute every per-rank section of
  :data:`reports.summary.registry.RANK_SECTIONS`, and return the rank's JSON entry plus the small
  inputs the cross-rank sections need (:data:`reports.summary.many_ranks.RUN_REDUCERS`: the
  trace meta; for ``comm_skew`` the rank's window collectives with GPU work; for ``run`` the
  rank's own object — KB, not the trace); :mod:`reports.summary.tasks`.  With the cache, both
  are stored per input and reused while nothing changed.
* **reduce** (in the calling process): order the ranks as ``load_traces`` does, reject a second
  file claiming a rank, and assemble the summary as :func:`reports.summary.build_summary` does
  (:func:`reports.summary.assemble.summary_document`: the run sections on stand-in Traces built
  from those inputs).  A run section without a reducer is computed from whole Traces re-read in
  the caller (correct, not scalable; noted in :attr:`ParallelResult.notes`).

Executors (:mod:`reports.summary.executors`; pool size: :mod:`reports.summary.planning`):
``scheduler=None`` runs the tasks in a pool of ``spawn`` worker processes sized from
the CPUs, the available memory and an estimated per-task peak (in this process when there is
one task or one worker, or every task's results are cached, or the pool would have two workers
and every task is large enough to use both CPUs here:
:func:`~reports.summary.planning.here_on_two_cpus`); ``"processes"`` forces the
pool, ``"sync"`` forces this process; an address (``tcp://host:8786``) runs them on that Dask
distributed cluster, whose workers must see the input files (and the cache directory) at the
same paths.

A file that cannot be read does not stop the others: it is reported in
:attr:`ParallelResult.errors` by path, and the summary covers the rest (recommended exit code 2,
results still written; docs/scale.md §4).  Definitions and figures: ``docs/scale.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.errors import InputError, UsageError
from collectors.model import Trace
from reports.summary.assemble import summary_document
from reports.summary.executors import picklable, run_dask, run_local
from reports.summary.many_ranks import RankDigest
from reports.summary.planning import Unit, here_on_two_cpus, plan_units, pool_size
from reports.summary.tasks import FileError, UnitResult, read_unit, results_cached, run_unit

ProgressFn = Callable[[int, int, str], None]
"""``progress(done, total, label)``: called once per finished input (label = its file name)."""


@dataclass
class ParallelResult:
    """The summary of every readable input, and what went wrong with the others."""

    summary: dict[str, Any]
    errors: list[FileError]
    scheduler: str
    """``in-process`` | ``processes`` | the Dask scheduler address."""
    workers: int
    units: list[UnitResult]
    """Per task, in input order (entries and digests dropped to keep this small)."""
    notes: list[str] = field(default_factory=list)
    cache_notes: list[str] = field(default_factory=list)
    """One line per cached part that failed a check and was rebuilt (the CLI prints them)."""

    @property
    def exit_code(self) -> int:
        """0 when every input was analysed, else the highest error code (2 for bad input)."""
        return max((e.exit_code for e in self.errors), default=0)

    def peak_rss_by_worker(self) -> dict[str, int]:
        """Highest task peak RSS per worker process (bytes)."""
        out: dict[str, int] = {}
        for u in self.units:
            if u.peak_rss_bytes is not None:
                out[u.worker] = max(out.get(u.worker, 0), u.peak_rss_bytes)
        return out


def analyze_paths(
    paths: Sequence[str | Path],
    options: AnalysisOptions | None = None,
    inputs: AnalysisInputs | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    cache_dir: str | Path | None = None,
    say: Callable[[str], None] | None = None,
) -> ParallelResult:
    """Analyse every input in parallel; the summary equals ``build_summary(load_traces(...))``
    over the readable inputs.

    *scheduler*: None (local processes, sized from CPUs and memory), ``"processes"``,
    ``"sync"`` (this process) or a Dask scheduler address.  *workers*: pool size (local only;
    capped by memory).  *use_cache*: read and write the parse cache (*cache_dir*, default
    :func:`collectors.cache.cache_dir`).  *say*: called at once with each note of a task run
    in this process (a rank spilled to the cache: :func:`~reports.summary.tasks.spill`), which
    then is not in :attr:`ParallelResult.cache_notes`.

    Raises:
        InputError: a path does not exist, or a directory holds no trace, or no input at all
            could be analysed (with one input: that input's own error).
        UsageError: bad *scheduler*/*workers*, or the Dask scheduler cannot be reached.
    """
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    from collectors.cache.spill import spill_mode

    spill_mode()  # a bad GPUSCOPE_SPILL is one usage error, not one per input
    options = options or AnalysisOptions()
    inputs = inputs or AnalysisInputs()
    units = plan_units(paths)
    cache_root = None
    if use_cache:  # the cache's modules are not even imported without it
        from collectors.cache.trace_cache import cache_dir as default_cache_dir

        cache_root = str(default_cache_dir(cache_dir))
    args = (options, inputs, cache_root)
    results: list[UnitResult | None] = [None] * len(units)
    notes: list[str] = []
    finished = 0

    def done(r: UnitResult) -> None:
        nonlocal finished
        results[r.index] = r
        finished += 1
        if progress is not None:
            progress(finished, len(units), units[r.index].label)

    if scheduler is not None and "://" in scheduler:
        mode = scheduler
        n = run_dask(scheduler, units, args, done)
        if workers is not None:
            notes.append("--workers is ignored with --scheduler (the cluster has its workers)")
    elif scheduler in (None, "processes", "sync", "local"):
        n, _peak, _avail, size_notes = pool_size(units, workers, cache_root)
        notes += size_notes
        cached = scheduler is None and results_cached(units, options, inputs, cache_root)
        if cached:
            notes.append("every input's per-rank results are cached: read in this process")
            from collectors.kineto import early

            early.cancel()  # a read begun before the imports is not needed
        elif scheduler != "sync" and not picklable((options, inputs)):
            notes.append(
                "the side inputs (AnalysisInputs) cannot be sent to worker processes: ran here"
            )
            scheduler = "sync"
        if scheduler == "sync" or (
            scheduler != "processes"
            and (n == 1 or len(units) == 1 or cached or here_on_two_cpus(units, workers, n))
        ):
            mode, n = "in-process", 1
            for i, u in enumerate(units):
                if not cached and i + 1 < len(units) and units[i + 1].kind == "kineto":
                    from collectors.kineto import early

                    early.start(units[i + 1].paths[0], beside_work=True)  # read during this one
                last = i == len(units) - 1  # its last rank combines what can be combined early
                earlier = [d for r in results if r is not None for d in r.digests] if last else None
                sole = len(units) == 1
                done(run_unit(u, i, *args, measure=False, sole=sole, earlier=earlier, say=say))
        else:
            mode = "processes"
            run_local(units, args, n, done)
    else:
        raise UsageError(
            f"--scheduler must be a Dask address such as tcp://HOST:8786, not {scheduler!r}"
        )

    res = [r for r in results if r is not None]
    file_errors = [r.error for r in res if r.error is not None]
    keep = _claim_ranks(units, res, file_errors)
    if not keep:
        if len(file_errors) == 1:
            raise file_errors[0].to_exception()
        listed = "; ".join(e.line() for e in file_errors[:3])
        more = f" (and {len(file_errors) - 3} more)" if len(file_errors) > 3 else ""
        raise InputError(f"no input could be analysed: {listed}{more}")

    summary = summary_document(
        [e for _, e, _ in keep],
        [d for _, _, d in keep],
        options,
        inputs,
        lambda: _reload(units, keep, cache_root),
        notes,
    )
    for r in res:
        r.entries, r.digests = [], []
    cache_notes = list(dict.fromkeys(line for r in res for line in r.cache_notes))
    return ParallelResult(summary, file_errors, mode, n, res, notes, cache_notes)


def _claim_ranks(
    units: list[Unit], res: list[UnitResult], file_errors: list[FileError]
) -> list[tuple[int, dict[str, Any], RankDigest]]:
    """Ranks in ``load_traces`` order (Kineto by rank, then nsys; stable by rank); a second
    Kineto file claiming a rank is an error (as in ``read_kineto_files``)."""
    by_index = {r.index: r for r in res if r.error is None}
    owner: dict[int, RankDigest] = {}
    owner_entry: dict[int, dict[str, Any]] = {}
    kineto: list[tuple[int, dict[str, Any], RankDigest, int]] = []
    nsys: list[tuple[int, dict[str, Any], RankDigest, int]] = []
    for i, u in enumerate(units):
        r = by_index.get(i)
        if r is None:
            continue
        for e, d in zip(r.entries, r.digests, strict=True):
            if u.kind == "kineto":
                other = owner.get(d.rank)
                if other is not None:
                    file_errors.append(
                        FileError(
                            d.meta.source_path,
                            f"claims rank {d.rank} ({d.meta.rank_source}), as does "
                            f"{other.meta.source_path} ({other.meta.rank_source}); pass one "
                            "file per rank or name the files rank-N"
                            + capture_hint(e, owner_entry[d.rank]),
                            "InputError",
                        )
                    )
                    continue
                owner[d.rank], owner_entry[d.rank] = d, e
                kineto.append((d.rank, e, d, i))
            else:
                nsys.append((d.rank, e, d, i))
    kineto.sort(key=lambda x: x[0])
    allr = sorted(kineto + nsys, key=lambda x: x[0])
    return [(i, e, d) for _, e, d, i in allr]


def capture_hint(*entries: dict[str, Any]) -> str:
    """The hint of a rank claim when one of the files is a graph capture trace."""
    if any((x.get("serving") or {}).get("capture_trace") for x in entries):
        return (
            "; one of them is a CUDA/HIP-graph capture trace: pass it with --graph-capture "
            "FILE (docs/inference.md)"
        )
    return ""


def _reload(
    units: list[Unit], keep: list[tuple[int, dict[str, Any], RankDigest]], cache_root: str | None
) -> list[Trace]:
    """Whole Traces of the kept ranks, in summary order (for a run section without reducer)."""
    from collectors.cache import TraceCache

    cache = TraceCache(cache_root) if cache_root is not None else None
    traces: dict[tuple[int, int], Trace] = {}
    for i in sorted({i for i, _, _ in keep}):
        for t in read_unit(units[i], cache)[0]:
            traces[(i, t.rank)] = t
    return [traces[(i, d.rank)] for i, _, d in keep]


@contextlib.contextmanager
def progress_bar(console: Any = None, what: str = "ranks") -> Iterator[ProgressFn]:
    """A rich progress bar on stderr (hidden when stderr is not a terminal); yields the
    ``progress`` callback for :func:`analyze_paths`.  Without a terminal nothing is drawn and
    ``rich.progress`` is not even imported."""
    from rich.console import Console

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield lambda done, total, label: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task(f"analysing {what}", total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{what}: {label}")

        yield update
