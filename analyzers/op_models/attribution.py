"""Attribution of launched GPU work to the modelled ops (HTA call-stack semantics), and the
per-call and per-shape cost tables.

Attribution: a GPU activity → the runtime call with the same ``correlation`` → the CPU op with
the call's ``external_id`` if that op encloses the call in time on the same thread, else the
innermost CPU op enclosing the call → that op's **outermost modelled ancestor** (so
``aten::linear`` owns the GEMM that its inner ``aten::addmm`` launched, and no kernel is
counted twice).

Both tables carry, in ``DataFrame.attrs["gpu_time_ns"]``, the trace's GPU work time
(:func:`gpu_work_time_ns`): the denominator of every roofline time share
(:func:`analyzers.roofline.op_roofline`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from analyzers.memo import memoised
from analyzers.op_models.arg_columns import arg_codes, inferred, names_at, texts_at
from analyzers.op_models.args import OpCost
from analyzers.op_models.calls import (
    call_parents,
    cpu_op_parents,
    cpu_op_rows,
    gpu_launch_calls,
)
from analyzers.op_models.registry import MODELS, model_op
from collectors.linking import launch_mask
from collectors.model import GPU_WORK_KINDS, Trace, names_matching

TF32_KERNEL = r"tf32|tensorop_s\d{4,5}"
"""Kernel names of TF32 tensor-core GEMMs/convolutions (cuBLAS ``..._tf32f32_...``, CUTLASS
``tensorop_s1688gemm``): an fp32 op that launched one is compared with the TF32 peak."""


@memoised
def modelled_op_costs(trace: Trace) -> Mapping[int, OpCost]:
    """:func:`modelled_costs` of the ``cpu_op`` rows of *trace*, memoised (read-only)."""
    return MappingProxyType(modelled_costs(trace.host, cpu_op_rows(trace.host)))


@memoised
def modelled_tops(trace: Trace) -> np.ndarray:
    """Per host row, for ``cpu_op`` rows: the outermost modelled op (:func:`modelled_op_costs`)
    among the row and its ancestors (:func:`~analyzers.op_models.calls.cpu_op_parents`), -1
    none (every other row -1); memoised, read-only (the roofline's op costs and the serving
    section's FLOP attribution both take it)."""
    host = trace.host
    ops = cpu_op_rows(host)
    costs = modelled_op_costs(trace)
    modelled = np.zeros(len(host), dtype=bool)
    modelled[np.fromiter(costs, dtype=np.int64, count=len(costs))] = True
    top = np.full(len(host), -1, dtype=np.int64)
    if len(costs):
        top[ops] = outermost_modelled(ops, cpu_op_parents(trace), modelled)[ops]
    top.setflags(write=False)
    return top


def outermost_modelled(ops: np.ndarray, parent: np.ndarray, modelled: np.ndarray) -> np.ndarray:
    """Per host row, for op rows: the outermost modelled op among the row and its ancestors
    (-1 none).  Pointer jumping: ``top`` holds the answer for the chain segment from a row up
    to (not including) ``up``; joining a segment with the one above it keeps the upper answer
    when there is one; log₂(depth) rounds."""
    top = np.where(modelled, np.arange(len(parent)), -1)
    up = parent.copy()
    live = ops[up[ops] >= 0]
    while live.size:
        above = up[live]
        upper = top[above]
        top[live] = np.where(upper >= 0, upper, top[live])
        up[live] = up[above]
        live = live[up[live] >= 0]
    return top


_SHAPE_COLUMNS = (
    "op",
    "input_dims",
    "input_types",
    "concrete_inputs",
    "kind",
    "precision",
    "exact",
    "note",
)
_WORK_COLUMNS = ("flops", "bytes", "kernels", "kernel_time_ns", "host_copy")
OP_COST_COLUMNS = ("host_row", *_SHAPE_COLUMNS, *_WORK_COLUMNS)
"""Columns of :func:`op_costs`."""
OP_GROUP_COLUMNS = (*_SHAPE_COLUMNS, "calls", *_WORK_COLUMNS)
"""Columns of :func:`op_groups`."""
GPU_TIME = "gpu_time_ns"
"""The ``attrs`` key of the trace's GPU work time on both tables."""


def gpu_work_time_ns(trace: Trace) -> int:
    """Σ (end − start) of the trace's GPU activities of kind kernel, memcpy and memset: the
    GPU time the op models are a share of."""
    g = trace.gpu
    if g.empty:
        return 0
    work = np.asarray(g["kind"].isin(GPU_WORK_KINDS), dtype=bool)
    return int((g["end_ns"].to_numpy()[work] - g["start_ns"].to_numpy()[work]).sum())


ARG_COLUMNS = ("input_dims", "input_types", "concrete_inputs", "input_strides")
"""The host columns the op models read, in :func:`~analyzers.op_models.model_op` order."""


def name_codes(col: pd.Series) -> tuple[np.ndarray, list[Any]]:
    """``(codes, distinct values)`` of a name column; a missing value's code points at a
    trailing ``NaN`` entry (what ``astype(object)`` gives for it).  A categorical's own codes
    and categories (no pass over the rows)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        values = col.cat.categories.astype(object).tolist()
        return np.where(codes < 0, len(values), codes), [*values, np.nan]
    codes, uniques = col.factorize()
    codes = np.asarray(codes, np.int64)
    return np.where(codes < 0, len(uniques), codes), [*uniques, np.nan]


def modelled_costs(host: pd.DataFrame, ops: np.ndarray) -> dict[int, OpCost]:
    """The cost of every op row (positions *ops* of *host*) whose op has a model that gives
    one (:func:`~analyzers.op_models.model_op` on the recorded :data:`ARG_COLUMNS`, None for a
    column the trace lacks); one model call per distinct (op, arguments)."""
    codes, names = name_codes(host["name"])
    has_model = np.asarray([isinstance(n, str) and n in MODELS for n in names], bool)
    rows = ops[has_model[codes[ops]]]
    if not len(rows):
        return {}
    coded = [arg_codes(host, c, rows) for c in ARG_COLUMNS]
    if all(c is not None for c in coded):
        # one model call per distinct (op, arguments): the rows' codes as one key
        digits = [codes[rows], *(c[0] for c in coded if c is not None)]
        values = [names, *(c[1] for c in coded if c is not None)]
        key = np.zeros(len(rows), dtype=np.int64)
        for d in digits:
            key = np.asarray(pd.factorize(key * (int(d.max(initial=0)) + 1) + d)[0], np.int64)
        combo, first = np.unique(key, return_index=True)
        cost = [
            _model(tuple(v[int(d[f])] for v, d in zip(values, digits, strict=True)))
            for f in first.tolist()
        ]
        at = np.searchsorted(combo, key)
        has = np.array([c is not None for c in cost], dtype=bool)[at]
        return dict(zip(rows[has].tolist(), [cost[i] for i in at[has].tolist()], strict=True))
    cols = [
        host[c].take(rows).to_numpy() if c in host else np.full(len(rows), None, object)
        for c in ARG_COLUMNS
    ]
    # per row, the key as the loop over rows would index it (object columns' own values,
    # numpy scalars of any other), built by zip instead of per-row indexing
    op_names = [names[c] for c in codes[rows].tolist()]
    args = [v.tolist() if v.dtype == object else list(v) for v in cols]
    costs: dict[int, OpCost] = {}
    for i, key_ in zip(rows.tolist(), zip(op_names, *args, strict=True), strict=True):
        c = _model(key_)
        if c is not None:
            costs[i] = c
    return costs


_SEEN: dict[tuple[Any, ...], OpCost | None] = {}
_SEEN_MAX = 1 << 16


def _model(key: tuple[Any, ...]) -> OpCost | None:
    """``model_op(*key)``, once per distinct key in this process (the serving and roofline
    sections model the same calls; :class:`OpCost` is immutable)."""
    try:
        return _SEEN[key]
    except KeyError:
        pass
    except TypeError:  # an argument recorded as a list: not hashable
        return model_op(*key)
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    c = _SEEN[key] = model_op(*key)
    return c


def _empty(cols: list[str], gpu_time: int) -> pd.DataFrame:
    out = pd.DataFrame(columns=cols)
    out.attrs[GPU_TIME] = gpu_time
    return out


def op_costs(trace: Trace) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work.

    Columns: host_row, op, input_dims, input_types, concrete_inputs (the recorded arguments,
    JSON text, "" when absent), kind, precision, exact (every argument the model needs was
    recorded; False: an estimate), note (why an estimate), flops, bytes, kernels (number of
    GPU activities), kernel_time_ns (sum of their durations), host_copy (the op's GPU work
    includes a copy to or from host memory: PCIe-bound, so the DRAM roof does not apply).
    ``attrs["gpu_time_ns"]``: :func:`gpu_work_time_ns`.
    """
    cols = list(OP_COST_COLUMNS)
    host, gpu = trace.host, trace.gpu
    gpu_time = gpu_work_time_ns(trace)
    if host.empty or gpu.empty:
        return _empty(cols, gpu_time)
    ops = cpu_op_rows(host)
    launches = np.flatnonzero(launch_mask(host))
    if len(ops) == 0 or len(launches) == 0:
        return _empty(cols, gpu_time)

    costs = modelled_op_costs(trace)
    if not costs:
        return _empty(cols, gpu_time)

    # per GPU work row with a correlation id: its launching call and the op that owns it —
    # the op with the call's external id (the first such op) if it encloses the call on its
    # thread, else the innermost op enclosing the call — and that op's outermost modelled
    # ancestor-or-self
    work = np.flatnonzero(
        np.asarray(gpu["kind"].isin(GPU_WORK_KINDS), dtype=bool)
        & (gpu["correlation"].to_numpy() >= 0)
    )
    calls = gpu_launch_calls(trace)[work]
    linked = call_parents(trace)[work]
    start = host["start_ns"].to_numpy()
    end = host["end_ns"].to_numpy()
    tid = host["tid"].to_numpy()
    ext = host["external_id"].to_numpy()
    op_ext = ext[ops]
    with_ext = op_ext >= 0
    ext_ids, first = np.unique(op_ext[with_ext], return_index=True)
    has = np.flatnonzero(calls >= 0)
    if ext_ids.size and has.size:
        c = calls[has]
        l_ext = ext[c]
        at = np.minimum(np.searchsorted(ext_ids, l_ext), ext_ids.size - 1)
        found = (l_ext >= 0) & (ext_ids[at] == l_ext)
        cand = np.where(found, ops[with_ext][first][at], 0)
        ok = found & (tid[cand] == tid[c]) & (start[cand] <= start[c]) & (start[c] < end[cand])
        linked[has] = np.where(ok, cand, linked[has])
    top = modelled_tops(trace)
    owned = np.where((calls >= 0) & (linked >= 0), top[np.maximum(linked, 0)], -1)
    keep = owned >= 0
    if not keep.any():
        return _empty(cols, gpu_time)
    rows, own = work[keep], owned[keep]
    dur = gpu["end_ns"].to_numpy()[rows] - gpu["start_ns"].to_numpy()[rows]
    owners, inv = np.unique(own, return_inverse=True)  # by host row, as the groupby sorted
    kernels = np.bincount(inv, minlength=len(owners)).astype(np.int64)
    kernel_time = np.zeros(len(owners), dtype=np.int64)
    np.add.at(kernel_time, inv, dur)
    tf32 = names_matching(gpu["name"], re.compile(TF32_KERNEL).search)[rows]  # once per name
    memcpy = np.asarray(gpu["kind"] == "memcpy", dtype=bool)
    to_host = (names_matching(gpu["copy_kind"], lambda k: "H" in k) & memcpy)[rows]
    tf32_owner = np.bincount(inv, weights=tf32, minlength=len(owners)) > 0
    host_owner = np.bincount(inv, weights=to_host, minlength=len(owners)) > 0
    # the owners' costs: one OpCost object per distinct model key, so its fields are read
    # once per distinct object and taken for every owner
    cost = [costs[i] for i in owners.tolist()]
    which = np.asarray(pd.factorize(np.fromiter(map(id, cost), np.int64, len(cost)))[0])
    first = np.unique(which, return_index=True)[1]
    distinct = [cost[i] for i in first.tolist()]
    tf32 = (
        tf32_owner
        & np.array([c.precision == "fp32" and c.kind in _MATMUL for c in distinct], dtype=bool)[
            which
        ]
    )
    precision = np.array([c.precision for c in distinct], dtype=object)[which]
    precision[tf32] = "tf32_tensor"

    def field(name: str) -> Any:
        values = np.array([getattr(c, name) for c in distinct], dtype=object)
        return inferred(values[which].tolist())

    out = pd.DataFrame(
        {
            "host_row": owners.astype(np.int64),
            "op": names_at(host["name"], owners),
            **{c: texts_at(host, c, owners) for c in _SHAPE_COLUMNS[1:4]},
            "kind": field("kind"),
            "precision": inferred(precision.tolist()),
            "exact": field("exact"),
            "note": field("note"),
            "flops": field("flops"),
            "bytes": field("bytes"),
            "kernels": kernels,
            "kernel_time_ns": kernel_time,
            "host_copy": host_owner,
        },
        columns=cols,
    )
    out.attrs[GPU_TIME] = gpu_time
    return out


_MATMUL = ("gemm", "conv", "attention")
"""Op kinds whose fp32 calls run at the TF32 peak when their kernels are TF32 kernels."""


OP_GROUP_KEYS = ("op", "input_dims", "input_types", "concrete_inputs", "precision")
"""The columns whose equal values make an op group."""


def op_groups(costs: pd.DataFrame) -> pd.DataFrame:
    """Calls of the same op with the same recorded arguments (shapes, dtypes, concrete
    inputs), summed: op, input_dims, input_types, concrete_inputs, kind, precision, exact (all
    calls exact), note (the first estimate's), calls, flops, bytes, kernels, kernel_time_ns,
    host_copy; sorted by kernel time, longest first.  Keeps ``attrs["gpu_time_ns"]``."""
    cols = list(OP_GROUP_COLUMNS)
    gpu_time = costs.attrs.get(GPU_TIME)
    if costs.empty:
        out = pd.DataFrame(columns=cols)
        if gpu_time is not None:
            out.attrs[GPU_TIME] = gpu_time
        return out
    keys = list(OP_GROUP_KEYS)
    g = _groups_by_codes(costs, keys)
    if g is not None:
        out = g.sort_values(["kernel_time_ns", "op"], ascending=[False, True], kind="stable")
        out = out[cols].reset_index(drop=True)
        if gpu_time is not None:
            out.attrs[GPU_TIME] = gpu_time
        return out
    out = groups_by_groupby(costs)
    if gpu_time is not None:
        out.attrs[GPU_TIME] = gpu_time
    return out


def groups_by_groupby(costs: pd.DataFrame) -> pd.DataFrame:
    """:func:`op_groups` of a non-empty *costs* by a pandas ``groupby`` (the path where the
    key columns' codes are not available; the reference its code path is tested against),
    without the ``attrs``."""
    keys = list(OP_GROUP_KEYS)
    # the first non-empty note of a group: "first" skips missing values, so "" becomes missing
    notes = costs["note"].astype(object)
    costs = costs.assign(_note=notes.where(notes != "", None))
    g = (
        costs.groupby(keys, sort=False, observed=True)
        .agg(
            kind=("kind", "first"),
            exact=("exact", "all"),
            note=("_note", "first"),
            calls=("flops", "size"),
            flops=("flops", "sum"),
            bytes=("bytes", "sum"),
            kernels=("kernels", "sum"),
            kernel_time_ns=("kernel_time_ns", "sum"),
            host_copy=("host_copy", "any"),
        )
        .reset_index()
    )
    g["note"] = g["note"].astype(object).where(g["note"].notna(), "").astype(costs["note"].dtype)
    out = g.sort_values(["kernel_time_ns", "op"], ascending=[False, True], kind="stable")
    return out[list(OP_GROUP_COLUMNS)].reset_index(drop=True)


_SUMMED = ("flops", "bytes", "kernels", "kernel_time_ns")


def _groups_by_codes(costs: pd.DataFrame, keys: list[str]) -> pd.DataFrame | None:
    """:func:`op_groups`' aggregation (groups in order of first appearance, before sorting)
    from the key columns' codes: the sums as int64, kind and keys from each group's first
    call, the first non-empty note; None when a key or the kind is missing somewhere or a
    summed column is not int64 (then ``groupby`` aggregates)."""
    if any(costs[c].isna().any() for c in (*keys, "kind")) or any(
        costs[c].dtype != np.int64 for c in _SUMMED
    ):
        return None
    code = np.zeros(len(costs), dtype=np.int64)
    for c in keys:
        digit = np.asarray(pd.factorize(costs[c])[0], np.int64)
        code = np.asarray(pd.factorize(code * (int(digit.max()) + 1) + digit)[0], np.int64)
    n = int(code.max()) + 1
    first = np.unique(code, return_index=True)[1]  # group i's first call (codes by appearance)
    out = costs[[*keys, "kind"]].iloc[first].reset_index(drop=True)
    out["exact"] = np.bincount(code, weights=~costs["exact"].to_numpy(bool), minlength=n) == 0
    notes = costs["note"].astype(object).to_numpy()
    noted = np.flatnonzero(pd.notna(notes) & (notes != ""))
    with_note, at = np.unique(code[noted], return_index=True)
    note = np.full(n, "", dtype=object)
    note[with_note] = notes[noted[at]]
    out["note"] = pd.Series(note, dtype=object).astype(costs["note"].dtype)
    out["calls"] = np.bincount(code, minlength=n).astype(np.int64)
    for c in _SUMMED:
        total = np.zeros(n, dtype=np.int64)
        np.add.at(total, code, costs[c].to_numpy())
        out[c] = total
    out["host_copy"] = np.bincount(code, weights=costs["host_copy"].to_numpy(bool), minlength=n) > 0
    return out
