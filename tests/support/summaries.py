"""Hand-built JSON summaries for tests, valid against :class:`collectors.summary.schema.Summary`.

:func:`complete` fills every required key a partial summary (or section) leaves out with a
neutral value of its type (0, 0.0, "", [], {}, ``None`` where the schema allows it), recursing
into the sections given, so a test writes only the keys it is about.  The builders below
return complete summaries; ``tests/collectors/summary/test_summary_schema.py`` checks that each one
validates, so every hand-built summary is one the reader accepts.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from collectors.summary.schema import Summary


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [_strip(t) for t in typing.get_args(tp)]
    return [tp]


def _neutral(tp: Any) -> Any:
    members = _members(tp)
    if type(None) in members:
        return None
    t = members[0]
    origin = typing.get_origin(t)
    if typing.is_typeddict(t):
        return complete({}, t)
    if origin is list:
        return []
    if origin is dict:
        return {}
    if origin is typing.Literal:
        return typing.get_args(t)[0]
    if t is bool:
        return False
    if t is int:
        return 0
    if t is float:
        return 0.0
    if t is str:
        return ""
    raise TypeError(f"no neutral value for {tp!r}")


def _fill(tp: Any, value: Any) -> Any:
    """*value* with the required keys of the TypedDicts it holds completed."""
    for t in _members(tp):
        if typing.is_typeddict(t) and isinstance(value, Mapping):
            return complete(value, t)
        if typing.get_origin(t) is list and isinstance(value, list):
            (item,) = typing.get_args(t)
            return [_fill(item, v) for v in value]
        if typing.get_origin(t) is dict and isinstance(value, Mapping):
            _, item = typing.get_args(t)
            return {k: _fill(item, v) for k, v in value.items()}
    return value


def complete(partial: Mapping[str, Any], td: Any = Summary) -> dict[str, Any]:
    """A copy of *partial* (a summary, or a section of type *td*) with every required key."""
    hints = typing.get_type_hints(td, include_extras=True)
    out = {k: _fill(hints[k], v) if k in hints else v for k, v in partial.items()}
    for key in hints:
        if key in td.__required_keys__ and key not in out:
            out[key] = _neutral(hints[key])
    return out


def summary(*ranks: Mapping[str, Any], **top: Any) -> dict[str, Any]:
    """A complete summary of *ranks* (partial rank entries) and top-level *top* keys."""
    base = {"tool": {"name": "gpuscope", "version": "t"}, "sources": []}
    return complete({**base, "schema_version": 1, "ranks": list(ranks), **top})


def make_summary(
    steps: Sequence[Sequence[int]],
    *,
    exposed: Sequence[Sequence[int]] | None = None,
    idle: Sequence[Sequence[int]] | None = None,
    idle_pct: Sequence[float] | None = None,
    overlap_pct: Sequence[float | None] | None = None,
    kernels: Sequence[Sequence[dict[str, Any]]] | None = None,
    device: str = "NVIDIA H100 80GB HBM3",
    version: str = "0.1.0",
    **top: Any,
) -> dict[str, Any]:
    """A schema-1 summary: ``steps[r][i]`` is rank r's duration of step i (ns)."""
    ranks = []
    for r, durs in enumerate(steps):
        rows = []
        t = 0
        for i, d in enumerate(durs):
            row = {"step": i, "start_ns": t, "end_ns": t + int(d), "duration_ns": int(d)}
            row["compute_ns"] = int(d) // 2
            row["exposed_comm_ns"] = int(exposed[r][i]) if exposed else 0
            row["idle_ns"] = int(idle[r][i]) if idle else 0
            rows.append(row)
            t += int(d)
        rank: dict[str, Any] = {"rank": r, "device": {"name": device}, "steps": rows}
        if idle_pct is not None:
            rank["temporal"] = {
                "span_ns": t,
                "idle_ns": 0,
                "compute_ns": 0,
                "non_compute_ns": 0,
                "idle_pct": idle_pct[r],
                "compute_pct": 0.0,
                "non_compute_pct": 0.0,
            }
        if overlap_pct is not None:
            rank["overlap"] = {
                "comm_ns": 1,
                "compute_ns": 1,
                "overlap_ns": 1,
                "exposed_comm_ns": 1,
                "overlap_pct": overlap_pct[r],
            }
        if kernels is not None:
            rank["kernel_summary"] = list(kernels[r])
        ranks.append(rank)
    return complete(
        {
            "schema_version": 1,
            "tool": {"name": "gpuscope", "version": version},
            "sources": [],
            "ranks": ranks,
            **top,
        }
    )


def sim_summary(
    rng: np.random.Generator,
    scale: float = 1.0,
    *,
    n: int = 30,
    noise: float = 0.02,
    base_ns: float = 100e6,
    offset: float = 0.0,
) -> dict[str, Any]:
    """One rank, *n* steps of ``base·scale·(1+offset)`` ns with *noise* relative normal noise."""
    mu = base_ns * scale * (1.0 + offset)
    d = np.rint(rng.normal(mu, mu * noise, n)).astype(np.int64)
    return make_summary([d.tolist()])


def kernel_row(name: str, durations: Sequence[float]) -> dict[str, Any]:
    """A kernel_summary row computed from raw per-call durations (docs/metrics.md §4: the
    summary rounds avg, median and stddev to whole ns)."""
    d = np.asarray(durations, dtype=np.float64)
    return {
        "name": name,
        "type": "COMPUTATION",
        "count": int(d.size),
        "total_ns": int(d.sum()),
        "avg_ns": round(float(d.mean())),
        "median_ns": round(float(np.median(d))),
        "min_ns": int(d.min()),
        "max_ns": int(d.max()),
        "stddev_ns": round(float(d.std(ddof=1))),
        "time_pct": 0.0,
    }
