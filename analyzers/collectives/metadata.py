"""Metadata of one collective from its op, ``nccl:*`` annotation, NVTX range and kernel: which
source names the collective, its sizes and dtype, process group and group size, first source
that has it (the order of the table in the :mod:`analyzers.collectives.table` docstring)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from analyzers.collectives.args import as_int, collective_of, meta_from_args, nvtx_meta, parse_ranks
from analyzers.collectives.columns import COLUMNS
from analyzers.collectives.sizes import c10d_group_size, dims_size
from collectors.nccl_formulas import dtype_bytes
from collectors.nccl_kernels import NcclKernel, parse_kernel_name


class Column:
    """The values of a table column by position, as ``col.to_numpy()`` of a column has them
    (``col.astype(object)`` for a categorical one: NaN for a missing value), looked up one at a
    time (no object array of every row is made for the few rows a table reads)."""

    def __init__(self, col: pd.Series) -> None:
        self._codes: np.ndarray | None = None
        if isinstance(col.dtype, pd.CategoricalDtype):
            self._codes = col.cat.codes.to_numpy()
            self._labels = np.append(col.cat.categories.to_numpy(dtype=object), np.nan)
        self._array = col.array

    def __getitem__(self, position: int) -> Any:
        if self._codes is not None:
            return self._labels[self._codes[position]]
        return self._array[position]


@dataclass
class RecordContext:
    """What the per-collective metadata lookup needs from the trace's tables."""

    host_args: Column
    host_dims: Column
    host_types: Column
    host_names: Column
    host_start: np.ndarray
    h_index: pd.Index
    nvtx_ops: pd.DataFrame
    nvtx_groups: pd.DataFrame
    nvtx_group_starts: pd.DataFrame
    pg_cfg: dict[str, dict[str, Any]]

    def pos(self, label: int) -> int:
        return int(cast(int, self.h_index.get_loc(label)))  # the index is unique


@functools.lru_cache(maxsize=4096)
def kernel_info(name: str) -> NcclKernel | None:
    """:func:`collectors.nccl_kernels.parse_kernel_name`, once per distinct name."""
    return parse_kernel_name(name)


def collective_record(
    ctx: RecordContext,
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
    kinfo = kernel_info(kernel_name) if kernel_name else None
    rpc_meta = meta_from_args(ctx.host_args[ctx.pos(rpc)]) if rpc >= 0 else {}
    k_meta = meta_from_args(kernel_args)
    nv_meta: dict[str, Any] = {}
    nv_name = None
    if nvtx >= 0:
        row: Any = ctx.nvtx_ops.loc[nvtx]
        nv_name = row["collective"]
        nv_meta = nvtx_meta(row["payload"], nv_name)
    elif group >= 0:
        nv_name, nv_meta = group_meta(
            ctx.nvtx_ops, ctx.nvtx_group_starts, cast("pd.Series", ctx.nvtx_groups.loc[group])
        )
    ann_name = collective_of(ctx.host_names[ctx.pos(ann)]) if ann >= 0 else None

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
            got = dims_size(ctx.host_dims[ctx.pos(label)], ctx.host_types[ctx.pos(label)])
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
            rec["pg_ranks"] = parse_ranks(cfg.get("ranks"))
        if rec["pg_desc"] is None and isinstance(cfg.get("pg_desc"), str):
            rec["pg_desc"] = cfg["pg_desc"]
    for meta, src in ((rpc_meta, "record_param_comms"), (k_meta, "kernel_args"), (nv_meta, "nvtx")):
        if "group_size" in meta:
            rec["group_size"], rec["group_size_source"] = meta["group_size"], src
            break
    if rec["group_size"] is None and cfg is not None and as_int(cfg.get("pg_size")):
        rec["group_size"], rec["group_size_source"] = int(cfg["pg_size"]), "pg_config"
    if rec["group_size"] is None and rec["pg_ranks"]:
        rec["group_size"], rec["group_size_source"] = len(rec["pg_ranks"]), "pg_ranks"
    if rec["group_size"] is None and c10d >= 0:
        p = ctx.pos(c10d)
        n = c10d_group_size(str(ctx.host_names[p]), ctx.host_dims[p])
        if n:
            rec["group_size"], rec["group_size_source"] = n, "c10d_dims"
    return rec


def group_meta(
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
        nvtx_meta(p, c) for p, c in zip(members["payload"], members["collective"], strict=True)
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
