"""Many-rank analysis: per-rank work in worker processes or on a Dask cluster, small results.

:func:`analyze_paths` gives the same summary as ``build_summary(load_traces(paths))`` (tested),
but never holds more than one rank's Trace per worker:

* **map** (one task per input file; all Nsight Systems exports of a run form one task, since
  their ranks are assigned across files): load the Traces through the parse cache
  (:mod:`collectors.cache`), compute every per-rank section of
  :data:`reports.summary.RANK_SECTIONS`, and return the rank's JSON entry plus the small inputs
  the cross-rank sections need (:data:`RUN_REDUCERS`: the trace meta; for ``comm_skew`` the
  rank's window collectives with GPU work; for ``run`` the rank's own object — KB, not the
  trace).  With the cache, both are stored per input and reused while nothing changed.
* **reduce** (in the calling process): order the ranks as ``load_traces`` does, reject a second
  file claiming a rank, and run :data:`reports.summary.RUN_SECTIONS` on stand-in Traces built
  from those inputs.  A run section without a reducer is computed from whole Traces re-read in
  the caller (correct, not scalable; noted in :attr:`ParallelResult.notes`).

Executors: ``scheduler=None`` runs the tasks in a pool of ``spawn`` worker processes sized from
the CPUs, the available memory and an estimated per-task peak (in this process when there is
one task or one worker, or every task's results are cached); ``"processes"`` forces the
pool, ``"sync"`` forces this process; an address (``tcp://host:8786``) runs them on that Dask
distributed cluster, whose workers must see the input files (and the cache directory) at the
same paths.

A file that cannot be read does not stop the others: it is reported in
:attr:`ParallelResult.errors` by path, and the summary covers the rest (recommended exit code 2,
results still written; docs/scale.md §4).  Definitions and figures: ``docs/scale.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import math
import multiprocessing
import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analyzers.options import AnalysisOptions
from collectors import errors as errors_mod
from collectors.errors import GpuscopeError, InputError, UsageError
from collectors.kineto import gzip_isize, usable_cpus
from collectors.model import (
    Trace,
    TraceMeta,
    annotation_table,
    counter_table,
    gpu_table,
    host_table,
)

if TYPE_CHECKING:
    from collectors.cache import TraceCache

ProgressFn = Callable[[int, int, str], None]
"""``progress(done, total, label)``: called once per finished input (label = its file name)."""

WORKER_BASE_BYTES = 200 * 2**20
"""Planned memory of a worker before its task (measured: about 125 MiB with gpuscope's modules
imported; the rest is margin)."""
PARSE_BYTES_PER_JSON_BYTE = 5.0
"""Planned peak bytes of parsing + analysing per byte of uncompressed Kineto JSON.  Set for the
whole-text reader (46.9 MB generated ranks: 401 MiB, planned 6 % above); the chunked reader
peaks at 246–258 MiB on those ranks, so the plan now errs 65 % on the safe side
(docs/performance.md §C)."""
PARSE_BYTES_PER_SQLITE_BYTE = 4.0
"""The same per byte of Nsight Systems SQLite export."""
CACHED_BYTES_PER_ENTRY_BYTE = 4.0
"""Peak bytes of loading a cached entry + analysing per byte of its Arrow files."""
MEMORY_HEADROOM = 0.8
"""Share of the available memory the pool may plan to use."""


# --------------------------------------------------------------------------------------------
# what the tasks are and return


@dataclass(frozen=True)
class Unit:
    """One task: a Kineto file, or every Nsight Systems export of the run."""

    kind: str
    """``kineto`` | ``nsys``."""
    paths: tuple[Path, ...]
    reps: tuple[Path, ...] = ()

    @property
    def label(self) -> str:
        names = [p.name for p in (*self.paths, *self.reps)]
        return names[0] if len(names) == 1 else f"{len(names)} nsys exports"


@dataclass(frozen=True)
class FileError:
    """An input that could not be analysed."""

    path: str | None
    message: str
    error: str
    """Class name of the :class:`~collectors.errors.GpuscopeError` (``InputError``, ...), or
    ``internal`` for an unexpected failure inside the task."""
    exit_code: int = 2

    def line(self) -> str:
        """``PATH: message``, as the CLI prints it."""
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_exception(self) -> GpuscopeError:
        """The error as the sequential path would have raised it."""
        cls = getattr(errors_mod, self.error, None)
        if not (isinstance(cls, type) and issubclass(cls, GpuscopeError)):
            cls = InputError
        return cls(self.message, path=self.path)


@dataclass
class RankDigest:
    """The small per-rank inputs of the cross-rank sections (instead of the Trace)."""

    rank: int
    meta: TraceMeta
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class UnitResult:
    """What a task sends back: per-rank JSON entries and digests, or an error."""

    index: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    digests: list[RankDigest] = field(default_factory=list)
    error: FileError | None = None
    cache_status: str | None = None
    peak_rss_bytes: int | None = None
    """Peak resident memory of the worker process during this task (None in this process)."""
    seconds: float = 0.0
    worker: str = ""


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


# --------------------------------------------------------------------------------------------
# cross-rank sections from small inputs

SectionFn = Callable[..., Any]


def _bare_trace(digest: RankDigest) -> Trace:
    """A Trace with the rank's meta and empty tables (shallow copies of one set, built once:
    building typed empty frames costs milliseconds, and a many-rank reduce needs two per rank)."""
    return Trace(meta=digest.meta, **{k: t.copy(deep=False) for k, t in _empty_tables().items()})


@functools.cache
def _empty_tables() -> dict[str, Any]:
    return {
        "gpu": gpu_table(),
        "host": host_table(),
        "annotations": annotation_table(),
        "counters": counter_table(),
    }


def _skew_extract(
    fn: SectionFn, trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]
) -> Any:
    """The rank's window collectives with GPU work: all that ``cross_rank_skew`` reads."""
    from analyzers.comm import window_collectives

    c = window_collectives(trace, options)
    if c.empty:
        return c.reset_index(drop=True)
    return c[c["n_gpu_rows"] > 0].reset_index(drop=True)


