"""The metrics the regression gate reads from a JSON summary (schema_version 1).

Each metric has a *value* (the run's figure), optionally per-step *samples* (the evidence
for the Mann–Whitney test) or per-call *stats* (count, mean, standard deviation; evidence for
Welch's test), a unit and a direction (``lower`` or ``higher`` is better).  Definitions
(docs/gating.md §2):

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
                                  per-step ``100·idle_ns/duration_ns`` of the worst rank
``kernel_time_ns[K]``      ns     mean duration per call of kernel K over all ranks
                                  (Σ total_ns / Σ count), stats pooled over ranks
``busbw_GBps[C S]``        GB/s   ``collectives[]`` rows of collective C and size bucket S
                                  ≥ 256 MiB: median busbw, the worst rank's figure
``energy_per_step_mj``     mJ     median over steps of Σ over ranks of ``steps[].energy_mj``
                                  (or ``energy_j`` × 1000), else an ``energy_per_step_mj``
                                  figure summed over ranks
=========================  =====  =========================================================

Sections a summary lacks (collectives, energy) give no metric; nothing is invented.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from collectors.errors import InputError

Direction = Literal["lower", "higher"]
Compare = Literal["relative", "absolute"]

BUSBW_MIN_BYTES = 256 * 1024 * 1024
"""Collective rows with a known message size below this are latency-bound and not gated."""

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
class CallStats:
    """Per-call duration statistics: count, mean and sample standard deviation (ns)."""

    n: int
    mean: float
    std: float


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


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _ranks(summary: Mapping[str, Any], source: str | None) -> list[Mapping[str, Any]]:
    ranks = summary.get("ranks")
    if not isinstance(ranks, list) or not all(isinstance(r, Mapping) for r in ranks):
        raise InputError("summary has no 'ranks' list of objects", path=source)
    return ranks


def _step_rows(rank: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = rank.get("steps")
    if not isinstance(steps, list):
        return []
    return [s for s in steps if isinstance(s, Mapping)]


def _per_step(
    ranks: Sequence[Mapping[str, Any]],
    field_fn: Any,
    combine: Any,
    warmup_steps: int,
) -> list[float]:
    """Combine one per-step figure over ranks, step by step (by ``step`` id, else position).

    Steps are ordered by their id; the first *warmup_steps* are dropped.
    """
    by_step: dict[Any, list[float]] = {}
    for rank in ranks:
        for pos, row in enumerate(_step_rows(rank)):
            v = field_fn(row)
            if v is None:
                continue
            sid = row.get("step")
            sid = sid if isinstance(sid, int) and not isinstance(sid, bool) else pos
            by_step.setdefault(sid, []).append(v)
    ordered = [by_step[k] for k in sorted(by_step)][warmup_steps:]
    return [float(combine(vs)) for vs in ordered]


def _duration(row: Mapping[str, Any]) -> float | None:
    return _num(row.get("duration_ns"))


def _idle_pct(row: Mapping[str, Any]) -> float | None:
    d, i = _num(row.get("duration_ns")), _num(row.get("idle_ns"))
    if d is None or i is None or d <= 0:
        return None
    return 100.0 * i / d


def _energy_mj(row: Mapping[str, Any]) -> float | None:
    mj = _num(row.get("energy_mj"))
    if mj is not None:
        return mj
    j = _num(row.get("energy_j"))
    return None if j is None else 1000.0 * j


def _section_num(rank: Mapping[str, Any], section: str, key: str) -> float | None:
    sec = rank.get(section)
    return _num(sec.get(key)) if isinstance(sec, Mapping) else None


def _median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=np.float64)))


def _pooled_stats(rows: Iterable[tuple[int, float, float]]) -> CallStats | None:
    """Pool (count, mean, sample std) groups into one: the moments of the concatenation."""
    rows = [(n, m, s) for n, m, s in rows if n > 0]
    if not rows:
        return None
    n = sum(r[0] for r in rows)
    mean = sum(r[0] * r[1] for r in rows) / n
    ss = sum((r[0] - 1) * r[2] ** 2 + r[0] * (r[1] - mean) ** 2 for r in rows)
    std = math.sqrt(ss / (n - 1)) if n > 1 else 0.0
    return CallStats(n=n, mean=mean, std=std)


def _kernels(ranks: Sequence[Mapping[str, Any]]) -> list[MetricValue]:
    acc: dict[str, list[tuple[int, float, float, float]]] = {}
    for rank in ranks:
        rows = rank.get("kernel_summary")
        if not isinstance(rows, list):
            continue
        for row in rows:
            if not isinstance(row, Mapping) or not isinstance(row.get("name"), str):
                continue
            count, total = _num(row.get("count")), _num(row.get("total_ns"))
            if count is None or total is None or count <= 0:
                continue
            std = _num(row.get("stddev_ns"))
            acc.setdefault(row["name"], []).append(
                (int(count), total, total / count, 0.0 if std is None else std)
            )
    out = []
    for name, rows in acc.items():
        total = sum(r[1] for r in rows)
        stats = _pooled_stats((r[0], r[2], r[3]) for r in rows)
        assert stats is not None
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


_SIZE_KEYS = ("message_bytes", "size_bytes", "size")
"""Per-message size keys of a row (``bytes`` is not one: issue 4's rows sum it over calls)."""
_NAME_KEYS = ("collective", "name")
_BUSBW_KEYS = ("median_busbw_gbps", "busbw_gbps", "busbw_GBps")


def _size_label(n: int) -> str:
    """``1GiB``, ``256MiB``, or bytes when not a whole number of KiB/MiB/GiB."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def _large_buckets() -> frozenset[str]:
    """Labels of :data:`analyzers.comm.SIZE_BUCKETS` whose sizes are all ≥ 256 MiB."""
    from analyzers.comm import SIZE_BUCKETS

    return frozenset(label for label, lo, _ in SIZE_BUCKETS if lo >= BUSBW_MIN_BYTES)


def _busbw(summary: Mapping[str, Any], ranks: Sequence[Mapping[str, Any]]) -> list[MetricValue]:
    """Worst (smallest) busbw per (collective, size) over the rank and top-level tables.

    A row counts when it names its collective, has a busbw figure (``median_busbw_gbps``,
    else ``busbw_gbps``/``busbw_GBps``) and is known to be large: a ``size_bucket`` of
    :data:`analyzers.comm.SIZE_BUCKETS` starting at ≥ 256 MiB, or a per-message size
    (``message_bytes``/``size_bytes``/``size``) ≥ 256 MiB.  Rows of unknown size are skipped.
    """
    large = _large_buckets()
    tables = [r.get("collectives") for r in ranks] + [summary.get("collectives")]
    worst: dict[str, float] = {}
    for table in tables:
        if not isinstance(table, list):
            continue
        for row in table:
            if not isinstance(row, Mapping):
                continue
            name = next((row[k] for k in _NAME_KEYS if isinstance(row.get(k), str)), None)
            bw = next((v for k in _BUSBW_KEYS if (v := _num(row.get(k))) is not None), None)
            if name is None or bw is None:
                continue
            bucket = row.get("size_bucket")
            size = next((v for k in _SIZE_KEYS if (v := _num(row.get(k))) is not None), None)
            if isinstance(bucket, str):
                if bucket not in large:
                    continue
                label = bucket
            elif size is not None and size >= BUSBW_MIN_BYTES:
                label = _size_label(int(size))
            else:
                continue
            key = series_key("busbw_GBps", f"{name} {label}")
            worst[key] = min(bw, worst.get(key, math.inf))
    return [MetricValue(key=k, metric="busbw_GBps", value=v) for k, v in sorted(worst.items())]


def _energy(
    summary: Mapping[str, Any], ranks: Sequence[Mapping[str, Any]], warmup: int
) -> MetricValue | None:
    samples = _per_step(ranks, _energy_mj, sum, warmup)
    if samples:
        return MetricValue(
            "energy_per_step_mj", "energy_per_step_mj", _median(samples), tuple(samples)
        )
    figures = []
    for holder in [*ranks, summary]:
        for sec in (holder, holder.get("energy"), holder.get("nvml")):
            if isinstance(sec, Mapping):
                v = _num(sec.get("energy_per_step_mj"))
                if v is not None:
                    figures.append(v)
                    break
    if not figures:  # the report's run section: one figure per node (docs/report.md)
        for node in (summary.get("run") or {}).get("nvml") or []:
            v = _num(node.get("energy_per_step_mj")) if isinstance(node, Mapping) else None
            if v is not None:
                figures.append(v)
    if not figures:
        return None
    return MetricValue("energy_per_step_mj", "energy_per_step_mj", float(sum(figures)))


def extract_metrics(
    summary: Mapping[str, Any], *, warmup_steps: int = 0, source: str | None = None
) -> dict[str, MetricValue]:
    """Every gateable series of one summary, by key (definitions in the module docstring).

    Args:
        summary: a parsed JSON summary (schema_version 1).
        warmup_steps: leading steps (by step id) to leave out of per-step samples.
        source: the file name, for error messages.

    Raises:
        InputError: the summary has no ``ranks`` list.
    """
    ranks = _ranks(summary, source)
    out: list[MetricValue] = []

    step = _per_step(ranks, _duration, max, warmup_steps)
    if step:
        out.append(MetricValue("step_time_ns", "step_time_ns", _median(step), tuple(step)))

    exposed = _per_step(ranks, lambda r: _num(r.get("exposed_comm_ns")), max, warmup_steps)
    if exposed:
        out.append(
            MetricValue("exposed_comm_ns", "exposed_comm_ns", _median(exposed), tuple(exposed))
        )
    else:
        tot = [v for r in ranks if (v := _section_num(r, "overlap", "exposed_comm_ns")) is not None]
        if tot:
            out.append(MetricValue("exposed_comm_ns", "exposed_comm_ns", max(tot)))

    ov = [v for r in ranks if (v := _section_num(r, "overlap", "overlap_pct")) is not None]
    if ov:
        out.append(MetricValue("overlap_pct", "overlap_pct", min(ov)))

    idle = [(v, r) for r in ranks if (v := _section_num(r, "temporal", "idle_pct")) is not None]
    if idle:
        v, worst = max(idle, key=lambda t: t[0])
        per_step = _per_step([worst], _idle_pct, max, warmup_steps)
        out.append(MetricValue("gpu_idle_pct", "gpu_idle_pct", v, tuple(per_step)))

    out += _kernels(ranks)
    out += _busbw(summary, ranks)
    energy = _energy(summary, ranks, warmup_steps)
    if energy is not None:
        out.append(energy)
    return {m.key: m for m in out}
