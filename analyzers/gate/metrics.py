"""The metrics the regression gate reads from a JSON summary (schema_version 1).

Each metric has a *value* (the run's figure), optionally per-step *samples* (the evidence
for the Mann–Whitney test) or per-call *stats* (count, mean, standard deviation; evidence for
Welch's test), a unit and a direction (``lower`` or ``higher`` is better).  Definitions
(docs/gating.md §2); "median" is :func:`analyzers.stats.median`:

=========================  =====  =========================================================
series key                 unit   value
=========================  =====  =========================================================
``step_time_ns``           ns     median over steps of the step time, where a step's time
                                  is the largest ``duration_ns`` of that step over ranks
                                  (a synchronous step ends with its slowest rank)
``exposed_comm_ns``        ns     median over steps of the largest per-rank exposed
                                  communication of the step (``steps[].exposed_comm_ns``);
                                  without steps, the largest ``overlap.exposed_comm_ns``
``overlap_pct``            %      smallest ``overlap.overlap_pct`` over ranks
``gpu_idle_pct``           %      largest ``temporal.idle_pct`` over ranks; samples are the
                                  per-step ``100·idle_ns/gpu_duration_ns`` (the step on the
                                  GPU clock) of the worst rank
``kernel_time_ns[K]``      ns     mean duration per call of kernel K over all ranks
                                  (Σ total_ns / Σ count), stats pooled over ranks
``busbw_GBps[C S]``        GB/s   ``ranks[].collectives[]`` rows of collective C and size
                                  bucket S ≥ 256 MiB: median busbw, the worst rank's figure
``energy_per_step_mj``     mJ     Σ over nodes of ``run.nvml[].energy_per_step_mj``
=========================  =====  =========================================================

Each series is read from the one key the writer (``reports/summary.py``) writes; sections a
summary lacks (collectives, NVML counters) give no metric; nothing is invented.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from analyzers.gate.statistics import CallStats, pool
from analyzers.stats import median
from collectors.summary.schema import RankEntry, StepRow, Summary

Direction = Literal["lower", "higher"]
Compare = Literal["relative", "absolute"]

BUSBW_MIN_BYTES = 256 * 1024 * 1024
"""Collective size buckets starting below this are latency-bound and not gated."""

KERNELS_RECORDED = 20
"""How many kernels (by summed total time) a summary contributes; the gate uses the top few."""


@dataclass(frozen=True)
class MetricSpec:
    """A gateable metric and its documented defaults (overridable in the rules file).

    ``fail`` / ``warn`` are in percent of the baseline for ``relative`` metrics and in the
    metric's own unit (percentage points) for ``absolute`` ones; ``floor`` is the smallest
    absolute change (in the metric's unit) that can count as a regression.
    """

    name: str
    unit: str
    direction: Direction
    compare: Compare
    fail: float
    warn: float
    floor: float
    description: str


_TABLE: tuple[tuple[Any, ...], ...] = (
    # name, unit, direction, compare, fail (% or pp), warn, floor (unit), description
    ("step_time_ns", "ns", "lower", "relative", 3.0, 2.0, 200_000.0, "step time (slowest rank)"),
    ("exposed_comm_ns", "ns", "lower", "relative", 10.0, 5.0, 200_000.0, "exposed comm per step"),
    ("overlap_pct", "%", "higher", "absolute", 10.0, 5.0, 0.0, "comm overlapped by compute"),
    ("gpu_idle_pct", "%", "lower", "absolute", 5.0, 2.0, 0.0, "GPU idle in the window"),
    ("kernel_time_ns", "ns", "lower", "relative", 5.0, 3.0, 500.0, "mean time per kernel call"),
    ("busbw_GBps", "GB/s", "higher", "relative", 10.0, 5.0, 2.0, "collective bus bandwidth"),
    ("energy_per_step_mj", "mJ", "lower", "relative", 5.0, 3.0, 0.0, "GPU energy per step"),
)

METRICS: dict[str, MetricSpec] = {row[0]: MetricSpec(*row) for row in _TABLE}
"""Every metric the gate knows, by name (the rules file may only name these)."""


@dataclass(frozen=True)
class MetricValue:
    """One series of one run: ``key`` is ``metric`` or ``metric[qualifier]``."""

    key: str
    metric: str
    value: float
    samples: tuple[float, ...] = ()
    stats: CallStats | None = None
    rank_by: float = field(default=0.0, compare=False)
    """Ordering weight among series of one metric (kernels: Σ total_ns)."""

    @property
    def spec(self) -> MetricSpec:
        return METRICS[self.metric]


def series_key(metric: str, qualifier: str | None = None) -> str:
    """``metric`` or ``metric[qualifier]``."""
    return metric if qualifier is None else f"{metric}[{qualifier}]"


def metric_of(key: str) -> str:
    """The metric name of a series key (``kernel_time_ns[gemm]`` → ``kernel_time_ns``)."""
    return key.split("[", 1)[0]


def per_step(
    ranks: Iterable[Iterable[tuple[int, float]]],
    combine: Callable[[list[float]], float],
    warmup_steps: int = 0,
) -> list[float]:
    """Combine one per-step figure over ranks, step by step.

    *ranks* holds, per rank, ``(step id, figure)`` pairs; the figures of one step id are
    combined (``max``: the worst rank); steps are ordered by id and the first *warmup_steps*
    dropped.
    """
    by_step: dict[int, list[float]] = {}
    for rows in ranks:
        for sid, v in rows:
            by_step.setdefault(sid, []).append(v)
    ordered = [by_step[k] for k in sorted(by_step)][warmup_steps:]
    return [float(combine(vs)) for vs in ordered]


def _steps(
    ranks: Sequence[RankEntry], figure: Callable[[StepRow], float | None]
) -> list[list[tuple[int, float]]]:
    out = []
    for rank in ranks:
        rows = [(row["step"], v) for row in rank["steps"] if (v := figure(row)) is not None]
        out.append(rows)
    return out


def _idle_pct(row: StepRow) -> float | None:
    # the step on the GPU clock (docs/metrics.md §7); older summaries: the host range
    d = row.get("gpu_duration_ns", row["duration_ns"])
    return None if d <= 0 else 100.0 * float(row["idle_ns"]) / float(d)


def _kernels(ranks: Sequence[RankEntry]) -> list[MetricValue]:
    acc: dict[str, list[tuple[int, float, float, float]]] = {}
    for rank in ranks:
        for row in rank["kernel_summary"]:
            count, total = row["count"], float(row["total_ns"])
            if count <= 0:
                continue
            std = row["stddev_ns"]
            acc.setdefault(row["name"], []).append(
                (count, total, total / count, 0.0 if std is None else float(std))
            )
    out = []
    for name, rows in acc.items():
        total = sum(r[1] for r in rows)
        stats = pool([CallStats(n=r[0], mean=r[2], std=r[3]) for r in rows])
        out.append(
            MetricValue(
                key=series_key("kernel_time_ns", name),
                metric="kernel_time_ns",
                value=total / stats.n,
                stats=stats,
                rank_by=total,
            )
        )
    out.sort(key=lambda m: (-m.rank_by, m.key))
    return out[:KERNELS_RECORDED]


def _large_buckets() -> frozenset[str]:
    """Labels of :data:`analyzers.comm.SIZE_BUCKETS` whose sizes are all ≥ 256 MiB."""
    from analyzers.comm import SIZE_BUCKETS

    return frozenset(label for label, lo, _ in SIZE_BUCKETS if lo >= BUSBW_MIN_BYTES)


def _busbw(ranks: Sequence[RankEntry]) -> list[MetricValue]:
    """Worst (smallest) ``median_busbw_gbps`` per (collective, size bucket) over the ranks'
    ``collectives[]`` rows, for the buckets of messages ≥ 256 MiB (``>=256MiB``); rows without
    a bus bandwidth (``null``) are skipped."""
    large = _large_buckets()
    worst: dict[str, float] = {}
    for rank in ranks:
        for row in rank.get("collectives", []):
            bw = row["median_busbw_gbps"]
            if bw is None or row["size_bucket"] not in large:
                continue
            key = series_key("busbw_GBps", f"{row['collective']} {row['size_bucket']}")
            worst[key] = min(float(bw), worst.get(key, math.inf))
    return [MetricValue(key=k, metric="busbw_GBps", value=v) for k, v in sorted(worst.items())]


def _energy(summary: Summary) -> MetricValue | None:
    """Σ over nodes of ``run.nvml[].energy_per_step_mj`` (nodes without the figure skipped)."""
    run = summary.get("run")
    nodes = run["nvml"] if run is not None else []
    figures = [v for node in nodes if (v := node["energy_per_step_mj"]) is not None]
    if not figures:
        return None
    return MetricValue("energy_per_step_mj", "energy_per_step_mj", float(sum(figures)))


def extract_metrics(summary: Summary, *, warmup_steps: int = 0) -> dict[str, MetricValue]:
    """Every gateable series of one summary, by key (definitions in the module docstring).

    Args:
        summary: a validated JSON summary (:func:`collectors.summary.reader.read_summary`).
        warmup_steps: leading steps (by step id) to leave out of per-step samples.
    """
    ranks = summary["ranks"]
    out: list[MetricValue] = []

    step = per_step(_steps(ranks, lambda r: float(r["duration_ns"])), max, warmup_steps)
    if step:
        out.append(MetricValue("step_time_ns", "step_time_ns", median(step), tuple(step)))

    exposed = per_step(_steps(ranks, lambda r: float(r["exposed_comm_ns"])), max, warmup_steps)
    if exposed:
        out.append(
            MetricValue("exposed_comm_ns", "exposed_comm_ns", median(exposed), tuple(exposed))
        )
    elif ranks:
        worst = max(float(r["overlap"]["exposed_comm_ns"]) for r in ranks)
        out.append(MetricValue("exposed_comm_ns", "exposed_comm_ns", worst))

    ov = [v for r in ranks if (v := r["overlap"]["overlap_pct"]) is not None]
    if ov:
        out.append(MetricValue("overlap_pct", "overlap_pct", float(min(ov))))

    idle = [(v, r) for r in ranks if (v := r["temporal"]["idle_pct"]) is not None]
    if idle:
        v, worst_rank = max(idle, key=lambda t: t[0])
        samples = per_step(_steps([worst_rank], _idle_pct), max, warmup_steps)
        out.append(MetricValue("gpu_idle_pct", "gpu_idle_pct", float(v), tuple(samples)))

    out += _kernels(ranks)
    out += _busbw(ranks)
    energy = _energy(summary)
    if energy is not None:
        out.append(energy)
    return {m.key: m for m in out}