def _skew_standin(digest: RankDigest, table: Any) -> Trace:
    """A Trace whose window collectives under ``all_events`` are exactly *table*: one
    stream-0 ``gpu`` row per collective, ``gpu_row`` renumbered to it."""
    t = _bare_trace(digest)
    n = len(table)
    t.gpu = gpu_table({"stream": np.zeros(n, dtype=np.int64)})
    if n:
        table = table.assign(gpu_row=np.arange(n, dtype=np.int64))
    t.__dict__["collectives"] = table  # the cached_property's slot
    return t


def _skew_combine(
    fn: SectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    extras: Mapping[str, Any],
) -> Any:
    standins = [_skew_standin(d, d.inputs[key]) for d in digests]
    return fn(standins, dataclasses.replace(options, all_events=True), extras)


def _per_rank_extract(
    fn: SectionFn, trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]
) -> Any:
    """The rank's own object of the section's ``ranks`` list (the section run on it alone)."""
    value = fn([trace], options, {})
    return None if value is None else value["ranks"][0]


def _per_rank_combine(
    fn: SectionFn,
    digests: Sequence[RankDigest],
    key: str,
    options: AnalysisOptions,
    extras: Mapping[str, Any],
) -> Any:
    """The section on meta-only Traces, its ``ranks`` list replaced by the workers' objects."""
    value = fn([_bare_trace(d) for d in digests], options, extras)
    if value is not None:
        value["ranks"] = [d.inputs[key] for d in digests]
    return value


