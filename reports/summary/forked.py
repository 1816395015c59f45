"""A rank's sections on two CPUs: this process and one forked helper share the section list.

One rank's summary work is a list of independent jobs: every rank section of
:data:`~reports.summary.registry.RANK_SECTIONS` and every run-section reducer's ``extract``
(:data:`~reports.summary.many_ranks.RUN_REDUCERS`), each ``fn(trace, options, inputs)``.  With a
spare CPU (:func:`collectors.kineto.spare_cpu`), a trace of at least :data:`MIN_EVENTS` rows and
the memory a helper may need (:data:`HELPER_BYTES_PER_MODEL_BYTE`),
:func:`entry_and_digest` forks one helper; this process takes jobs from the front of the list,
the helper from the back (a shared pair of counters under one lock), so the two balance
themselves whatever each job costs; the list is in the order of :data:`FRONT`, the other
jobs, then :data:`BACK`, so that jobs that derive the same tables from the trace
(:mod:`analyzers.memo`, one memo per process) run in the same process.  The helper pickles
its results back through a pipe.  Once this process has no job left, it drops what its jobs
derived from the trace (:func:`analyzers.memo.forget`) and hands the freed pages back
(:func:`collectors.heap.release_freed_memory`) before it waits for the helper: the two finish
together by design, the critical path's what-ifs (its last stage and one of its largest) in the
helper, so the process tree's peak was this process's tables beside that stage (the 300 MB
generated trace: median peak tree PSS 723 → 648 MiB over 5 runs each).

The result is exactly the serial one (:func:`~reports.summary.assemble.rank_entry` and
:func:`~reports.summary.many_ranks.rank_digest`, tested):

* every job is a pure function of the trace (sections do not change it), so where it runs does
  not change its value; the entry and the digest are assembled in registry order;
* a job that raises (in either process), or a helper that fails (fork refused, killed, a
  result that does not pickle), is simply run again here, in the serial order, so errors are
  raised exactly as the serial code does.

For the run's last rank, the critical-path job also combines the section over every rank
(:attr:`~reports.summary.many_ranks.RunReducer.early`): being the list's last job, the helper
claims it first, so the combine overlaps this process's other sections.

``GPUSCOPE_SECTION_PROCS=1`` keeps every job in this process; ``2`` forks whatever the size of
the trace (tests).  The many-rank workers (:mod:`reports.summary.executors`) never fork: they
already fill the CPUs.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Sequence
from typing import Any

from analyzers import memo
from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.forking import fork_helper
from collectors.heap import release_freed_memory
from collectors.model import Trace
from reports.summary.many_ranks import RUN_REDUCERS, RankDigest, early_job
from reports.summary.registry import ALWAYS_WRITTEN, RANK_SECTIONS, RUN_SECTIONS

MIN_EVENTS = 50_000
"""Fork from this many host + GPU rows on (below it the fork and the pickling cost more than the
second CPU saves)."""
HELPER_BYTES_PER_MODEL_BYTE = 8
"""Memory the helper may need per byte of the model's tables (the critical path of the 300 MB
generated trace: about 870 MiB over a 115 MiB model): with less available, the sections stay in
this process (which would need that memory one section after the other, not twice at once)."""
ENV = "GPUSCOPE_SECTION_PROCS"
FRONT = ("serving", "roofline", "occupancy", "kernel_summary")
"""Jobs this process takes first, in this order: serving and the roofline share the op-cost
tables (:mod:`analyzers.op_models`; on the MTIA trace 60 ms of each one's 100 ms when it
runs alone), computed once when both run in one process."""
BACK = ("idle", "launch", "comm", "collectives", "comm_skew", "run", "critical_path")
"""Jobs the helper takes first, from the end: the critical path (the longest job, with the
run's combine on its last rank), then those that share the collectives table
(:func:`analyzers.collectives.table.build_collectives`: 17 ms of each of three jobs on a
47 MB rank)."""

Job = Callable[[Trace, AnalysisOptions, AnalysisInputs], Any]


def jobs(
    alone: bool = False, parts: bool = True, earlier: Sequence[RankDigest] = ()
) -> list[tuple[str, str, Job]]:
    """``(where, key, fn)`` in the order the serial code runs them: ``entry`` for a rank
    section, ``digest`` for a run section's extract — ``alone`` (when *alone*, for a reducer
    with :attr:`~reports.summary.many_ranks.RunReducer.alone`) for the extract and the
    section of the rank alone, as a pair, ``value`` for that section only when the rank's
    *parts* are not kept (nothing will combine or cache them) and the reducer has
    :attr:`~reports.summary.many_ranks.RunReducer.value_alone`, or ``early`` (the rank is
    the run's last, analysed after the *earlier* digests, and the reducer has
    :attr:`~reports.summary.many_ranks.RunReducer.early`) for the extract and the section
    combined with theirs (:func:`~reports.summary.many_ranks.early_job`; without the extract
    when the *parts* are not kept and the reducer has
    :attr:`~reports.summary.many_ranks.RunReducer.value_early`)."""
    out: list[tuple[str, str, Job]] = [("entry", k, fn) for k, fn in RANK_SECTIONS]
    for key, fn in RUN_SECTIONS:
        red = RUN_REDUCERS.get(key)
        if red is None:
            continue
        if earlier and red.has_early and all(key in d.parts for d in earlier):
            out.append(("early", key, early_job(red, fn, key, earlier, parts)))
        elif alone and not parts and red.value_alone is not None:
            out.append(("value", key, _step(red.value_alone, fn)))
        elif alone and red.alone is not None:
            out.append(("alone", key, _step(red.alone, fn)))
        else:
            out.append(("digest", key, _step(red.extract, fn)))
    return out


def _step(step: Any, fn: Any) -> Job:
    return lambda trace, options, inputs: step(fn, trace, options, inputs)


def wanted(trace: Trace) -> bool:
    """Whether to fork a helper for *trace*'s jobs (module docstring)."""
    from collectors.kineto import spare_cpu

    setting = os.environ.get(ENV, "").strip()
    if setting == "1" or not hasattr(os, "fork"):
        return False
    if setting == "2":
        return True
    if not spare_cpu() or len(trace.host) + len(trace.gpu) < MIN_EVENTS:
        return False
    from reports.summary.planning import available_memory_bytes

    return available_memory_bytes() >= HELPER_BYTES_PER_MODEL_BYTE * trace.nbytes


