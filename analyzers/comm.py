"""Per-collective summary and exposed communication of one rank (docs/communication.md §5–6).

Inputs: the rank's collectives table (:func:`analyzers.collectives.collectives_table`)
restricted to the analysis window (a collective is in the window when its first GPU row is one
of :func:`analyzers.window.gpu_events`), and ``G``, ``P``, ``C`` of :mod:`analyzers.temporal`.

**Summary** per collective (and per message-size bucket :data:`SIZE_BUCKETS` of
``message_bytes``): ``count``, ``bytes`` = Σ message_bytes (known sizes), ``time_ns`` = Σ
duration, ``median_time_ns`` = the lower median duration (an observed value), median / max
busbw and algbw over the calls whose bandwidth is defined.

**Exposed communication** by collective type: ``C_x`` = merged GPU intervals of the window's
COMMUNICATION events that belong to collectives of type ``x`` (COMMUNICATION events that belong
to no collective row form type ``other``); ``comm_ns`` = |C_x|, ``exposed_ns`` = |C_x \\ P|.
Per step: the same over the step events on the GPU clock (:mod:`analyzers.steps`: ``C_x`` of
the step events ``S``, clipped to each step's interval ``[gpu_start, gpu_end)``; the ``all``
row's ``exposed_ns`` equals the step's ``exposed_comm_ns``); ``start_ns``/``end_ns`` stay the
ProfilerStep's host range.  The union over types, ``|C \\ P|``, is the rank's exposed
communication (equal to :func:`analyzers.temporal.overlap`'s ``exposed_comm_ns``); per-type
values can add up to more than it when collectives of different types run at the same time.

    ==========================================  =======  ==========  ===========
    rank: gemm [0,100), all_reduce [50,200),    type     comm_ns     exposed_ns
    all_gather [150,260)                        ======== ==========  ===========
    ==========================================  all_red. 150         100
                                                all_gat. 110         110
                                                (union)  210         160
    ==========================================  =======  ==========  ===========
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers import intervals as iv
from analyzers.collectives import collectives_table
from analyzers.options import AnalysisOptions
from analyzers.steps import step_events, step_windows
from analyzers.temporal import COMMUNICATION_CODE, typed_intervals, window_type_codes
from analyzers.window import window_rows

if TYPE_CHECKING:
    from collectors.model import Trace

SIZE_BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("<64KiB", 0, 64 << 10),
    ("64KiB-1MiB", 64 << 10, 1 << 20),
    ("1-16MiB", 1 << 20, 16 << 20),
    ("16-256MiB", 16 << 20, 256 << 20),
    (">=256MiB", 256 << 20, 1 << 62),
)
"""(label, lowest bytes, first byte count above) of the message-size buckets.  Below 1 MiB
collectives are latency-bound; busbw approaches the link rate only from ~256 MiB
(reference/nccl.md §7), so compare and gate busbw within a bucket."""

OTHER = "other"
"""Type of COMMUNICATION events that belong to no collective row (e.g. ``hip*`` kernels)."""

SUMMARY_COLUMNS = (
    "collective",
    "size_bucket",
    "count",
    "bytes",
    "time_ns",
    "median_time_ns",
    "median_algbw_gbps",
    "median_busbw_gbps",
    "max_busbw_gbps",
    "median_busbw_link_pct",
)


def size_bucket(message_bytes: pd.Series) -> pd.Series:
    """Bucket label of each message size (``unknown`` for -1)."""
    b = message_bytes.to_numpy(dtype=np.int64)
    out = np.full(b.size, "unknown", dtype=object)
    for label, lo, hi in SIZE_BUCKETS:
        out[(b >= lo) & (b < hi)] = label
    return pd.Series(out, index=message_bytes.index)


def window_collectives(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The rows of the collectives table with GPU work inside the analysis window."""
    options = options or AnalysisOptions()
    c = collectives_table(trace)
    if c.empty:
        return c
    kept = np.zeros(len(trace.gpu) + 1, dtype=bool)  # the last entry: a label not in trace.gpu
    kept[window_rows(trace, options)] = True
    return c[kept[trace.gpu.index.get_indexer(pd.Index(c["gpu_row"]))]]