@dataclass(frozen=True)
class RunReducer:
    """How a run section is computed from per-rank digests.

    ``extract(fn, trace, options, extras)`` runs in the worker (``fn`` is the section) and
    returns the rank's small input, kept in ``RankDigest.inputs[key]``;
    ``combine(fn, digests, key, options, extras)`` runs in the caller and returns the section's
    value.  Each pair is tested to give exactly ``fn(traces, options, extras)``.
    """

    extract: Callable[[SectionFn, Trace, AnalysisOptions, Mapping[str, Any]], Any]
    combine: Callable[
        [SectionFn, Sequence[RankDigest], str, AnalysisOptions, Mapping[str, Any]], Any
    ]


RUN_REDUCERS: dict[str, RunReducer] = {
    "comm_skew": RunReducer(_skew_extract, _skew_combine),
    "run": RunReducer(_per_rank_extract, _per_rank_combine),
}
"""Per ``RUN_SECTIONS`` key.  A section missing here is computed from whole Traces re-read
in the caller (correct, but neither small nor parallel)."""


# --------------------------------------------------------------------------------------------
# the task


def _resolve(spec: str) -> SectionFn:
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn)  # type: ignore[no-any-return]


def rank_entry(trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]) -> dict[str, Any]:
    """The rank's object of ``summary["ranks"]`` (as :func:`reports.summary.build_summary`)."""
    from reports.summary import RANK_SECTIONS

    entry: dict[str, Any] = {"rank": trace.rank}
    for key, spec in RANK_SECTIONS:
        value = _resolve(spec)(trace, options, extras)
        if value is not None or key == "device":
            entry[key] = value
    return entry


def rank_digest(trace: Trace, options: AnalysisOptions, extras: Mapping[str, Any]) -> RankDigest:
    """The rank's inputs of every run section that has a reducer."""
    from reports.summary import RUN_SECTIONS

    inputs = {}
    for key, spec in RUN_SECTIONS:
        red = RUN_REDUCERS.get(key)
        if red is not None:
            inputs[key] = red.extract(_resolve(spec), trace, options, extras)
    return RankDigest(trace.rank, trace.meta, inputs)


def result_versions() -> dict[str, Any]:
    """What a cached per-rank result must have been computed by: the trace cache's versions
    and the source of every package that shapes a summary."""
    from collectors.cache import source_fingerprint, versions

    return {**versions(), "analysis": source_fingerprint("collectors", "analyzers", "reports")}


def _result_key(trace_key: str, options: AnalysisOptions, extras: Mapping[str, Any]) -> str | None:
    """Key of the unit's per-rank results (None when *extras* cannot be fingerprinted)."""
    try:
        extras_id = hashlib.sha256(pickle.dumps(dict(extras), protocol=5)).hexdigest()
    except Exception:  # unpicklable extras: no result caching
        return None
    ident = {
        "trace": trace_key,
        "versions": result_versions(),
        "options": dataclasses.asdict(options),
        "extras": extras_id,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:40]


def _results_doc(
    entries: list[dict[str, Any]], digests: list[RankDigest]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The per-rank results as a cache document + tables (DataFrame inputs)."""
    import pandas as pd

    from collectors.cache import dumps_exact, meta_to_dict

    tables: dict[str, Any] = {}
    recs = []
    for i, d in enumerate(digests):
        inputs: dict[str, Any] = {}
        for key, value in d.inputs.items():
            if isinstance(value, pd.DataFrame):
                name = f"{i}.{key}"
                tables[name] = value
                inputs[key] = {"table": name}
            else:
                inputs[key] = {"json": dumps_exact(value)}
        recs.append({"rank": d.rank, "meta": dumps_exact(meta_to_dict(d.meta)), "inputs": inputs})
    return {"entries": dumps_exact(entries), "digests": recs}, tables


def _results_from_doc(
    doc: dict[str, Any], tables: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[RankDigest]]:
    from collectors.cache import loads_exact, meta_from_dict

    digests = []
    for rec in doc["digests"]:
        inputs = {
            k: tables[v["table"]] if "table" in v else loads_exact(v["json"])
            for k, v in rec["inputs"].items()
        }
        digests.append(RankDigest(rec["rank"], meta_from_dict(loads_exact(rec["meta"])), inputs))
    return loads_exact(doc["entries"]), digests


def _reset_peak() -> bool:
    """Reset this process's peak-RSS mark (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def read_unit(
    unit: Unit, cache: TraceCache | None, key: str | None = None
) -> tuple[list[Trace], str]:
    """The Traces of *unit* through *cache* (parsed when None); and the cache status."""
    from collectors.cache import read_kineto_cached, read_nsys_cached

    if unit.kind == "kineto":
        traces, outcome = read_kineto_cached(unit.paths[0], cache, key)
    else:
        traces, outcome = read_nsys_cached(unit.paths, unit.reps, cache, key)
    return traces, outcome.status


