"""The per-rank collectives table: one row per NCCL collective executed on the GPU.

Built from a trace's own tables (once per trace: :func:`analyzers.collectives.collectives_table`);
definitions in docs/communication.md §1.  A *collective* is the GPU work of one communication call:

1. GPU rows whose name starts with ``nccl``/``rccl`` (every NCCL version, see
   :mod:`collectors.nccl_kernels`), plus memcpy rows launched inside a ``nccl:*`` range or an
   NCCL NVTX range that launched no NCCL kernel (copy-engine collectives, NCCL ≥ 2.28);
2. each is linked to the host call that launched it (same ``correlation``), and that launch to
   the innermost enclosing ``record_param_comms`` op, ``nccl:*`` annotation, ``c10d::*`` op and
   NCCL-domain NVTX range on the same thread (``ncclGroupEnd`` ranges stand for the NVTX
   collective ranges of their group); without a launch row, a kernel whose ``external_id``
   equals a ``record_param_comms`` op's is linked to that op;
3. the GPU rows of one op form one collective (start = first start, end = last end); rows linked
   to no op are a collective each.

Metadata, first source that has it (the ``*_source`` columns say which was used):

    ==================  ===========================================================================
    field               sources, in order
    ==================  ===========================================================================
    collective          ``record_param_comms`` ``Collective name`` → kernel args → ``nccl:*`` title
                        → NVTX range name → kernel name
    in/out bytes,       ``In/Out msg nelems`` × size of ``dtype`` (op, then kernel args) →
    dtype               op ``Input Dims`` × ``Input type`` (torch ≤ 2.0; the op's input tensor) →
                        ``nccl:*`` ``Input Dims`` → NVTX ``Message size [bytes]``
    group size          ``Group size`` (op, kernel) → ``distributedInfo.pg_config`` → length of
                        ``Process Group Ranks`` → ``c10d::_allgather_base_`` /
                        ``_reduce_scatter_base_`` output/input element ratio
    process group       ``Process Group Name`` (or ``ID``), ``Description``, ``Ranks``; NVTX:
                        ``comm:<communicator id>``
    ==================  ===========================================================================

``message_bytes`` is ``S`` of nccl-tests (see :mod:`collectors.nccl_formulas`): the output of
all_gather / gather, the input otherwise (derived through the group size when only the other
side is known; :mod:`analyzers.collectives.sizes`).
``algbw = S / duration``, ``busbw = algbw × factor(collective, group size)`` in GB/s, and
``busbw_link_pct = 100 × busbw / link peak`` where the device's per-direction peak interconnect
bandwidth is known (:mod:`analyzers.collectives.busbw`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers.collectives.args import pg_config
from analyzers.collectives.busbw import add_bandwidth
from analyzers.collectives.columns import COLUMNS, INT_COLUMNS, empty_table
from analyzers.collectives.linking import innermost, launches, nvtx_ranges
from analyzers.collectives.metadata import Column, RecordContext, collective_record
from analyzers.collectives.sizes import add_message_bytes
from analyzers.steps import step_positions
from analyzers.window import value_mask
from collectors.arrays import sorted_unique
from collectors.nccl_kernels import NCCL_NAME

if TYPE_CHECKING:
    from collectors.model import Trace

_MAX = np.iinfo(np.int64).max


def build_collectives(trace: Trace) -> pd.DataFrame:
    """The collectives table of *trace* (columns :data:`COLUMNS`; see the module docstring).

    Rows are in issue order (host launch, else GPU start).  A ``record_param_comms`` op that
    names a collective (its own metadata, or a ``nccl:*`` range inside it) but launched no GPU
    work in the trace (a 1-rank group, or kernels outside the capture) is a row with
    ``n_gpu_rows = 0`` and unknown GPU times.  Unknown integers are -1, unknown floats NaN,
    unknown strings None.  Never raises on partial metadata: what is missing stays unknown and
    the ``*_source`` columns say where each value came from.
    """
    h = trace.host
    kind = names_kind(h["name"])
    is_rpc, is_ann, is_c10d = kind == 1, kind == 2, kind == 3
    nvtx_ops, nvtx_groups, nvtx_group_starts = nvtx_ranges(trace)
    ctx = RecordContext(
        host_args=Column(h["comm_args"]),
        host_dims=Column(h["input_dims"]),
        host_types=Column(h["input_types"]),
        host_names=Column(h["name"]),
        host_start=h["start_ns"].to_numpy(),
        h_index=h.index,
        nvtx_ops=nvtx_ops,
        nvtx_groups=nvtx_groups,
        nvtx_group_starts=nvtx_group_starts,
        pg_cfg=pg_config(trace),
    )
    cols = ["pid", "tid", "start_ns", "end_ns"]
    rng = {k: h.loc[m, cols] for k, m in (("rpc", is_rpc), ("ann", is_ann), ("c10d", is_c10d))}
    steps = trace.steps()
    records = _gpu_records(trace, ctx, rng, is_rpc)
    linked = {r.pop("_rpc") for r in records} - {-1}
    records += _call_only_records(trace, ctx, rng, linked)
    if not records:
        return empty_table()
    # the step: of the launch, else the GPU start, else the op start
    launch, start, op = (np.array([r[c] for r in records], dtype=np.int64) for c in _WHEN)
    t = np.where(launch >= 0, launch, np.where(start >= 0, start, np.where(op >= 0, op, -1)))
    k = step_positions(t, steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy())
    number = np.r_[steps["step"].to_numpy(dtype=np.int64), -1]  # k = -1: no step
    step = number[k].tolist()
    for rec, n in zip(records, step, strict=True):
        rec["rank"] = trace.rank
        rec["step"] = n
    return _finish(trace, records)


_WHEN = ("launch_ns", "start_ns", "op_start_ns")


def names_kind(col: pd.Series) -> np.ndarray:
    """Per host row: 1 ``record_param_comms``, 2 a ``nccl:*`` annotation, 3 a ``c10d::*`` op,
    0 anything else (each distinct name looked at once)."""

    def kind(s: str) -> int:
        if s == "record_param_comms":
            return 1
        return 2 if s.startswith("nccl:") else 3 if s.startswith("c10d::") else 0

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    per_name = np.array([kind(str(c)) for c in cat.cat.categories] + [0], dtype=np.int8)
    return per_name[cat.cat.codes.to_numpy()]


def _gpu_records(
    trace: Trace,
    ctx: RecordContext,
    rng: dict[str, pd.DataFrame],
    is_rpc: np.ndarray,
) -> list[dict[str, Any]]:
    """One record per collective with GPU work (module docstring, steps 1–3).  *rng*: the
    (pid, tid, start_ns, end_ns) of the host's ``record_param_comms`` ops (``rpc``), ``nccl:*``
    annotations (``ann``) and ``c10d::*`` ops (``c10d``)."""
    g = trace.gpu
    if g.empty:
        return []
    names = g["name"]
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    is_nccl_cat = np.array([bool(NCCL_NAME.match(str(c))) for c in cat.cat.categories] + [False])
    nccl_rows = is_nccl_cat[cat.cat.codes.to_numpy()] & ~value_mask(g["kind"], ("memset",))
    memcpy_rows = value_mask(g["kind"], ("memcpy",)) & ~nccl_rows
    if rng["ann"].empty and ctx.nvtx_ops.empty:
        memcpy_rows[:] = False  # a copy belongs to a collective only inside such a range
    cand = np.flatnonzero(nccl_rows | memcpy_rows)
    if not cand.size:
        return []
    gc = g.iloc[cand]
    lpid, ltid, lstart = launches(trace, gc["correlation"].to_numpy())
    rpc_of = innermost(rng["rpc"], lpid, ltid, lstart)
    ann_of = innermost(rng["ann"], lpid, ltid, lstart)
    c10d_of = innermost(rng["c10d"], lpid, ltid, lstart)
    nvtx_of = innermost(ctx.nvtx_ops, lpid, ltid, lstart)
    group_of = innermost(ctx.nvtx_groups, lpid, ltid, lstart)
    # without a launch row, fall back on the external id shared by kernel and op (torch ≥ 2.2)
    ext = gc["external_id"].to_numpy()
    h = trace.host
    rpc_ext = pd.Series(h.index[is_rpc], index=h["external_id"].to_numpy()[is_rpc])
    rpc_ext = rpc_ext[~rpc_ext.index.duplicated()]
    no_launch = (lstart < 0) & (ext >= 0)
    if no_launch.any() and len(rpc_ext):
        vals = rpc_ext.reindex(ext[no_launch]).to_numpy(dtype=float)
        rpc_of[no_launch] = np.where(np.isnan(vals), -1, vals).astype(np.int64)

    is_nccl_c = nccl_rows[cand]
    # a memcpy row belongs to a collective only inside a nccl:* / NVTX range without NCCL kernel
    range_key = np.where(ann_of >= 0, ann_of * 4 + 1, np.where(nvtx_of >= 0, nvtx_of * 4 + 2, -1))
    with_kernels = sorted_unique(range_key[is_nccl_c & (range_key >= 0)])
    keep = is_nccl_c | (~is_nccl_c & (range_key >= 0) & ~np.isin(range_key, with_kernels))
    if not keep.any():
        return []
    sel = np.flatnonzero(keep)
    op_key = np.where(rpc_of >= 0, rpc_of * 4, range_key)[sel]
    op_key = np.where(op_key >= 0, op_key, -(np.arange(sel.size) + 1))  # unlinked: own row
    g_names = gc["name"].astype(object).to_numpy()
    g_args = gc["comm_args"].to_numpy()
    g_label = g.index.to_numpy()[cand]

    o = np.lexsort((gc["start_ns"].to_numpy()[sel], op_key))
    order = sel[o]
    ks = op_key[o]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    # per collective (a run of *order*): its first row, and the first NCCL-named row and the
    # first row with arguments among its members
    first = order[starts]
    pos = np.arange(order.size)
    big = order.size
    named = np.minimum.reduceat(np.where(is_nccl_c[order], pos, big), starts)
    has_args = np.array([bool(x) for x in g_args], dtype=bool)[order]
    with_args = np.minimum.reduceat(np.where(has_args, pos, big), starts)
    lm = lstart[order]
    launch = np.minimum.reduceat(np.where(lm >= 0, lm, _MAX), starts)
    start = np.minimum.reduceat(gc["start_ns"].to_numpy()[order], starts)
    end = np.maximum.reduceat(gc["end_ns"].to_numpy()[order], starts)
    sizes = np.diff(np.r_[starts, order.size])
    # each collective's members in table order: sort by (collective, row)
    width = cand.size
    runs = np.repeat(np.arange(starts.size), sizes)
    member_labels = g_label[np.sort(runs * width + order) % width].tolist()
    cols = {
        "first": first, "named": named, "with_args": with_args, "launch": launch,
        "start": start, "end": end, "n": sizes, "at": starts,
        "rpc": rpc_of[first], "ann": ann_of[first], "nvtx": nvtx_of[first],
        "c10d": c10d_of[first], "group": group_of[first],
        "stream": gc["stream"].to_numpy()[first], "device": gc["device"].to_numpy()[first],
        "gpu_row": g_label[first],
    }  # fmt: skip
    lists = {k: v.tolist() for k, v in cols.items()}
    records = []
    for i, f in enumerate(lists["first"]):
        k, a = lists["named"][i], lists["with_args"][i]
        kname = g_names[order[k]] if k < big else None
        rpc, ann, nvtx = lists["rpc"][i], lists["ann"][i], lists["nvtx"][i]
        rec = collective_record(
            ctx,
            kernel_name=kname if kname is not None else str(g_names[f]),
            kernel_args=g_args[order[a]] if a < big else None,
            rpc=rpc,
            ann=ann,
            c10d=lists["c10d"][i],
            nvtx=nvtx,
            group=lists["group"][i],
        )
        at, n = lists["at"][i], lists["n"][i]
        rec.update(
            _rpc=rpc,
            n_gpu_rows=n,
            op_start_ns=_op_start(ctx, rpc, ann, nvtx),
            launch_ns=lists["launch"][i] if lists["launch"][i] != _MAX else -1,
            start_ns=lists["start"][i],
            end_ns=lists["end"][i],
            duration_ns=lists["end"][i] - lists["start"][i],
            stream=lists["stream"][i],
            device=lists["device"][i],
            gpu_row=lists["gpu_row"][i],
            gpu_rows=tuple(member_labels[at : at + n]),
        )
        records.append(rec)
    return records


def _op_start(ctx: RecordContext, rpc: int, ann: int, nvtx: int) -> int:
    for label in (rpc, ann):
        if label >= 0:
            return int(ctx.host_start[ctx.pos(label)])
    if nvtx >= 0:
        start: Any = ctx.nvtx_ops.loc[nvtx, "start_ns"]
        return int(start)
    return -1


def _call_only_records(
    trace: Trace,
    ctx: RecordContext,
    rng: dict[str, pd.DataFrame],
    linked: set[int],
) -> list[dict[str, Any]]:
    """Rows for ``record_param_comms`` ops that name a collective but launched no GPU work."""
    rpcs = rng["rpc"]
    rpcs = rpcs[~rpcs.index.isin(list(linked))]
    if rpcs.empty:
        return []
    # the nccl:* range inside each op (torch ≤ 2.0 names the collective only there)
    anns = rng["ann"]
    ann_in = innermost(
        rpcs,
        anns["pid"].to_numpy(),
        anns["tid"].to_numpy(),
        anns["start_ns"].to_numpy(),
    )
    ann_of = dict(zip(ann_in.tolist(), anns.index.tolist(), strict=True))
    c10d_of = innermost(
        rng["c10d"],
        rpcs["pid"].to_numpy(),
        rpcs["tid"].to_numpy(),
        rpcs["start_ns"].to_numpy(),
    )
    out = []
    for label, c10d in zip(rpcs.index.tolist(), c10d_of.tolist(), strict=True):
        ann = ann_of.get(label, -1)
        rec = collective_record(
            ctx,
            kernel_name=None,
            kernel_args=None,
            rpc=label,
            ann=ann,
            c10d=c10d,
            nvtx=-1,
            group=-1,
        )
        if rec["collective"] is None:
            continue  # work.wait() is recorded as an op too ("wait", or without metadata)
        rec.update(
            n_gpu_rows=0,
            op_start_ns=int(ctx.host_start[ctx.pos(label)]),
            launch_ns=-1,
            start_ns=-1,
            end_ns=-1,
            duration_ns=-1,
            stream=-1,
            device=-1,
            gpu_row=-1,
            gpu_rows=(),
        )
        out.append(rec)
    return out


def _column(name: str, values: list[Any]) -> pd.Series:
    """The table column *name* from its records' values, as a table built by
    ``DataFrame.from_records`` and then converted has it: an int column to int64 (None → -1,
    through float64 as ``to_numeric``/``fillna`` do), any other to objects with None where
    unknown.  Values of the kinds the records hold (str, int, tuple, None) are converted
    directly; anything else takes that pandas route."""
    kinds = {type(v) for v in values}
    if name in INT_COLUMNS:
        if kinds <= {int}:
            try:
                return pd.Series(np.array(values, dtype=np.int64))
            except OverflowError:
                pass
        elif kinds <= {int, type(None)} and all(v is None or abs(v) < 2**53 for v in values):
            floats = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
            return pd.Series(np.where(np.isnan(floats), -1, floats).astype(np.int64))
        col = pd.DataFrame.from_records([{name: v} for v in values], columns=[name])[name]
        return pd.to_numeric(col, errors="coerce").fillna(-1).astype(np.int64)
    # from_records infers str, int64 or object for these, whose objects are the values
    if not (kinds <= {str, type(None)} or kinds <= {int} or kinds <= {tuple, type(None)}):
        col = pd.DataFrame.from_records([{name: v} for v in values], columns=[name])[name]
        col = col.astype(object)
        return col.where(col.notna(), None)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return pd.Series(out, dtype=object)


def _finish(trace: Trace, records: list[dict[str, Any]]) -> pd.DataFrame:
    # rows in launch order (issue order on the host): by launch, else GPU start, else op
    # start, then GPU start, stable
    launch, start, op = (np.array([r[c] for r in records], dtype=np.int64) for c in _WHEN)
    t = np.where(launch >= 0, launch, np.where(start >= 0, start, op))
    records = [records[i] for i in np.lexsort((start, t)).tolist()]
    df = pd.DataFrame({c: _column(c, [r[c] for r in records]) for c in COLUMNS})
    add_message_bytes(df)
    add_bandwidth(df, trace)
    # ordinal within the process group (groups unknown share "?"), in that order
    pg = np.empty(len(records), dtype=object)
    pg[:] = ["?" if r["pg_name"] is None else r["pg_name"] for r in records]
    codes = pd.factorize(pg)[0]
    by_group = np.argsort(codes, kind="stable")
    first = np.r_[0, np.flatnonzero(np.diff(codes[by_group])) + 1]
    rank = np.arange(codes.size) - np.repeat(first, np.diff(np.r_[first, codes.size]))
    ordinal = np.empty(codes.size, dtype=np.int64)
    ordinal[by_group] = rank
    df["ordinal"] = ordinal
    return df
