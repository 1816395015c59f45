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
from analyzers.classify import COMMUNICATION
from analyzers.collectives import collectives_table
from analyzers.options import AnalysisOptions
from analyzers.steps import step_events, step_windows
from analyzers.temporal import typed_events

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
    from analyzers.window import gpu_events

    options = options or AnalysisOptions()
    c = collectives_table(trace)
    if c.empty:
        return c
    kept = gpu_events(trace, options).index
    return c[c["gpu_row"].isin(kept).to_numpy()]


def _agg(df: pd.DataFrame) -> dict[str, float | int]:
    bw = df[np.isfinite(df["busbw_gbps"])]
    al = df[np.isfinite(df["algbw_gbps"])]
    known = df["message_bytes"] >= 0
    pct = df["busbw_link_pct"].dropna()
    return {
        "count": len(df),
        "bytes": int(df.loc[known, "message_bytes"].sum()) if known.any() else -1,
        "time_ns": int(df["duration_ns"].sum()),
        # lower median: an observed duration (keys ending _ns are integers)
        "median_time_ns": int(df["duration_ns"].quantile(0.5, interpolation="lower"))
        if len(df)
        else -1,
        "median_algbw_gbps": float(al["algbw_gbps"].median()) if len(al) else float("nan"),
        "median_busbw_gbps": float(bw["busbw_gbps"].median()) if len(bw) else float("nan"),
        "max_busbw_gbps": float(bw["busbw_gbps"].max()) if len(bw) else float("nan"),
        "median_busbw_link_pct": float(pct.median()) if len(pct) else float("nan"),
    }


def collective_summary(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Per collective, one ``all`` row and one row per size bucket (columns SUMMARY_COLUMNS).

    Only collectives with GPU work in the window count; ``collective`` is ``unknown`` where no
    source names it.  Sorted by total time, descending, buckets in size order.
    """
    c = window_collectives(trace, options)
    if c.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    c = c.assign(
        collective=c["collective"].fillna("unknown"), size_bucket=size_bucket(c["message_bytes"])
    )
    rows = []
    order = [b[0] for b in SIZE_BUCKETS] + ["unknown"]
    for coll, grp in c.groupby("collective", sort=False):
        rows.append({"collective": coll, "size_bucket": "all", **_agg(grp)})
        for bucket in order:
            sub = grp[grp["size_bucket"] == bucket]
            if len(sub):
                rows.append({"collective": coll, "size_bucket": bucket, **_agg(sub)})
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    totals = out[out["size_bucket"] == "all"].set_index("collective")["time_ns"]
    out["_t"] = out["collective"].map(totals)
    out["_b"] = out["size_bucket"].map({b: i for i, b in enumerate(["all", *order])})
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
    g = typed_events(trace, options)
    s = g["start_ns"].to_numpy()
    e = g["end_ns"].to_numpy()
    t = g["type"].to_numpy()
    comp = iv.merge(s[t == "COMPUTATION"], e[t == "COMPUTATION"])
    is_comm = t == COMMUNICATION
    lab = pd.Series(labels) if not isinstance(labels, pd.Series) else labels
    row_label = lab.reindex(g.index).to_numpy(dtype=object)
    row_label = np.where(pd.isna(row_label), OTHER, row_label)
    all_c = iv.merge(s[is_comm], e[is_comm])
    exposed_all = iv.subtract(all_c, comp)

    se = step_events(trace, options)
    lo, hi = step_windows(se)
    steps = se.steps
    step_ids = steps["step"].to_numpy(dtype=np.int64)
    host_lo = steps["start_ns"].to_numpy(dtype=np.int64)
    host_hi = steps["end_ns"].to_numpy(dtype=np.int64)
    sev = se.events
    ss, se_end, st = sev["start_ns"].to_numpy(), sev["end_ns"].to_numpy(), sev["type"].to_numpy()
    s_comm = st == COMMUNICATION
    s_label = lab.reindex(sev.index).to_numpy(dtype=object)
    s_label = np.where(pd.isna(s_label), OTHER, s_label)

    rows = []
    step_parts: list[pd.DataFrame] = []

    def add_steps(label: str, m: np.ndarray) -> None:
        ci = iv.merge(ss[m], se_end[m])
        ex = iv.subtract(ci, se.compute)
        step_parts.append(
            pd.DataFrame(
                {
                    "step": step_ids,
                    "start_ns": host_lo,
                    "end_ns": host_hi,
                    "label": label,
                    "comm_ns": iv.covered_in_windows(ci, lo, hi),
                    "exposed_ns": iv.covered_in_windows(ex, lo, hi),
                }
            )
        )

    add_steps("all", s_comm)
    names = sorted({str(x) for x in row_label[is_comm]} | {str(x) for x in s_label[s_comm]})
    for label in names:
        m = is_comm & (row_label == label)
        ci = iv.merge(s[m], e[m])
        ex = iv.subtract(ci, comp)
        if m.any():
            rows.append((label, iv.total(ci), iv.total(ex)))
        add_steps(label, s_comm & (s_label == label))
    by_label = pd.DataFrame(rows, columns=["label", "comm_ns", "exposed_ns"])
    by_label = by_label.sort_values(["exposed_ns", "label"], ascending=[False, True])
    cols = ["step", "start_ns", "end_ns", "label", "comm_ns", "exposed_ns"]
    # one block of steps per label: "all" first, then the labels in name order
    by_step = pd.concat(step_parts, ignore_index=True)[cols]
    return ExposedComm(
        comm_ns=iv.total(all_c),
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
