"""The task of the many-rank engine: one input's per-rank JSON entries and digests, from the
per-rank results cache or by reading the input (through the trace cache) and running every rank
section.  A task never raises: what went wrong comes back as a :class:`FileError`."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors import errors as errors_mod
from collectors.errors import GpuscopeError, InputError
from collectors.model import Trace
from reports.summary.forked import entry_and_digest
from reports.summary.many_ranks import RankDigest
from reports.summary.planning import Unit

if TYPE_CHECKING:
    from collectors.cache import TraceCache
    from collectors.cache.results import RankResult


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
class UnitResult:
    """What a task sends back: per-rank JSON entries and digests, or an error."""

    index: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    digests: list[RankDigest] = field(default_factory=list)
    error: FileError | None = None
    cache_status: str | None = None
    cache_notes: list[str] = field(default_factory=list)
    """One line per cached part of this input that failed a check and was rebuilt, and per
    rank spilled (:func:`spill`) when :func:`run_unit` had no *say* to say it at once."""
    peak_rss_bytes: int | None = None
    """Peak resident memory of the worker process during this task (None in this process)."""
    seconds: float = 0.0
    worker: str = ""


def result_versions() -> dict[str, Any]:
    """What a cached per-rank result must have been computed by: the trace cache's versions
    and the source of every package that shapes a summary."""
    from collectors.cache import source_fingerprint, versions

    return {**versions(), "analysis": source_fingerprint("collectors", "analyzers", "reports")}


def _result_key(
    unit: Unit, trace_key: str, options: AnalysisOptions, inputs: AnalysisInputs
) -> str | None:
    """Key of the unit's per-rank results (None when *inputs* cannot be fingerprinted).

    Besides the content (*trace_key*), the code, the options and the side inputs, the key holds
    the inputs' paths as spelled in this call: a rank's results name its file (``sources``,
    ``run.ranks[].source_path``, rank-claim errors), so a copy of a file elsewhere, or the same
    file spelled another way, gets its own results, never those naming another path.  (The
    parse cache below is shared by copies: it re-spells the path itself.)
    """
    from collectors.cache.hashing import value_digest

    try:
        inputs_id = value_digest(inputs)  # the same in every process (its sets in order)
    except Exception:  # unpicklable side inputs: no result caching
        return None
    ident = {
        "trace": trace_key,
        "paths": [str(p) for p in unit.paths],
        "versions": result_versions(),
        "options": dataclasses.asdict(options),
        "inputs": inputs_id,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:40]


def _to_cache(entries: list[dict[str, Any]], digests: list[RankDigest]) -> list[RankResult]:
    from collectors.cache.results import RankResult

    return [
        RankResult(d.rank, e, d.meta, d.parts, d.alone)
        for e, d in zip(entries, digests, strict=True)
    ]


def _from_cache(ranks: list[RankResult]) -> tuple[list[dict[str, Any]], list[RankDigest]]:
    return [r.entry for r in ranks], [RankDigest(r.rank, r.meta, r.parts, r.alone) for r in ranks]


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


def spill(traces: list[Trace], unit: Unit, cache_root: str | None, notes: list[str]) -> None:
    """Replace each Trace of *traces* whose analysis would not fit in the available memory by
    the same with its numeric columns spilled to the Arrow cache (:mod:`collectors.cache.spill`;
    ``GPUSCOPE_SPILL``), in place, so that the old tables are freed at once; one line in
    *notes* per rank spilled, or that could not be.

    Raises:
        UsageError: ``GPUSCOPE_SPILL`` is not ``auto``, ``always`` or ``never``.
    """
    from collectors.cache.spill import spill_mode, spill_trace, spill_wanted
    from reports.summary.planning import available_memory_bytes

    mode = spill_mode()
    if mode == "never":
        return

    def mib(n: int) -> str:
        return f"{n / 2**20:.1f} MiB"

    for i, trace in enumerate(traces):
        model, available = trace.nbytes, available_memory_bytes()
        if not spill_wanted(model, available, mode):
            continue
        from collectors.cache.trace_cache import cache_dir  # the cache's modules: only now

        root = cache_dir(cache_root)
        where = root / "spill"
        label = f"{unit_path(unit)}: rank {trace.rank}"
        why = f"{mib(model)} model, {mib(available)} of memory available"
        try:
            done = spill_trace(trace, root)
        except OSError as e:
            notes.append(f"{label}: its columns could not be spilled to {where} ({e}); {why}")
            continue
        if done is None:
            notes.append(f"{label}: not spilled, {where} is held in memory; {why}")
            continue
        traces[i] = done[0]
        notes.append(f"{label}: {mib(done[1])} of columns memory-mapped from {where} ({why})")


def run_unit(
    unit: Unit,
    index: int,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    cache_root: str | None,
    measure: bool = True,
    sole: bool = False,
    earlier: Sequence[RankDigest] | None = None,
    say: Callable[[str], None] | None = None,
) -> UnitResult:
    """The task: the per-rank entries and digests of *unit*, from the results cache or by
    loading it (through the trace cache) and running every rank section (on two CPUs when that
    pays: :mod:`reports.summary.forked`).  *sole*: the unit is the run's only one, so a unit of
    one rank also computes the run sections that can be computed from that rank alone.
    *earlier*: the unit is the run's last, analysed after these digests (in this process), so
    its last rank also computes the run sections that can be combined early
    (:attr:`~reports.summary.many_ranks.RankDigest.early`).  *say*: called with each spill
    line (:func:`spill`) as soon as it is known, which then is not in the result's notes (a
    task run in the caller's process, so that a run killed for memory has said it).

    Never raises (except ``KeyboardInterrupt``): errors come back in :attr:`UnitResult.error`.
    """
    from collectors.cache.errors import CacheCorruptError, UnencodableError

    t0 = time.perf_counter()
    measured = measure and _reset_peak()
    out = UnitResult(index=index, worker=f"{os.uname().nodename}:{os.getpid()}")
    spilled: list[str] = []  # the spill's lines not said at once
    cache = None
    if cache_root is not None:
        from collectors.cache.trace_cache import TraceCache

        cache = TraceCache(cache_root, result_versions)
    try:
        tkey = rkey = None
        if cache is not None and not unit.reps:
            with contextlib.suppress(OSError):  # unreadable input: the reader says why
                tkey = cache.key(unit.kind, unit.paths)
                rkey = _result_key(unit, tkey, options, inputs)
        if cache is not None and rkey is not None:
            try:
                out.entries, out.digests = _from_cache(cache.results.read_ranks(rkey))
                out.cache_status = "results"
            except FileNotFoundError:
                pass
            except CacheCorruptError as e:
                cache.results.remove(rkey)
                cache.note(unit_path(unit), "per-rank results", str(e), "recomputed")
                out.entries, out.digests = [], []
        if out.cache_status is None:
            traces, out.cache_status = read_unit(unit, cache, tkey)
            spill(traces, unit, cache_root, spilled)
            if say is not None:  # at once: before the sections, which may exhaust the memory
                for line in spilled:
                    say(line)
                spilled.clear()
            alone = sole and len(traces) == 1  # the run's only rank
            keep = cache is not None and rkey is not None  # the parts go to the results cache
            for n, trace in enumerate(traces, 1):
                last = earlier is not None and n == len(traces)  # the run's last rank
                before = [*(earlier or ()), *out.digests] if last else []
                entry, digest = entry_and_digest(trace, options, inputs, alone, keep, before)
                out.entries.append(entry)
                out.digests.append(digest)
            del traces
            if cache is not None and rkey is not None:
                with contextlib.suppress(UnencodableError, OSError, ValueError, TypeError):
                    cache.results.write_ranks(rkey, _to_cache(out.entries, out.digests))
    except GpuscopeError as e:
        out.error = FileError(e.path, e.message, type(e).__name__, e.exit_code)
    except MemoryError:
        out.error = FileError(unit_path(unit), "out of memory while analysing it", "InputError")
    except Exception as e:  # a bug: report it against the file instead of losing the run
        out.error = internal_error(unit, e)
    if out.error is not None:
        out.entries, out.digests = [], []
    out.cache_notes = [*(cache.notes if cache is not None else ()), *spilled]
    out.seconds = time.perf_counter() - t0
    out.peak_rss_bytes = _peak_rss() if measured else None
    return out


def internal_error(unit: Unit, e: BaseException) -> FileError:
    return FileError(
        unit_path(unit),
        f"internal error while analysing it ({type(e).__name__}: {e}); please report it",
        "internal",
    )


def unit_path(unit: Unit) -> str:
    return str(unit.paths[0] if len(unit.paths) + len(unit.reps) == 1 else unit.label)


def results_cached(
    units: Sequence[Unit],
    options: AnalysisOptions,
    inputs: AnalysisInputs,
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
            rkey = _result_key(u, cache.key(u.kind, list(u.paths)), options, inputs)
        except OSError:
            return False
        if rkey is None or not (cache.results.path(rkey) / "manifest.json").is_file():
            return False
    return True


def run_unit_in_worker(*args: Any) -> UnitResult:
    """:func:`run_unit` in a pool or Dask worker: its reads are serial (the workers already
    fill the CPUs; :mod:`collectors.kineto.parallel`)."""
    from collectors.kineto import serial_reads

    with serial_reads():
        return run_unit(*args)