def _agg(d: dict[str, np.ndarray], m: np.ndarray) -> dict[str, float | int]:
    """The summary figures of the collectives *m* of the table columns *d*."""
    dur, size = d["duration_ns"][m], d["message_bytes"][m]
    busbw, algbw, pct = d["busbw_gbps"][m], d["algbw_gbps"][m], d["busbw_link_pct"][m]
    bw, al = busbw[np.isfinite(busbw)], algbw[np.isfinite(algbw)]
    pct = pct[~np.isnan(pct)]
    return {
        "count": int(dur.size),
        "bytes": int(size[size >= 0].sum()) if (size >= 0).any() else -1,
        "time_ns": int(dur.sum()),
        # lower median: an observed duration (keys ending _ns are integers)
        "median_time_ns": int(np.sort(dur)[(dur.size - 1) // 2]) if dur.size else -1,
        "median_algbw_gbps": float(pd.Series(al).median()) if al.size else float("nan"),
        "median_busbw_gbps": float(pd.Series(bw).median()) if bw.size else float("nan"),
        "max_busbw_gbps": float(bw.max()) if bw.size else float("nan"),
        "median_busbw_link_pct": float(pd.Series(pct).median()) if pct.size else float("nan"),
    }


def collective_summary(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Per collective, one ``all`` row and one row per size bucket (columns SUMMARY_COLUMNS).

    Only collectives with GPU work in the window count; ``collective`` is ``unknown`` where no
    source names it.  Sorted by total time, descending, buckets in size order.
    """
    c = window_collectives(trace, options)
    if c.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    cols = ("duration_ns", "message_bytes", "busbw_gbps", "algbw_gbps", "busbw_link_pct")
    d = {k: c[k].to_numpy() for k in cols}
    coll = c["collective"].to_numpy(dtype=object)
    coll = np.where(pd.isna(coll), "unknown", coll)
    codes, names = pd.factorize(coll)  # first appearance, as groupby(sort=False)
    b = d["message_bytes"].astype(np.int64)
    bucket = np.full(b.size, len(SIZE_BUCKETS))  # unknown
    for i, (_, lo, hi) in enumerate(SIZE_BUCKETS):
        bucket[(b >= lo) & (b < hi)] = i
    labels = [x[0] for x in SIZE_BUCKETS] + ["unknown"]
    rows = []
    for k, name in enumerate(names.tolist()):
        mine = codes == k
        rows.append({"collective": name, "size_bucket": "all", **_agg(d, mine)})
        for i, label in enumerate(labels):
            m = mine & (bucket == i)
            if m.any():
                rows.append({"collective": name, "size_bucket": label, **_agg(d, m)})
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    totals = out[out["size_bucket"] == "all"].set_index("collective")["time_ns"]
    out["_t"] = out["collective"].map(totals)
    out["_b"] = out["size_bucket"].map({b: i for i, b in enumerate(["all", *labels])})
    out = out.sort_values(["_t", "collective", "_b"], ascending=[False, True, True])
    return out.drop(columns=["_t", "_b"]).reset_index(drop=True)


@dataclass(frozen=True)
class ExposedComm:
    """Exposed communication of one rank by label (collective type, dimension, ...)."""

    comm_ns: int
    """|C|: union of all COMMUNICATION events of the window."""
    exposed_ns: int
    """|C \\ P|."""
    by_label: pd.DataFrame
    """label, comm_ns, exposed_ns (one row per label, by exposed time descending)."""
    by_step: pd.DataFrame
    """step, start_ns, end_ns, label, comm_ns, exposed_ns; ``label`` ``all`` = the union."""


def exposed_by(
    trace: Trace,
    labels: Mapping[int, str] | pd.Series,
    options: AnalysisOptions | None = None,
) -> ExposedComm:
    """Exposed communication split by *labels*: ``trace.gpu`` row label → group name.

    COMMUNICATION events of the window without a label are grouped as :data:`OTHER`.
    """
    options = options or AnalysisOptions()
    lab = pd.Series(labels) if not isinstance(labels, pd.Series) else labels
    values = [OTHER if pd.isna(v) else str(v) for v in lab.to_numpy(dtype=object).tolist()]
    codes, uniq = pd.factorize(np.array([*values, OTHER], dtype=object))
    names = [str(x) for x in uniq]
    code_of = np.full(len(trace.gpu) + 1, codes[-1], dtype=np.int64)  # unlabelled: other
    at = trace.gpu.index.get_indexer(lab.index)
    code_of[at[at >= 0]] = codes[:-1][at >= 0]
    ti = typed_intervals(trace, options)
    rows = window_rows(trace, options)
    s = trace.gpu["start_ns"].to_numpy()[rows]
    e = trace.gpu["end_ns"].to_numpy()[rows]
    is_comm = window_type_codes(trace, options) == COMMUNICATION_CODE
    row_code = code_of[rows]
    exposed_all = iv.subtract(ti.comm, ti.compute)

    se = step_events(trace, options)
    lo, hi = step_windows(se)
    steps = se.steps
    s_comm = se.types == COMMUNICATION_CODE
    s_code = code_of[se.rows]
    step_parts: list[tuple[str, iv.Intervals]] = [("all", se.comm)]
    rows_out = []
    present = set(row_code[is_comm].tolist()) | set(s_code[s_comm].tolist())
    for k in sorted(present, key=names.__getitem__):
        label = names[k]
        m = is_comm & (row_code == k)
        if m.any():
            ci = iv.merge(s[m], e[m])
            rows_out.append((label, iv.total(ci), iv.total(iv.subtract(ci, ti.compute))))
        ms = s_comm & (s_code == k)
        step_parts.append((label, iv.merge(se.start[ms], se.end[ms])))
    by_label = pd.DataFrame(rows_out, columns=["label", "comm_ns", "exposed_ns"])
    by_label = by_label.sort_values(["exposed_ns", "label"], ascending=[False, True])
    # one block of steps per label: "all" first, then the labels in name order
    n = len(steps)
    comm_ns = [iv.covered_in_windows(ci, lo, hi) for _, ci in step_parts]
    exposed = [iv.covered_in_windows(iv.subtract(ci, se.compute), lo, hi) for _, ci in step_parts]
    by_step = pd.DataFrame(
        {
            "step": np.tile(steps["step"].to_numpy(dtype=np.int64), len(step_parts)),
            "start_ns": np.tile(steps["start_ns"].to_numpy(dtype=np.int64), len(step_parts)),
            "end_ns": np.tile(steps["end_ns"].to_numpy(dtype=np.int64), len(step_parts)),
            "label": np.repeat(np.array([x for x, _ in step_parts], dtype=object), n),
            "comm_ns": np.concatenate(comm_ns),
            "exposed_ns": np.concatenate(exposed),
        }
    )
    return ExposedComm(
        comm_ns=iv.total(ti.comm),
        exposed_ns=iv.total(exposed_all),
        by_label=by_label.reset_index(drop=True),
        by_step=by_step,
    )


def gpu_row_labels(collectives: pd.DataFrame, column: str) -> pd.Series:
    """``trace.gpu`` row label → value of *column* of the collective the row belongs to."""
    idx: list[int] = []
    vals: list[object] = []
    for rows, v in zip(collectives["gpu_rows"], collectives[column], strict=True):
        for r in rows:
            idx.append(r)
            vals.append(v if isinstance(v, str) else "unknown")
    return pd.Series(vals, index=pd.Index(idx, dtype=np.int64), dtype=object)


def exposed_by_collective(trace: Trace, options: AnalysisOptions | None = None) -> ExposedComm:
    """:func:`exposed_by` with each NCCL GPU row labelled by its collective's type."""
    return exposed_by(trace, gpu_row_labels(collectives_table(trace), "collective"), options)
