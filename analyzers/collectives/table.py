"""The per-rank collectives table: one row per NCCL collective executed on the GPU.

Built once per trace from its own tables (``Trace.collectives``); definitions in
docs/communication.md §1.  A *collective* is the GPU work of one communication call:

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
side is known).
``algbw = S / duration``, ``busbw = algbw × factor(collective, group size)`` in GB/s, and
``busbw_link_pct = 100 × busbw / link peak`` where the device's per-direction peak interconnect
bandwidth is known (:data:`LINK_PEAKS`).
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from collectors.linking import innermost_range
from collectors.nccl_formulas import (
    bus_factors,
    canonical_collective,
    canonical_dtype,
    dtype_bytes,
    message_size_rule,
)
from collectors.nccl_kernels import NCCL_NAME, parse_kernel_name

if TYPE_CHECKING:
    from collectors.model import Trace

LINK_PEAKS: tuple[tuple[str, float, str], ...] = (
    (r"GB200|B200|B100", 900.0, "NVLink 5"),
    (r"H100.*PCIe|H100 PCIe", 300.0, "NVLink bridge (2 GPUs)"),
    (r"H100|H200|GH200", 450.0, "NVLink 4"),
    (r"A100.*PCIe", math.nan, ""),
    (r"A100", 300.0, "NVLink 3"),
    (r"V100.*SXM|V100-SXM", 150.0, "NVLink 2"),
    (r"P100.*SXM", 80.0, "NVLink 1"),
    (r"L40S|RTX 4090", 32.0, "PCIe 4.0 x16"),
)
"""(device-name regex, per-direction GB/s, link): reference/gpus.md "NVLink / interconnect".

First match wins; NaN = deliberately unknown (A100 PCIe: NVLink bridge optional).  busbw is a
per-direction figure, so it is compared with the per-direction peak; NVLS / SHARP collectives can
exceed it, and groups spanning nodes are bounded by the network, not by this link."""

_COLUMN_TYPES: dict[str, str] = {
    "rank": "object",
    "collective": "object",
    "collective_source": "object",
    "kernel_name": "object",
    "kernel_collective": "object",
    "kernel_algo": "object",
    "kernel_proto": "object",
    "n_gpu_rows": "int",
    "dtype": "object",
    "in_nelems": "int",
    "out_nelems": "int",
    "in_bytes": "int",
    "out_bytes": "int",
    "message_bytes": "int",
    "size_source": "object",
    "group_size": "int",
    "group_size_source": "object",
    "pg_name": "object",
    "pg_desc": "object",
    "pg_ranks": "object",
    "seq": "int",
    "comms_id": "object",
    "ordinal": "int",
    "src_rank": "int",
    "dst_rank": "int",
    "step": "int",
    "op_start_ns": "int",
    "launch_ns": "int",
    "start_ns": "int",
    "end_ns": "int",
    "duration_ns": "int",
    "stream": "int",
    "device": "int",
    "gpu_row": "int",
    "gpu_rows": "object",
    "algbw_gbps": "float",
    "busbw_gbps": "float",
    "link_peak_gbps": "float",
    "busbw_link_pct": "float",
}
"""Columns of the table (docs/communication.md §1 defines each) and their type: ``int`` (int64,
-1 where unknown), ``float`` (float64) or ``object`` (None where unknown)."""
COLUMNS = tuple(_COLUMN_TYPES)
INT_COLUMNS = tuple(c for c, t in _COLUMN_TYPES.items() if t == "int")
FLOAT_COLUMNS = tuple(c for c, t in _COLUMN_TYPES.items() if t == "float")


def link_peak(device_name: str | None) -> tuple[float, str] | None:
    """(per-direction GB/s, link name) of a device name, or None when not in :data:`LINK_PEAKS`."""
    if not device_name:
        return None
    for pattern, gbps, link in LINK_PEAKS:
        if re.search(pattern, device_name, re.IGNORECASE):
            return (gbps, link) if not math.isnan(gbps) else None
    return None


# ------------------------------------------------------------------------------ arg parsing


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def _ranks(v: Any) -> tuple[int, ...] | None:
    """``Process Group Ranks`` (a list, or its text ``'[0, 1]'``) as a tuple; None if partial."""
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            return None
    if isinstance(v, (list, tuple)) and v and all(_int(x) is not None for x in v):
        return tuple(int(x) for x in v)  # type: ignore[arg-type]
    return None


def _numel(dims: Any) -> int | None:
    if not isinstance(dims, list) or not dims:
        return None
    if not all(isinstance(d, int) and d >= 0 for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))


def _dims_size(dims_json: Any, types_json: Any) -> tuple[int, str] | None:
    """(element count, dtype) of the tensors in a Kineto ``Input Dims``/``Input type`` pair.

    Entries whose type is a tensor dtype and whose dims are non-empty are summed (all of one
    dtype); ``Scalar``, ``TensorList`` and empty entries are skipped.  None when nothing is left.
    """
    import json

    try:
        dims = json.loads(dims_json) if isinstance(dims_json, str) else dims_json
        types = json.loads(types_json) if isinstance(types_json, str) else types_json
    except ValueError:
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    total, dtype = 0, None
    found = False
    for d, t in zip(dims, types, strict=False):
        n = _numel(d)
        c = canonical_dtype(t) if isinstance(t, str) else None
        if n is None or c is None:
            continue
        if dtype is not None and c != dtype:
            return None
        total, dtype, found = total + n, c, True
    return (total, dtype) if found and dtype else None


def _meta_from_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Normalized metadata of a ``comm_args`` dict (keys absent when not recorded)."""
    if not args:
        return {}
    out: dict[str, Any] = {}
    coll = canonical_collective(args.get("Collective name"))
    if coll:
        out["collective"] = coll
    dtype = canonical_dtype(args.get("dtype"))
    if dtype:
        out["dtype"] = dtype
    for key, name in (("In msg nelems", "in_nelems"), ("Out msg nelems", "out_nelems")):
        v = _int(args.get(key))
        if v is not None and v >= 0:
            out[name] = v
    gs = _int(args.get("Group size"))
    if gs is not None and gs > 0:
        out["group_size"] = gs
    pg = args.get("Process Group Name", args.get("Process Group ID"))
    if pg is not None and str(pg) != "":
        out["pg_name"] = str(pg)
    desc = args.get("Process Group Description")
    if isinstance(desc, str) and desc:
        out["pg_desc"] = desc
    ranks = _ranks(args.get("Process Group Ranks"))
    if ranks:
        out["pg_ranks"] = ranks
    for key, name in (("Seq", "seq"), ("Src Rank", "src_rank"), ("Dst Rank", "dst_rank")):
        v = _int(args.get(key))
        if v is not None:
            out[name] = v
    cid = args.get("Comms Id")
    if isinstance(cid, int) and not isinstance(cid, bool):
        out["comms_id"] = cid
    return out