def run_unit(
    unit: Unit,
    index: int,
    options: AnalysisOptions,
    extras: Mapping[str, Any],
    cache_root: str | None,
    measure: bool = True,
) -> UnitResult:
    """The task: the per-rank entries and digests of *unit*, from the results cache or by
    loading it (through the trace cache) and running every rank section.

    Never raises (except ``KeyboardInterrupt``): errors come back in :attr:`UnitResult.error`.
    """
    from collectors.cache import CacheCorruptError, TraceCache, UnencodableError

    t0 = time.perf_counter()
    measured = measure and _reset_peak()
    out = UnitResult(index=index, worker=f"{os.uname().nodename}:{os.getpid()}")
    cache = TraceCache(cache_root) if cache_root is not None else None
    try:
        tkey = rkey = None
        if cache is not None and not unit.reps:
            with contextlib.suppress(OSError):  # unreadable input: the reader says why
                tkey = cache.key(unit.kind, unit.paths)
                rkey = _result_key(tkey, options, extras)
        if rkey is not None:
            try:
                doc, tables = cache.results.read(rkey, result_versions())  # type: ignore[union-attr]
                out.entries, out.digests = _results_from_doc(doc, tables)
                out.cache_status = "results"
            except FileNotFoundError:
                pass
            except (CacheCorruptError, KeyError, TypeError, ValueError):
                cache.results.remove(rkey)  # type: ignore[union-attr]
                out.entries, out.digests = [], []
        if out.cache_status is None:
            traces, out.cache_status = read_unit(unit, cache, tkey)
            for trace in traces:
                out.entries.append(rank_entry(trace, options, extras))
                out.digests.append(rank_digest(trace, options, extras))
            del traces
            if rkey is not None:
                with contextlib.suppress(UnencodableError, OSError, ValueError, TypeError):
                    doc, tables = _results_doc(out.entries, out.digests)
                    cache.results.write(rkey, result_versions(), doc, tables)  # type: ignore[union-attr]
    except GpuscopeError as e:
        out.error = FileError(e.path, e.message, type(e).__name__, e.exit_code)
    except MemoryError:
        out.error = FileError(_unit_path(unit), "out of memory while analysing it", "InputError")
    except Exception as e:  # a bug: report it against the file instead of losing the run
        out.error = _internal(unit, e)
    if out.error is not None:
        out.entries, out.digests = [], []
    out.seconds = time.perf_counter() - t0
    out.peak_rss_bytes = _peak_rss() if measured else None
    return out


def _internal(unit: Unit, e: BaseException) -> FileError:
    return FileError(
        _unit_path(unit),
        f"internal error while analysing it ({type(e).__name__}: {e}); please report it",
        "internal",
    )


def _unit_path(unit: Unit) -> str:
    return str(unit.paths[0] if len(unit.paths) + len(unit.reps) == 1 else unit.label)


# --------------------------------------------------------------------------------------------
# planning


def plan_units(paths: Sequence[str | Path]) -> list[Unit]:
    """One unit per Kineto file (duplicates removed), one for all Nsight Systems exports.

    Raises:
        InputError: a path does not exist, or a directory holds no trace.
    """
    from collectors.load import expand_inputs

    kineto, sqlite, reps = expand_inputs(paths)
    units = []
    seen: set[Path] = set()
    for p in kineto:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            units.append(Unit("kineto", (p,)))
    if sqlite or reps:
        units.append(Unit("nsys", tuple(sqlite), tuple(reps)))
    return units


