"""One side of ``gpuscope compare``: per rank, its steps, GPU span and one event table per view.

A side is built from traces (:func:`side_from_traces`) or from a JSON summary
(:func:`side_from_summary`).  Definitions are in docs/compare.md; in short, for a trace rank:

- ``steps``: the ProfilerSteps of the analysis window (:func:`analyzers.steps.step_breakdown`:
  all but the last by default, all with ``--all-events``), with their ``duration_ns``;
- ``span_ns``: first start to last end of the window's GPU events
  (:func:`analyzers.temporal.temporal_breakdown`);
- one table per view, one row per occurrence: ``key`` (what is matched), ``name`` (the raw
  name), ``kind``, ``dur_ns`` (its time), ``t_ns`` (the instant that places it in a step) and
  ``call`` (what is counted: equal ``call`` = one call):

    ==========  ===========================================================  =================
    view        rows, key and time                                           t_ns
    ==========  ===========================================================  =================
    kernel      window GPU events of kind kernel/memcpy/memset; key =        the step placement
                :func:`~analyzers.name_normalize.normalize_kernel_name`;     (below)
                time = end − start
    op          the same GPU events, each given to the ``cpu_op`` whose      as kernel
                ``external_id`` equals the launching runtime call's (else
                the innermost ``cpu_op`` around the launch on its thread;
                ``ProfilerStep#*`` excluded; a graph replay: its capture
                op, :mod:`analyzers.compare_category`); key = op name +
                ``input_dims``; counted per op call
    category    the same GPU events; key = op category                       as kernel
                (:mod:`analyzers.compare_category`)
    collective  collectives-table rows whose first GPU row is in the     launch, else GPU
                window; key = collective + ``message_bytes``; time =          start
                ``duration_ns``
    annotation  user / NVTX / GPU-user annotations starting in the window;    range start
                key = name (``[GPU]`` appended for GPU-side ones); time =
                end − start
    ==========  ===========================================================  =================

The instant that places a GPU event in a step is :func:`analyzers.steps.placement`'s, the one
definition ``analyze`` uses for its steps on the GPU clock (docs/metrics.md §7): the start of
its launching call, else its GPU start; work launched before the profiler started is in no
step (-1) unless ``options.include_prelaunched``.

A summary rank carries only ``steps``, ``temporal.span_ns`` and ``kernel_summary``: its kernel
table is already aggregated (``key``, ``name``, ``count``, ``total_ns``) and its other views
are absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from analyzers.collectives import collectives_table
from analyzers.compare_category import EVENT_COLUMNS
from analyzers.kernel_summary import UNNAMED
from analyzers.name_normalize import normalize_kernel_name
from analyzers.options import AnalysisOptions
from collectors.errors import InputError
from collectors.linking import innermost_range, launching_calls
from collectors.model import GPU_WORK_KINDS

if TYPE_CHECKING:
    from analyzers.serving.graphs import Capture
    from collectors.model import Trace
    from collectors.summary.schema import RankEntry, Summary

VIEWS = ("kernel", "op", "category", "collective", "annotation", "step")
"""The views of a comparison, in display order (``--by``)."""
EVENT_VIEWS = VIEWS[:-1]
"""Views built from event tables (the step view is built from the steps)."""
ANNOTATION_KINDS = ("user", "gpu_user", "nvtx")
STEP_COLUMNS = ("step", "start_ns", "end_ns", "duration_ns")
AGG_COLUMNS = ("key", "name", "count", "total_ns")


@dataclass(frozen=True)
class RankSide:
    """What one rank contributes to a comparison (module docstring)."""

    rank: int
    steps: pd.DataFrame
    """Columns :data:`STEP_COLUMNS` (int64), in time order."""
    span_ns: int | None
    events: Mapping[str, pd.DataFrame]
    """Per view: :data:`EVENT_COLUMNS` (traces) or :data:`AGG_COLUMNS` (summaries)."""


@dataclass(frozen=True)
class Side:
    """One side (BASE or CURRENT) of a comparison."""

    label: str
    kind: Literal["trace", "summary"]
    formats: tuple[str, ...]
    """Source formats of its ranks (``kineto``, ``nsys``, ``summary``...)."""
    ranks: tuple[RankSide, ...]

    @property
    def aggregated(self) -> bool:
        """True when its tables are totals (a summary) rather than one row per occurrence."""
        return self.kind == "summary"

    def views(self) -> tuple[str, ...]:
        """The views this side can take part in."""
        return ("kernel", "step") if self.aggregated else VIEWS


def _events(
    key: Any, name: Any, kind: Any, dur: Any, t: Any, call: Any | None = None
) -> pd.DataFrame:
    n = len(dur)
    return pd.DataFrame(
        {
            "key": np.asarray(key, dtype=object),
            "name": np.asarray(name, dtype=object),
            "kind": np.asarray(kind, dtype=object),
            "dur_ns": np.asarray(dur, dtype=np.int64),
            "t_ns": np.asarray(t, dtype=np.int64),
            "call": np.arange(n, dtype=np.int64) if call is None else np.asarray(call, np.int64),
        },
        columns=list(EVENT_COLUMNS),
    )


def _names(col: pd.Series) -> np.ndarray:
    """Raw names as an object array (missing → :data:`UNNAMED`)."""
    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    labels = np.append(np.asarray(cat.cat.categories, dtype=object).astype(str), UNNAMED)
    return labels[cat.cat.codes.to_numpy()]


def _kernel_keys(names: np.ndarray) -> np.ndarray:
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    keys = np.array([normalize_kernel_name(u) or UNNAMED for u in uniq], dtype=object)
    return keys[inv] if len(names) else np.empty(0, dtype=object)


def _lookup(keys: np.ndarray, values: np.ndarray, order: np.ndarray, query: Any) -> np.ndarray:
    """For each *query* key, the value of its first row in *order*; -1 where absent."""
    s = pd.Series(np.asarray(values)[order], index=np.asarray(keys)[order])
    s = s[~s.index.duplicated(keep="first")]
    return s.reindex(np.asarray(query), fill_value=-1).to_numpy(dtype=np.int64, copy=True)


def _launches(trace: Trace, corr: np.ndarray) -> dict[str, np.ndarray]:
    """Per correlation id, the launching call's ``start_ns``, ``external_id``, ``pid`` and
    ``tid`` (:func:`collectors.linking.launching_calls`); -1 where there is none."""
    h = trace.host
    rows = launching_calls(h, corr)
    hit = rows >= 0
    out = {}
    for c in ("start_ns", "external_id", "pid", "tid"):
        values = np.full(len(rows), -1, dtype=np.int64)
        values[hit] = h[c].to_numpy()[rows[hit]]
        out[c] = values
    return out


def _prefix_mask(col: pd.Series, prefix: str) -> np.ndarray:
    """Rows whose name starts with *prefix* (each distinct name tested once)."""
    names = _names(col)
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    hits = np.array([u.startswith(prefix) for u in uniq.tolist()], dtype=bool)
    return hits[inv] if len(names) else np.zeros(0, dtype=bool)


def _op_view(
    trace: Trace,
    acts: pd.DataFrame,
    t: np.ndarray,
    launch: dict[str, np.ndarray],
    rows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    h = trace.host
    is_op = np.asarray(h["cat"] == "cpu_op", dtype=bool)
    ops = h[is_op & ~_prefix_mask(h["name"], "ProfilerStep#")]
    op_ext = ops["external_id"].to_numpy()
    pos = np.arange(len(ops), dtype=np.int64)
    with_ext = op_ext >= 0
    order = np.argsort(ops["start_ns"].to_numpy()[with_ext], kind="stable")
    ext = launch["external_id"]
    op = _lookup(op_ext[with_ext], pos[with_ext], order, ext)
    op[ext < 0] = -1
    # no op with the launch's external id: the innermost op around the launch on its thread
    miss = (op < 0) & (launch["start_ns"] >= 0)
    if miss.any() and len(ops):
        # half-open [start, end): the profiler's call stack (collectives link inclusively)
        op[miss] = innermost_range(
            ops["start_ns"].to_numpy(),
            ops["end_ns"].to_numpy(),
            (ops["pid"].to_numpy(), ops["tid"].to_numpy()),
            launch["start_ns"][miss],
            (launch["pid"][miss], launch["tid"][miss]),
        )
    keep = op >= 0
    if rows is not None:  # graph replays: their capture op (analyzers.compare_category)
        keep &= (rows["via"] != "capture").to_numpy()
    op = op[keep]
    op_names = _names(ops["name"])[op]
    dims = ops["input_dims"].to_numpy()[op]
    dims = np.array([d if isinstance(d, str) and d else "" for d in dims], dtype=object)
    keys = np.array([f"{n} {d}" if d else n for n, d in zip(op_names, dims, strict=True)], object)
    dur = (acts["end_ns"].to_numpy() - acts["start_ns"].to_numpy())[keep]
    ev = _events(keys, op_names, acts["kind"].astype(object).to_numpy()[keep], dur, t[keep], op)
    if rows is None:
        return ev
    from analyzers.compare_category import graph_op_events

    return pd.concat([ev, graph_op_events(rows, acts, t, len(ops))], ignore_index=True)


def size_label(n: int) -> str:
    """A message size, exact: ``16 MiB`` / ``3 KiB`` when a whole number, else ``1000 B``."""
    if n < 0:
        return "(size unknown)"
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _collective_view(trace: Trace, window_rows: pd.Index) -> pd.DataFrame:
    c = collectives_table(trace)
    c = c[(c["gpu_row"] >= 0).to_numpy() & np.isin(c["gpu_row"].to_numpy(), window_rows)]
    name = c["collective"].astype(object).where(c["collective"].notna(), "?").to_numpy()
    size = c["message_bytes"].to_numpy()
    keys = np.array(
        [f"{n} {size_label(int(s))}" for n, s in zip(name, size, strict=True)],
        dtype=object,
    )
    t = np.where(c["launch_ns"].to_numpy() >= 0, c["launch_ns"].to_numpy(), c["start_ns"])
    kinds = np.full(len(c), "collective", dtype=object)
    return _events(keys, name, kinds, c["duration_ns"].to_numpy(), t)


def _annotation_view(trace: Trace, lo: int | None, hi: int | None) -> pd.DataFrame:
    a = trace.annotations
    a = a[np.asarray(a["kind"].isin(ANNOTATION_KINDS), dtype=bool)]
    s = a["start_ns"].to_numpy()
    inside = np.ones(len(a), dtype=bool)
    if lo is not None:
        inside &= s >= lo
    if hi is not None:
        inside &= s < hi
    a = a[inside]
    names = _names(a["name"])
    kind = a["kind"].astype(object).to_numpy()
    keys = np.array(
        [f"{n} [GPU]" if k == "gpu_user" else n for n, k in zip(names, kind, strict=True)], object
    )
    dur = a["end_ns"].to_numpy() - a["start_ns"].to_numpy()
    return _events(keys, names, kind, dur, a["start_ns"].to_numpy())


def rank_from_trace(
    trace: Trace,
    options: AnalysisOptions | None = None,
    captures: Sequence[Trace | Capture] = (),
) -> RankSide:
    """The :class:`RankSide` of one rank's trace (module docstring); graph replays attributed
    through *captures* (the capture traces of its rank)."""
    from analyzers.compare_category import category_events, serving_rows
    from analyzers.steps import placement, step_breakdown
    from analyzers.temporal import temporal_breakdown
    from analyzers.window import gpu_events, window

    options = options or AnalysisOptions()
    steps = step_breakdown(trace, options)[list(STEP_COLUMNS)].reset_index(drop=True)
    g = gpu_events(trace, options)
    span = temporal_breakdown(trace, options).span_ns if len(g) else None
    acts = g[np.asarray(g["kind"].isin(GPU_WORK_KINDS), dtype=bool)]
    launch = _launches(trace, acts["correlation"].to_numpy())
    t = placement(trace, acts, options)["t_ns"].to_numpy()
    names = _names(acts["name"])
    kernel = _events(
        _kernel_keys(names),
        names,
        acts["kind"].astype(object).to_numpy(),
        acts["end_ns"].to_numpy() - acts["start_ns"].to_numpy(),
        t,
    )
    w = window(trace, options)
    lo, hi = (w.start_ns, w.end_ns) if w.filtered else (None, None)
    rows = serving_rows(trace, acts, captures)
    events = {
        "kernel": kernel,
        "op": _op_view(trace, acts, t, launch, rows),
        "category": category_events(rows, acts, t),
        "collective": _collective_view(trace, g.index),
        "annotation": _annotation_view(trace, lo, hi),
    }
    return RankSide(trace.rank, steps, span, events)


def side_from_traces(
    traces: Sequence[Trace],
    label: str,
    options: AnalysisOptions | None = None,
    captures: Mapping[int, Sequence[Trace | Capture]] | None = None,
) -> Side:
    """A side made of *traces* (one per rank); *captures*: the graph capture traces by the
    rank they claim.

    Raises:
        InputError: no trace, or two traces of one rank.
    """
    if not traces:
        raise InputError("no trace to compare", path=label)
    ranks = [t.rank for t in traces]
    dup = sorted({r for r in ranks if ranks.count(r) > 1})
    if dup:
        raise InputError(f"several traces claim rank {dup[0]}", path=label)
    formats = tuple(sorted({t.meta.source_format for t in traces}))
    caps = captures or {}
    sides = tuple(
        rank_from_trace(t, options, tuple(caps.get(t.rank, ())))
        for t in sorted(traces, key=lambda t: t.rank)
    )
    return Side(label, "trace", formats, sides)


def _summary_rank(r: RankEntry) -> RankSide:
    rows: list[Mapping[str, object]] = list(r["steps"])
    steps = pd.DataFrame(
        {c: [s[c] for s in rows] for c in STEP_COLUMNS}, columns=list(STEP_COLUMNS)
    ).astype(np.int64)
    steps = steps.sort_values("start_ns", kind="stable").reset_index(drop=True)
    ks = r["kernel_summary"]
    names = [k["name"] for k in ks]
    kernel = pd.DataFrame(
        {
            "key": [normalize_kernel_name(n) or UNNAMED for n in names],
            "name": names,
            "count": [k["count"] for k in ks],
            "total_ns": [k["total_ns"] for k in ks],
        },
        columns=list(AGG_COLUMNS),
    )
    kernel = kernel.astype({"count": np.int64, "total_ns": np.int64})
    return RankSide(r["rank"], steps, r["temporal"]["span_ns"], {"kernel": kernel})


def side_from_summary(summary: Summary, label: str) -> Side:
    """A side made of a validated JSON summary (:func:`collectors.summary.reader.read_summary`).

    Raises:
        InputError: the summary has no rank, or lists a rank twice.
    """
    if not summary["ranks"]:
        raise InputError("the summary has no ranks", path=label)
    sides = sorted((_summary_rank(r) for r in summary["ranks"]), key=lambda s: s.rank)
    seen = [s.rank for s in sides]
    dup = sorted({r for r in seen if seen.count(r) > 1})
    if dup:
        raise InputError(f"the summary lists rank {dup[0]} twice", path=label)
    return Side(label, "summary", ("summary",), tuple(sides))
