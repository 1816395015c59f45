"""What a candidate is compared with, and how it is chosen (docs/gating.md §3, §5).

* ``--baseline BASE.json``: that one summary's metrics; an environment that differs from the
  candidate's is compared anyway, with a note.
* ``--store URL``: the benchmark (``--name``, or the branch's only one), then the last K runs
  of its **latest environment segment** — the newest run and the runs before it with the same
  fingerprint, back to the first fingerprint change.  A candidate whose fingerprint differs
  from that segment's is not compared (no baseline runs, every series insufficient, the
  differing fields listed); no run of the benchmark on the branch at all is an input error.

Pure: the store hands in its newest runs (:class:`StoredRun`) and loads the metrics of the
runs chosen here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from analyzers.gate.environment import Environment, environment_record
from analyzers.gate.metrics import MetricValue
from collectors.errors import InputError, UsageError


@dataclass(frozen=True)
class Baseline:
    """What the candidate is compared with; ``runs`` newest first."""

    kind: Literal["file", "store"]
    runs: tuple[Mapping[str, MetricValue], ...]
    run_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class StoredRun:
    """One recorded run as the store lists it (newest first) for segment selection."""

    run_id: int
    commit: str | None
    testbed_id: int
    fingerprint: str
    """The fingerprint stored with the run's testbed."""
    env: Environment


@dataclass(frozen=True)
class Segment:
    """The runs of the latest environment segment chosen as the baseline (newest first)."""

    run_ids: tuple[int, ...]
    commits: tuple[str | None, ...]
    env: Environment | None
    """Environment of the latest segment (None: no run of the benchmark on the branch)."""
    mismatch: tuple[str, ...] = ()
    """How the candidate's environment differs from the latest segment's (then no runs)."""


@dataclass(frozen=True)
class BaselineRuns:
    """A store baseline: the chosen runs' metrics (newest first) and their segment."""

    runs: tuple[dict[str, MetricValue], ...]
    run_ids: tuple[int, ...]
    commits: tuple[str | None, ...]
    segment_env: Environment | None
    """Environment of the latest segment (None: no run of the benchmark on the branch)."""
    mismatch: tuple[str, ...] = ()
    """How the candidate's environment differs from the latest segment's (then ``runs=()``)."""


@dataclass(frozen=True)
class BaselinePlan:
    """The baseline of one gate decision, its description for the verdict document
    (``{"kind", "label", "run_ids", "commits", "environment", ...}``) and the notes to show."""

    baseline: Baseline
    info: dict[str, Any]
    notes: tuple[str, ...] = field(default=())


def latest_segment(newest_first: Sequence[StoredRun], candidate: Environment) -> Segment:
    """The leading runs that share the newest run's testbed, if the candidate's fingerprint
    is that testbed's; else no run and the differences (module docstring)."""
    if not newest_first:
        return Segment((), (), None)
    latest = newest_first[0]
    if latest.fingerprint != candidate.fingerprint:
        return Segment((), (), latest.env, tuple(candidate.differences(latest.env)))
    seg = []
    for run in newest_first:
        if run.testbed_id != latest.testbed_id:
            break
        seg.append(run)
    return Segment(tuple(r.run_id for r in seg), tuple(r.commit for r in seg), latest.env)


def benchmark_name(names: Sequence[str], branch: str) -> str:
    """The store's only benchmark on *branch* (``--name`` omitted).

    Raises:
        UsageError: none or several.
    """
    if len(names) != 1:
        raise UsageError(
            f"pass --name: the store holds {len(names)} benchmarks on branch '{branch}'"
            + (f" ({', '.join(names[:10])})" if names else "")
        )
    return names[0]


def file_baseline(
    metrics: Mapping[str, MetricValue], env: Environment, candidate: Environment, label: str
) -> BaselinePlan:
    """One baseline summary (``--baseline``), noting an environment that differs."""
    notes: tuple[str, ...] = ()
    if env.fingerprint != candidate.fingerprint:
        notes = ("baseline environment differs: " + "; ".join(env.differences(candidate)),)
    info = {
        "kind": "file",
        "label": label,
        "run_ids": [],
        "commits": [],
        "environment": environment_record(env),
    }
    return BaselinePlan(Baseline("file", (metrics,)), info, notes)


def store_baseline(found: BaselineRuns, *, name: str, branch: str, store: str) -> BaselinePlan:
    """The store's baseline runs of (*name*, *branch*) as a plan.

    Raises:
        InputError: no run of the benchmark on the branch (names the store).
    """
    if found.segment_env is None:
        raise InputError(
            f"no baseline: no run of '{name}' on branch '{branch}' "
            f"(record one with: gpuscope record SUMMARY.json --store ... --name {name} "
            f"--branch {branch})",
            path=store,
        )
    notes: tuple[str, ...] = ()
    if found.mismatch:
        notes = (
            "environment differs from the latest baseline segment ("
            + "; ".join(found.mismatch)
            + "): not compared",
        )
    info = {
        "kind": "store",
        "label": f"{store} {name}@{branch}, last {len(found.run_ids)} run(s)",
        "store": store,
        "branch": branch,
        "run_ids": list(found.run_ids),
        "commits": list(found.commits),
        "environment": environment_record(found.segment_env),
    }
    return BaselinePlan(Baseline("store", found.runs, found.run_ids), info, notes)