def available_memory_bytes() -> int:
    """MemAvailable, or the cgroup's remaining limit when that is lower."""
    avail = None
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max":
            room = int(limit) - used
            avail = room if avail is None else min(avail, room)
    if avail is None:
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return max(0, int(avail))


def _json_bytes(path: Path) -> int:
    """Uncompressed size of a Kineto file (gzip's ISIZE trailer; at least 10x the .gz)."""
    size = path.stat().st_size
    isize = None
    with contextlib.suppress(OSError):
        isize = gzip_isize(path)
    return size if isize is None else max(isize, 10 * size)


def _cached_entry_bytes(unit: Unit, cache_root: str | None) -> int | None:
    """Bytes of the unit's cache entry when it is known without hashing anything, else None."""
    if cache_root is None or unit.reps:
        return None
    from collectors.cache import TraceCache

    cache = TraceCache(cache_root)
    digests = [cache.known_digest(p) for p in unit.paths]
    if any(d is None for d in digests):
        return None
    key = cache.key(unit.kind, list(unit.paths))
    d = cache.traces.path(key)
    if not d.is_dir():
        return None
    return sum(f.stat().st_size for f in d.iterdir() if f.is_file())


def _results_cached(
    units: Sequence[Unit],
    options: AnalysisOptions,
    extras: Mapping[str, Any],
    cache_root: str | None,
) -> bool:
    """True when every unit's per-rank results are in the cache, as far as is known without
    hashing a file (a process pool would then cost more than it saves)."""
    if cache_root is None or not units:
        return False
    from collectors.cache import TraceCache

    cache = TraceCache(cache_root)
    for u in units:
        if u.reps or any(cache.known_digest(p) is None for p in u.paths):
            return False
        try:
            rkey = _result_key(cache.key(u.kind, list(u.paths)), options, extras)
        except OSError:
            return False
        if rkey is None or not (cache.results.path(rkey) / "manifest.json").is_file():
            return False
    return True


def estimate_peak_bytes(unit: Unit, cache_root: str | None) -> int:
    """Planned peak RSS of a worker running *unit* (module constants; docs/scale.md §3)."""
    try:
        cached = _cached_entry_bytes(unit, cache_root)
        if cached is not None:
            return int(WORKER_BASE_BYTES + CACHED_BYTES_PER_ENTRY_BYTE * cached)
        if unit.kind == "kineto":
            work = PARSE_BYTES_PER_JSON_BYTE * _json_bytes(unit.paths[0])
        else:
            work = PARSE_BYTES_PER_SQLITE_BYTE * sum(p.stat().st_size for p in unit.paths)
    except OSError:
        return WORKER_BASE_BYTES
    return int(WORKER_BASE_BYTES + work)


def pool_size(
    units: Sequence[Unit], requested: int | None, cache_root: str | None
) -> tuple[int, int, int, list[str]]:
    """(workers, planned peak per worker, available memory, notes) for the local pool."""
    notes = []
    cpus = usable_cpus()
    peak = max((estimate_peak_bytes(u, cache_root) for u in units), default=WORKER_BASE_BYTES)
    avail = available_memory_bytes()
    by_memory = max(1, math.floor(avail * MEMORY_HEADROOM / peak))
    n = requested if requested is not None else cpus
    if n > by_memory:
        notes.append(
            f"{n} workers would need about {n * peak / 2**30:.1f} GiB; "
            f"{avail / 2**30:.1f} GiB available: using {by_memory}"
        )
        n = by_memory
    return max(1, min(n, len(units))), peak, avail, notes