def entry_and_digest(
    trace: Trace,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    alone: bool = False,
    parts: bool = True,
    earlier: Sequence[RankDigest] = (),
) -> tuple[dict[str, Any], RankDigest]:
    """The rank's summary entry and digest, on two CPUs when :func:`wanted` (module docstring);
    *alone*: the rank is the run's only one (its digest then carries the run sections that
    have a :attr:`~reports.summary.many_ranks.RunReducer.alone`); *parts*: False when the
    digest's parts will be neither combined nor cached (with *alone*: a section that can be
    computed without its part then has none, :func:`jobs`); *earlier*: the digests of the
    run's other ranks, when this is its last (the digest then carries the run sections that
    have a :attr:`~reports.summary.many_ranks.RunReducer.early`, combined over them all)."""
    todo = jobs(alone, parts, earlier)
    results = _run_split(todo, trace, options, inputs) if wanted(trace) else {}
    values = [
        results[i] if i in results else fn(trace, options, inputs)
        for i, (_, _, fn) in enumerate(todo)
    ]
    entry: dict[str, Any] = {"rank": trace.rank}
    digest = RankDigest(trace.rank, trace.meta)
    for (where, key, _), value in zip(todo, values, strict=True):
        if where == "digest":
            digest.parts[key] = value
        elif where == "alone":
            digest.parts[key], digest.alone[key] = value
        elif where == "value":
            digest.alone[key] = value
        elif where == "early":
            part, digest.early[key] = value
            if part is not None:  # None: not kept (:attr:`RunReducer.value_early`)
                digest.parts[key] = part
        elif value is not None or key in ALWAYS_WRITTEN:
            entry[key] = value
    return entry, digest


def _run_split(
    todo: list[tuple[str, str, Job]], trace: Trace, options: AnalysisOptions, inputs: AnalysisInputs
) -> dict[int, Any]:
    """Values of the jobs, by position: those this process claimed from the front and those
    the helper claimed from the back and returned; a job missing from the result (the helper
    failed on it, or the helper failed) is left to the caller."""
    import multiprocessing

    try:
        claimed = multiprocessing.get_context("fork").Array("q", [0, len(todo) - 1])
        order = claim_order(todo)
    except (OSError, ImportError, ValueError):
        return {}
    try:
        helper = fork_helper(lambda fd: _helper(todo, order, trace, options, inputs, claimed, fd))
    except OSError:
        return {}
    out: dict[int, Any] = {}
    try:
        while (at := _claim(claimed, front=True)) is not None:
            i = order[at]
            try:
                out[i] = todo[i][2](trace, options, inputs)
            except Exception:  # run again by the caller, in the serial order: its error
                continue
        memo.forget(trace)  # this process's share is done: its derived tables go, and their
        release_freed_memory()  # pages, before the helper's last stage (module docstring)
        data = helper.read()
        helper.reap_later()  # a whole pickle is the helper's success; its exit is not awaited
        with contextlib.suppress(Exception):
            out.update(pickle.loads(data))
    finally:
        helper.stop()  # nothing once read and reaped
    return out


def claim_order(todo: Sequence[tuple[str, str, Job]]) -> list[int]:
    """The jobs' positions in *todo* in the order they are claimed: :data:`FRONT`'s, the
    others', then :data:`BACK`'s (each as listed, the others in *todo*'s order)."""
    keys = [key for _, key, _ in todo]
    front = [keys.index(k) for k in FRONT if k in keys]
    back = [keys.index(k) for k in BACK if k in keys]
    middle = [i for i in range(len(todo)) if i not in front and i not in back]
    return [*front, *middle, *back]


def _claim(claimed: Any, front: bool) -> int | None:
    """The next unclaimed job from the front (this process) or the back (the helper)."""
    with claimed.get_lock():
        lo, hi = claimed[0], claimed[1]
        if lo > hi:
            return None
        if front:
            claimed[0] = lo + 1
            return int(lo)
        claimed[1] = hi - 1
        return int(hi)


def _helper(
    todo: list[tuple[str, str, Job]],
    order: list[int],
    trace: Trace,
    options: AnalysisOptions,
    inputs: AnalysisInputs,
    claimed: Any,
    fd: int,
) -> int:
    """The forked helper: run the jobs it claims from the back, write the values pickled."""
    out: dict[int, Any] = {}
    while (at := _claim(claimed, front=False)) is not None:
        i = order[at]
        try:
            out[i] = todo[i][2](trace, options, inputs)
        except BaseException:
            continue
    try:
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        data = pickle.dumps({}, protocol=pickle.HIGHEST_PROTOCOL)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return 0