# ------------------------------------------------------------------------- range enclosure


def _name_mask(names: pd.Series, pred: Callable[[str], bool]) -> np.ndarray:
    """Rows whose name satisfies *pred* (each distinct name tested once)."""
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    hits = np.array([pred(str(c)) for c in cat.cat.categories] + [False], dtype=bool)
    return hits[cat.cat.codes.to_numpy()]


def _innermost(ranges: pd.DataFrame, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index label of the innermost range of *ranges* on (pid, tid) containing time t; -1 none.

    *ranges* has columns pid, tid, start_ns, end_ns (index = labels to return).  Containment is
    inclusive at both ends (:func:`collectors.linking.innermost_range` with ``include_end``),
    as this table has always linked: a launch stamped exactly at its range's end still belongs
    to it.  Compare's op view and op cost attribution use the half-open ``[start, end)`` of the
    profiler's call stack instead; the difference is kept so that no table changes.
    """
    out = np.full(len(t), -1, dtype=np.int64)
    if ranges.empty or not len(t):
        return out
    pos = innermost_range(
        ranges["start_ns"].to_numpy(dtype=np.int64),
        ranges["end_ns"].to_numpy(dtype=np.int64),
        (ranges["pid"].to_numpy(), ranges["tid"].to_numpy()),
        t,
        (pid, tid),
        include_end=True,
    )
    hit = pos >= 0
    out[hit] = ranges.index.to_numpy()[pos[hit]]
    return out


def _launches(trace: Trace, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pid, tid, start_ns) of the host call with each correlation id (-1 where none)."""
    h = trace.host
    n = len(corr)
    pid = np.full(n, -1, np.int64)
    tid = np.full(n, -1, np.int64)
    start = np.full(n, -1, np.int64)
    if h.empty or not n:
        return pid, tid, start
    hc = h["correlation"].to_numpy()
    sel = hc >= 0
    if not sel.any():
        return pid, tid, start
    hh = pd.DataFrame(
        {
            "corr": hc[sel],
            "pid": h["pid"].to_numpy()[sel],
            "tid": h["tid"].to_numpy()[sel],
            "start": h["start_ns"].to_numpy()[sel],
        }
    ).drop_duplicates("corr")
    m = pd.DataFrame({"corr": corr}).merge(hh, on="corr", how="left")
    known = m["start"].notna().to_numpy()
    pid[known] = m["pid"].to_numpy()[known].astype(np.int64)
    tid[known] = m["tid"].to_numpy()[known].astype(np.int64)
    start[known] = m["start"].to_numpy()[known].astype(np.int64)
    return pid, tid, start


def _nvtx_ranges(trace: Trace) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """NCCL-domain NVTX collective ranges, ``ncclGroupEnd`` and ``ncclGroupStart`` ranges."""
    a = trace.annotations
    empty = pd.DataFrame(columns=["pid", "tid", "start_ns", "end_ns", "name", "payload"])
    if a.empty:
        return empty, empty, empty
    dom = a["domain"].astype(object)
    nccl = (a["kind"] == "nvtx").to_numpy() & (dom == "NCCL").to_numpy()
    if not nccl.any():
        return empty, empty, empty
    r = a[nccl]
    names = r["name"].astype(str)
    coll = names.map(lambda s: canonical_collective(s) if s.startswith("nccl") else None)
    ops = r[coll.notna().to_numpy()].assign(collective=coll[coll.notna()])
    ends = r[names.str.startswith("ncclGroupEnd").to_numpy()]
    starts = r[names.str.startswith("ncclGroupStart").to_numpy()]
    return ops, ends, starts


# --------------------------------------------------------------------------------- builder


def _pg_config(trace: Trace) -> dict[str, dict[str, Any]]:
    info = trace.meta.extra.get("distributedInfo") or {}
    out: dict[str, dict[str, Any]] = {}
    for pg in info.get("pg_config") or []:
        if isinstance(pg, dict) and "pg_name" in pg:
            out[str(pg["pg_name"])] = pg
    return out


def _empty() -> pd.DataFrame:
    df = pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    for c in INT_COLUMNS:
        df[c] = df[c].astype(np.int64)
    for c in FLOAT_COLUMNS:
        df[c] = df[c].astype(np.float64)
    return df


@dataclass
class _Ctx:
    """What the per-collective metadata lookup needs from the trace's tables."""

    host_args: np.ndarray
    host_dims: np.ndarray
    host_types: np.ndarray
    host_names: np.ndarray
    host_start: np.ndarray
    h_index: pd.Index
    nvtx_ops: pd.DataFrame
    nvtx_groups: pd.DataFrame
    nvtx_group_starts: pd.DataFrame
    pg_cfg: dict[str, dict[str, Any]]

    def pos(self, label: int) -> int:
        return int(self.h_index.get_loc(label))


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
    hname = h["name"].astype(object)
    is_rpc = _name_mask(h["name"], lambda s: s == "record_param_comms")
    is_ann = _name_mask(h["name"], lambda s: s.startswith("nccl:"))
    is_c10d = _name_mask(h["name"], lambda s: s.startswith("c10d::"))
    nvtx_ops, nvtx_groups, nvtx_group_starts = _nvtx_ranges(trace)
    ctx = _Ctx(
        host_args=h["comm_args"].to_numpy(),
        host_dims=h["input_dims"].to_numpy(),
        host_types=h["input_types"].to_numpy(),
        host_names=hname.to_numpy(),
        host_start=h["start_ns"].to_numpy(),
        h_index=h.index,
        nvtx_ops=nvtx_ops,
        nvtx_groups=nvtx_groups,
        nvtx_group_starts=nvtx_group_starts,
        pg_cfg=_pg_config(trace),
    )
    rng = h[["pid", "tid", "start_ns", "end_ns"]]
    steps = trace.steps()
    records = _gpu_records(trace, ctx, rng, is_rpc, is_ann, is_c10d)
    linked = {r.pop("_rpc") for r in records} - {-1}
    records += _call_only_records(trace, ctx, rng, is_rpc, is_ann, is_c10d, linked)
    s_lo = steps["start_ns"].to_numpy()
    s_hi = steps["end_ns"].to_numpy()
    s_num = steps["step"].to_numpy()
    for rec in records:
        rec["rank"] = trace.rank
        t = next((x for x in (rec["launch_ns"], rec["start_ns"], rec["op_start_ns"]) if x >= 0), -1)
        k = np.searchsorted(s_lo, t, side="right") - 1
        rec["step"] = int(s_num[k]) if t >= 0 and k >= 0 and t < s_hi[k] else -1
    if not records:
        return _empty()
    return _finish(trace, records)


def _gpu_records(
    trace: Trace,
    ctx: _Ctx,
    rng: pd.DataFrame,
    is_rpc: np.ndarray,
    is_ann: np.ndarray,
    is_c10d: np.ndarray,
) -> list[dict[str, Any]]:
    """One record per collective with GPU work (module docstring, steps 1–3)."""
    g = trace.gpu
    if g.empty:
        return []
    names = g["name"]
    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    is_nccl_cat = np.array([bool(NCCL_NAME.match(str(c))) for c in cat.cat.categories] + [False])
    kind = g["kind"].astype(object).to_numpy()
    nccl_rows = is_nccl_cat[cat.cat.codes.to_numpy()] & (kind != "memset")
    memcpy_rows = (kind == "memcpy") & ~nccl_rows
    cand = np.flatnonzero(nccl_rows | memcpy_rows)
    if not cand.size:
        return []
    gc = g.iloc[cand]
    lpid, ltid, lstart = _launches(trace, gc["correlation"].to_numpy())
    rpc_of = _innermost(rng[is_rpc], lpid, ltid, lstart)
    ann_of = _innermost(rng[is_ann], lpid, ltid, lstart)
    c10d_of = _innermost(rng[is_c10d], lpid, ltid, lstart)
    nvtx_of = _innermost(ctx.nvtx_ops, lpid, ltid, lstart)
    group_of = _innermost(ctx.nvtx_groups, lpid, ltid, lstart)
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
    with_kernels = np.unique(range_key[is_nccl_c & (range_key >= 0)])
    keep = is_nccl_c | (~is_nccl_c & (range_key >= 0) & ~np.isin(range_key, with_kernels))
    if not keep.any():
        return []
    sel = np.flatnonzero(keep)
    op_key = np.where(rpc_of >= 0, rpc_of * 4, range_key)[sel]
    op_key = np.where(op_key >= 0, op_key, -(np.arange(sel.size) + 1))  # unlinked: own row
    g_names = gc["name"].astype(object).to_numpy()
    g_args = gc["comm_args"].to_numpy()
    g_start = gc["start_ns"].to_numpy()
    g_end = gc["end_ns"].to_numpy()
    g_stream = gc["stream"].to_numpy()
    g_dev = gc["device"].to_numpy()

    records = []
    o = np.lexsort((g_start[sel], op_key))
    order = sel[o]
    ks = op_key[o]
    bounds = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1], True])
    for b0, b1 in itertools.pairwise(bounds):
        members = order[b0:b1]
        first = int(members[0])
        kname = next((g_names[m] for m in members if NCCL_NAME.match(str(g_names[m]))), None)
        kargs = next((g_args[m] for m in members if g_args[m]), None)
        rpc, ann, nvtx = int(rpc_of[first]), int(ann_of[first]), int(nvtx_of[first])
        rec = _collective_record(
            ctx,
            kernel_name=kname if kname is not None else str(g_names[first]),
            kernel_args=kargs,
            rpc=rpc,
            ann=ann,
            c10d=int(c10d_of[first]),
            nvtx=nvtx,
            group=int(group_of[first]),
        )
        lm = lstart[members]
        start = int(g_start[members].min())
        end = int(g_end[members].max())
        rec.update(
            _rpc=rpc,
            n_gpu_rows=int(members.size),
            op_start_ns=_op_start(ctx, rpc, ann, nvtx),
            launch_ns=int(lm[lm >= 0].min()) if (lm >= 0).any() else -1,
            start_ns=start,
            end_ns=end,
            duration_ns=end - start,
            stream=int(g_stream[first]),
            device=int(g_dev[first]),
            gpu_row=int(g.index[cand[first]]),
            gpu_rows=tuple(int(x) for x in g.index[cand[np.sort(members)]]),
        )
        records.append(rec)
    return records