def run_unit_in_worker(*args: Any) -> UnitResult:
    """:func:`run_unit` in a pool or Dask worker: its reads are serial (the workers already
    fill the CPUs; :mod:`collectors.kineto.parallel`)."""
    from collectors.kineto import serial_reads

    with serial_reads():
        return run_unit(*args)


# --------------------------------------------------------------------------------------------
# executors


def _run_local(
    units: list[Unit],
    args: tuple[Any, ...],
    workers: int,
    done: Callable[[UnitResult], None],
) -> None:
    """Run the tasks in a pool of *workers* spawned processes, largest inputs first."""
    order = sorted(range(len(units)), key=lambda i: -_size(units[i]))
    pending = list(order)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        futs: dict[Future[UnitResult], int] = {
            ex.submit(run_unit_in_worker, units[i], i, *args): i for i in pending
        }
        broken: list[int] = []
        while futs:
            finished, _ = wait(list(futs), return_when=FIRST_COMPLETED)
            for f in finished:
                i = futs.pop(f)
                try:
                    done(f.result())
                except BrokenProcessPool:
                    broken.append(i)
                except Exception as e:  # the task's arguments or result failed to pickle
                    done(UnitResult(index=i, error=_internal(units[i], e)))
    # a worker died (killed for memory?): retry those inputs one at a time, alone
    for i in broken:
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
            try:
                done(ex.submit(run_unit_in_worker, units[i], i, *args).result())
            except BrokenProcessPool:
                done(
                    UnitResult(
                        index=i,
                        error=FileError(
                            _unit_path(units[i]),
                            "the worker process died while analysing it (out of memory?)",
                            "InputError",
                        ),
                    )
                )


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value, protocol=5)
    except Exception:
        return False
    return True


def _size(unit: Unit) -> int:
    with contextlib.suppress(OSError):
        return sum(p.stat().st_size for p in (*unit.paths, *unit.reps))
    return 0


def _run_dask(
    address: str,
    units: list[Unit],
    args: tuple[Any, ...],
    done: Callable[[UnitResult], None],
) -> int:
    """Run the tasks on the Dask cluster at *address*; returns its number of worker threads."""
    try:
        from distributed import Client, as_completed
    except ImportError as e:  # pragma: no cover - dask is a dependency
        raise errors_mod.MissingDependencyError(
            "--scheduler needs dask[distributed]: pip install 'dask[distributed]'"
        ) from e
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"cannot connect to the Dask scheduler at {address}: {e}") from None
    with client:
        threads = sum(client.nthreads().values())
        run_id = uuid.uuid4().hex[:12]
        try:
            futures = [
                client.submit(
                    run_unit_in_worker, u, i, *args, pure=False, key=f"gpuscope-{run_id}-{i}"
                )
                for i, u in enumerate(units)
            ]
        except Exception as e:  # arguments Dask cannot serialize
            raise UsageError(
                f"cannot send the analysis to the Dask cluster ({type(e).__name__}: {e})"
            ) from None
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures, loop=client.loop):
            i = index[fut.key]
            try:
                done(fut.result())
            except Exception as e:  # KilledWorker, lost connection...
                done(
                    UnitResult(
                        index=i,
                        error=FileError(
                            _unit_path(units[i]),
                            f"the Dask task failed ({type(e).__name__}: {e})",
                            "InputError",
                        ),
                    )
                )
    return threads


# --------------------------------------------------------------------------------------------
# the entry point