def _op_start(ctx: _Ctx, rpc: int, ann: int, nvtx: int) -> int:
    for label in (rpc, ann):
        if label >= 0:
            return int(ctx.host_start[ctx.pos(label)])
    if nvtx >= 0:
        return int(ctx.nvtx_ops.loc[nvtx, "start_ns"])
    return -1


def _call_only_records(
    trace: Trace,
    ctx: _Ctx,
    rng: pd.DataFrame,
    is_rpc: np.ndarray,
    is_ann: np.ndarray,
    is_c10d: np.ndarray,
    linked: set[int],
) -> list[dict[str, Any]]:
    """Rows for ``record_param_comms`` ops that name a collective but launched no GPU work."""
    rpcs = rng[is_rpc]
    rpcs = rpcs[~rpcs.index.isin(list(linked))]
    if rpcs.empty:
        return []
    # the nccl:* range inside each op (torch ≤ 2.0 names the collective only there)
    anns = rng[is_ann]
    ann_in = _innermost(
        rpcs,
        anns["pid"].to_numpy(),
        anns["tid"].to_numpy(),
        anns["start_ns"].to_numpy(),
    )
    ann_of = dict(zip(ann_in.tolist(), anns.index.tolist(), strict=True))
    c10d_of = _innermost(
        rng[is_c10d],
        rpcs["pid"].to_numpy(),
        rpcs["tid"].to_numpy(),
        rpcs["start_ns"].to_numpy(),
    )
    out = []
    for label, c10d in zip(rpcs.index.tolist(), c10d_of.tolist(), strict=True):
        ann = ann_of.get(label, -1)
        rec = _collective_record(
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


def _collective_record(
    ctx: _Ctx,
    *,
    kernel_name: str | None,
    kernel_args: Mapping[str, Any] | None,
    rpc: int,
    ann: int,
    c10d: int,
    nvtx: int,
    group: int,
) -> dict[str, Any]:
    """Metadata of one collective from its op, annotation, NVTX range and kernel."""
    kinfo = parse_kernel_name(kernel_name) if kernel_name else None
    rpc_meta = _meta_from_args(ctx.host_args[ctx.pos(rpc)]) if rpc >= 0 else {}
    k_meta = _meta_from_args(kernel_args)
    nv_meta: dict[str, Any] = {}
    nv_name = None
    if nvtx >= 0:
        row = ctx.nvtx_ops.loc[nvtx]
        nv_name = row["collective"]
        nv_meta = _nvtx_meta(row["payload"], nv_name)
    elif group >= 0:
        nv_name, nv_meta = _group_meta(
            ctx.nvtx_ops, ctx.nvtx_group_starts, ctx.nvtx_groups.loc[group]
        )
    ann_name = canonical_collective(ctx.host_names[ctx.pos(ann)]) if ann >= 0 else None

    rec: dict[str, Any] = {c: None for c in COLUMNS}
    for value, src in (
        (rpc_meta.get("collective"), "record_param_comms"),
        (k_meta.get("collective"), "kernel_args"),
        (ann_name, "annotation"),
        (nv_name, "nvtx"),
        (kinfo.collective if kinfo else None, "kernel_name"),
    ):
        if value:
            rec["collective"], rec["collective_source"] = value, src
            break
    rec["kernel_name"] = kernel_name
    if kinfo is not None:
        rec["kernel_collective"] = kinfo.collective
        rec["kernel_algo"] = kinfo.kernel_algo
        rec["kernel_proto"] = kinfo.kernel_proto

    # sizes and dtype
    size_src = None
    for meta, src in ((rpc_meta, "record_param_comms"), (k_meta, "kernel_args")):
        if "in_nelems" in meta or "out_nelems" in meta:
            rec["in_nelems"] = meta.get("in_nelems")
            rec["out_nelems"] = meta.get("out_nelems")
            rec["dtype"] = meta.get("dtype")
            size_src = src
            break
    if size_src is None:
        for label, src in ((rpc, "input_dims"), (ann, "annotation_dims")):
            if label < 0:
                continue
            got = _dims_size(ctx.host_dims[ctx.pos(label)], ctx.host_types[ctx.pos(label)])
            if got:
                rec["in_nelems"], rec["dtype"] = got
                size_src = src
                break
    if size_src is None and ("in_bytes" in nv_meta or "out_bytes" in nv_meta):
        size_src = "nvtx"
    rec["size_source"] = size_src
    if rec["dtype"] is None:
        rec["dtype"] = rpc_meta.get("dtype") or k_meta.get("dtype")
    if rec["dtype"] is None and kinfo is not None:
        rec["dtype"] = kinfo.kernel_dtype
    elt = dtype_bytes(rec["dtype"])
    for side in ("in", "out"):
        n = rec[f"{side}_nelems"]
        rec[f"{side}_bytes"] = n * elt if n is not None and elt else None
    if size_src == "nvtx":
        rec["in_bytes"] = nv_meta.get("in_bytes")
        rec["out_bytes"] = nv_meta.get("out_bytes")

    # process group and group size
    meta_any = {**nv_meta, **k_meta, **rpc_meta}
    for key in ("pg_name", "pg_desc", "pg_ranks", "seq", "comms_id", "src_rank", "dst_rank"):
        rec[key] = meta_any.get(key)
    cfg = ctx.pg_cfg.get(rec["pg_name"]) if rec["pg_name"] is not None else None
    if cfg is not None:
        if rec["pg_ranks"] is None:
            rec["pg_ranks"] = _ranks(cfg.get("ranks"))
        if rec["pg_desc"] is None and isinstance(cfg.get("pg_desc"), str):
            rec["pg_desc"] = cfg["pg_desc"]
    for meta, src in ((rpc_meta, "record_param_comms"), (k_meta, "kernel_args"), (nv_meta, "nvtx")):
        if "group_size" in meta:
            rec["group_size"], rec["group_size_source"] = meta["group_size"], src
            break
    if rec["group_size"] is None and cfg is not None and _int(cfg.get("pg_size")):
        rec["group_size"], rec["group_size_source"] = int(cfg["pg_size"]), "pg_config"
    if rec["group_size"] is None and rec["pg_ranks"]:
        rec["group_size"], rec["group_size_source"] = len(rec["pg_ranks"]), "pg_ranks"
    if rec["group_size"] is None and c10d >= 0:
        p = ctx.pos(c10d)
        n = _c10d_ratio(str(ctx.host_names[p]), ctx.host_dims[p])
        if n:
            rec["group_size"], rec["group_size_source"] = n, "c10d_dims"
    return rec


def _c10d_ratio(name: str, dims_json: Any) -> int | None:
    """Group size from a ``c10d::_allgather_base_`` / ``_reduce_scatter_base_`` op's tensors.

    Torch ≤ 2.0 records ``Input Dims = [output, input, ...]``; all_gather's output is n × its
    input, reduce_scatter's input n × its output.
    """
    import json

    if "allgather_base" not in name and "reduce_scatter_base" not in name:
        return None
    try:
        dims = json.loads(dims_json) if isinstance(dims_json, str) else None
    except ValueError:
        return None
    if not isinstance(dims, list) or len(dims) < 2:
        return None
    a, b = _numel(dims[0]), _numel(dims[1])
    if not a or not b:
        return None
    big, small = max(a, b), min(a, b)
    return big // small if big % small == 0 and big // small >= 2 else None


def _nvtx_meta(payload: Any, collective: str | None) -> dict[str, Any]:
    """Metadata from an NCCL NVTX range's normalized payload (see collectors.nsys_host)."""
    if not isinstance(payload, dict):
        return {}
    out: dict[str, Any] = {}
    size = _int(payload.get("message_size_bytes"))
    if size is not None and size >= 0:
        # per rank: AllGather sendcount, ReduceScatter recvcount, others the (input) count
        out["out_bytes" if collective == "reduce_scatter" else "in_bytes"] = size
    cid = payload.get("comm_id")
    if cid is not None:
        out["pg_name"] = f"comm:{int(cid):x}" if _int(cid) is not None else f"comm:{cid}"
    peer = _int(payload.get("peer"))
    if peer is not None:
        out["dst_rank" if collective == "send" else "src_rank"] = peer
    return out


def _group_meta(
    ops: pd.DataFrame, starts: pd.DataFrame, group: pd.Series
) -> tuple[str | None, dict[str, Any]]:
    """Collective and summed sizes of the NVTX collective ranges inside an NCCL group call.

    ``ncclGroupEnd`` launches the group's kernel; the members are the collective ranges on the
    same thread between the last ``ncclGroupStart`` before it and its start.  A group of sends
    and receives is ``send_recv``; a group of one collective type is that type; a mix is
    unknown (None).
    """
    same_thread = (starts["pid"] == group["pid"]) & (starts["tid"] == group["tid"])
    begin = starts[same_thread & (starts["start_ns"] <= group["start_ns"])]
    if begin.empty:
        return None, {}
    t0 = begin["start_ns"].max()
    members = ops[
        (ops["pid"] == group["pid"])
        & (ops["tid"] == group["tid"])
        & (ops["start_ns"] >= t0)
        & (ops["end_ns"] <= group["start_ns"])
    ]
    colls = set(members["collective"])
    if not colls:
        return None, {}
    if colls <= {"send", "recv"}:
        name = "send_recv" if len(colls) == 2 else next(iter(colls))
    elif len(colls) == 1:
        name = next(iter(colls))
    else:
        return None, {}
    metas = [
        _nvtx_meta(p, c) for p, c in zip(members["payload"], members["collective"], strict=True)
    ]
    out: dict[str, Any] = {}
    for side in ("in_bytes", "out_bytes"):
        vals = [m[side] for m in metas if side in m]
        if vals and len(vals) == len(metas):
            out[side] = int(sum(vals))
    pgs = {m.get("pg_name") for m in metas}
    if len(pgs) == 1 and None not in pgs:
        out["pg_name"] = pgs.pop()
    return name, out


def _finish(trace: Trace, records: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    for c in COLUMNS:
        if c not in INT_COLUMNS and c not in FLOAT_COLUMNS:
            col = df[c].astype(object)
            df[c] = col.where(col.notna(), None)
    for c in INT_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").fillna(-1).astype(np.int64)
    # derive the missing side through the group size, then S (nccl-tests message size)
    n = df["group_size"].to_numpy()
    coll = df["collective"].to_numpy(dtype=object)
    inb = df["in_bytes"].to_numpy().copy()
    outb = df["out_bytes"].to_numpy().copy()
    gather_like = np.isin(coll, ["all_gather", "gather"])
    scatter_like = np.isin(coll, ["reduce_scatter", "scatter"])
    same = np.isin(coll, ["all_reduce", "broadcast", "reduce"])
    known_n = n > 0
    fix = gather_like & (outb < 0) & (inb >= 0) & known_n
    outb[fix] = inb[fix] * n[fix]
    fix = scatter_like & (inb < 0) & (outb >= 0) & known_n
    inb[fix] = outb[fix] * n[fix]
    fix = same & (outb < 0) & (inb >= 0)
    outb[fix] = inb[fix]
    df["in_bytes"] = inb.astype(np.int64)
    df["out_bytes"] = outb.astype(np.int64)
    rule_out = np.array([message_size_rule(c) == "out" for c in coll], dtype=bool)
    df["message_bytes"] = np.where(rule_out, outb, inb).astype(np.int64)
    dur = df["duration_ns"].to_numpy().astype(np.float64)
    size = df["message_bytes"].to_numpy().astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg = np.where((size >= 0) & (dur > 0), size / dur, np.nan)
    df["algbw_gbps"] = alg
    df["busbw_gbps"] = alg * bus_factors(df["collective"], df["group_size"].where(n > 0))
    peaks = []
    for d in df["device"].to_numpy():
        dev = trace.meta.device(int(d)) if d >= 0 else trace.gpu_device
        lp = link_peak(dev.name if dev is not None else None)
        peaks.append(lp[0] if lp else math.nan)
    df["link_peak_gbps"] = np.array(peaks, dtype=np.float64)
    df["busbw_link_pct"] = 100.0 * df["busbw_gbps"] / df["link_peak_gbps"]
    # ordinal within the process group, in launch order (issue order on the host)
    t = np.where(
        df["launch_ns"] >= 0,
        df["launch_ns"],
        np.where(df["start_ns"] >= 0, df["start_ns"], df["op_start_ns"]),
    )
    df = df.assign(_t=t).sort_values(["_t", "start_ns"], kind="stable").drop(columns="_t")
    pg = df["pg_name"].astype(object).where(df["pg_name"].notna(), "?")
    df["ordinal"] = df.groupby(pg, sort=False).cumcount().astype(np.int64)
    return df.reset_index(drop=True)[list(COLUMNS)]