def analyze_paths(
    paths: Sequence[str | Path],
    options: AnalysisOptions | None = None,
    extras: Mapping[str, Any] | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    cache_dir: str | Path | None = None,
) -> ParallelResult:
    """Analyse every input in parallel; the summary equals ``build_summary(load_traces(...))``
    over the readable inputs.

    *scheduler*: None (local processes, sized from CPUs and memory), ``"processes"``,
    ``"sync"`` (this process) or a Dask scheduler address.  *workers*: pool size (local only;
    capped by memory).  *use_cache*: read and write the parse cache (*cache_dir*, default
    :func:`collectors.cache.cache_dir`).

    Raises:
        InputError: a path does not exist, or a directory holds no trace, or no input at all
            could be analysed (with one input: that input's own error).
        UsageError: bad *scheduler*/*workers*, or the Dask scheduler cannot be reached.
    """
    from collectors.cache import cache_dir as default_cache_dir
    from reports.summary import RUN_SECTIONS, SCHEMA_VERSION, tool_version

    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    options = options or AnalysisOptions()
    extras = dict(extras or {})
    units = plan_units(paths)
    cache_root = str(default_cache_dir(cache_dir)) if use_cache else None
    args = (options, extras, cache_root)
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
        n = _run_dask(scheduler, units, args, done)
        if workers is not None:
            notes.append("--workers is ignored with --scheduler (the cluster has its workers)")
    elif scheduler in (None, "processes", "sync", "local"):
        n, _peak, _avail, size_notes = pool_size(units, workers, cache_root)
        notes += size_notes
        cached = scheduler is None and _results_cached(units, options, extras, cache_root)
        if cached:
            notes.append("every input's per-rank results are cached: read in this process")
        elif scheduler != "sync" and not _picklable((options, extras)):
            notes.append("the side inputs (extras) cannot be sent to worker processes: ran here")
            scheduler = "sync"
        if scheduler == "sync" or (
            scheduler != "processes" and (n == 1 or len(units) == 1 or cached)
        ):
            mode, n = "in-process", 1
            for i, u in enumerate(units):
                done(run_unit(u, i, *args, measure=False))
        else:
            mode = "processes"
            _run_local(units, args, n, done)
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

    ranks = [e for _, e, _ in keep]
    digests = [d for _, _, d in keep]
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpuscope", "version": tool_version()},
        "sources": sorted({d.meta.source_path for d in digests if d.meta.source_path}),
        "ranks": ranks,
    }
    whole: list[Trace] | None = None
    for key, spec in RUN_SECTIONS:
        fn = _resolve(spec)
        red = RUN_REDUCERS.get(key)
        if red is not None and all(key in d.inputs for d in digests):
            value = red.combine(fn, digests, key, options, extras)
        else:
            if whole is None:
                whole = _reload(units, keep, cache_root)
                notes.append(
                    f"run section {key!r} has no reducer in reports.parallel.RUN_REDUCERS: "
                    "computed from every Trace re-read in this process"
                )
            value = fn(whole, options, extras)
        if value is not None:
            summary[key] = value
    for r in res:
        r.entries, r.digests = [], []
    return ParallelResult(summary, file_errors, mode, n, res, notes)


def _claim_ranks(
    units: list[Unit], res: list[UnitResult], file_errors: list[FileError]
) -> list[tuple[int, dict[str, Any], RankDigest]]:
    """Ranks in ``load_traces`` order (Kineto by rank, then nsys; stable by rank); a second
    Kineto file claiming a rank is an error (as in ``read_kineto_files``)."""
    by_index = {r.index: r for r in res if r.error is None}
    owner: dict[int, RankDigest] = {}
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
                            "file per rank or name the files rank-N",
                            "InputError",
                        )
                    )
                    continue
                owner[d.rank] = d
                kineto.append((d.rank, e, d, i))
            else:
                nsys.append((d.rank, e, d, i))
    kineto.sort(key=lambda x: x[0])
    allr = sorted(kineto + nsys, key=lambda x: x[0])
    return [(i, e, d) for _, e, d, i in allr]


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
    ``progress`` callback for :func:`analyze_paths`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True)
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


__all__ = [
    "RUN_REDUCERS",
    "FileError",
    "ParallelResult",
    "RankDigest",
    "RunReducer",
    "Unit",
    "UnitResult",
    "analyze_paths",
    "available_memory_bytes",
    "estimate_peak_bytes",
    "plan_units",
    "pool_size",
    "progress_bar",
    "rank_digest",
    "rank_entry",
    "run_unit",
    "run_unit_in_worker",
]
