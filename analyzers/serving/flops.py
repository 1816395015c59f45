"""Model FLOPs of the GPU work rows, MFU / HFU and the roof of each category
(docs/inference.md "MFU").

**Model FLOPs of a row.**  The op models (:func:`analyzers.op_models.model_op`, from the
op's recorded ``Input Dims`` / ``Input type`` / ``Concrete Inputs`` / ``Input Strides``) give
the FLOPs and bytes of one op call; as in the roofline's op costs, a row belongs to the
*outermost modelled* op enclosing its op (so ``aten::linear`` owns the GEMM its inner
``aten::addmm`` launched, and no FLOP is counted twice).  A graph-replayed row uses its
capture op (:mod:`analyzers.serving.graphs`) in the capture trace's own host table, once per
replay.  One *call* (modelled op, and for a replay the launch that replayed it) spreads its
FLOPs and bytes over its rows in proportion to their durations, so that any grouping of rows
(steps, phases, categories) sums them exactly.  Precision: the model's (``fp16_tensor`` for
fp16/bf16 matrix math, ...); an fp32 GEMM/convolution/attention call with a TF32 kernel is
``tf32_tensor``.

**Recomputation.**  A row whose op runs inside a ``cpu_op`` whose name matches
:data:`RECOMPUTE_RE` (PyTorch's ``CheckpointFunctionBackward``, a ``recompute`` region) is
recomputed work: its FLOPs count for HFU, not for MFU.

**Per group** (a serving step, a phase, a ProfilerStep, the whole trace): ``gpu_ns`` (Σ
durations), ``modelled_ns`` (Σ durations of rows with a FLOP model), ``coverage`` =
modelled_ns / gpu_ns, ``model_flops`` (Σ FLOPs, recomputed rows excluded),
``recomputed_flops``, ``exact_share`` (share of all the group's FLOPs from *exact* costs),
``dtype`` (the precision with the most FLOPs), ``peak_flops`` (the device's dense peak for it),
``achieved_flops_per_s`` = model_flops / busy (the group's GPU busy time, in s), ``mfu`` =
achieved / peak and ``hfu`` = (model + recomputed FLOPs) / busy / peak (None without
recomputed work).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers import intervals
from analyzers.op_models import TF32_KERNEL
from analyzers.op_models.attribution import modelled_op_costs, modelled_tops
from analyzers.op_models.calls import cpu_op_parents, cpu_op_rows
from analyzers.serving.groups import Groups, float_sums, int_sums, masked_bounds
from collectors.model import names_matching

if TYPE_CHECKING:
    from analyzers.op_models.args import OpCost
    from collectors.model import Trace
    from collectors.peaks import GpuPeaks

RECOMPUTE_RE = re.compile(r"(?i)CheckpointFunction|recompute")
"""``cpu_op`` names whose inner ops are recomputation (activation checkpointing)."""
FLOP_COLUMNS = ("flops", "bytes", "precision", "exact", "modelled", "recomputed")
"""Columns :func:`row_flops` adds to the serving rows."""
MFU_COLUMNS = (
    "group",
    "busy_ns",
    "gpu_ns",
    "modelled_ns",
    "coverage",
    "model_flops",
    "recomputed_flops",
    "exact_share",
    "dtype",
    "peak",
    "peak_flops",
    "achieved_flops_per_s",
    "mfu",
    "hfu",
)
"""Columns of :func:`mfu_table`."""
_TF32_RX = re.compile(TF32_KERNEL)


def _modelled_tops(trace: Trace) -> tuple[np.ndarray, Mapping[int, OpCost], np.ndarray]:
    """Per host row of *trace*: for ``cpu_op`` rows, the outermost modelled op among the row
    and its ancestors (-1: none; every other row -1); the cost of every modelled op; whether
    the row is an op inside a recomputation op (:data:`RECOMPUTE_RE` on its name or an
    ancestor's).  The op rows' costs and parents are the roofline's (memoised)."""
    host = trace.host
    n = len(host)
    ops = cpu_op_rows(host)
    if not len(ops):
        return np.full(n, -1, np.int64), {}, np.zeros(n, bool)
    costs = modelled_op_costs(trace)
    if not costs:  # nothing modelled: no owner, and recomputation only matters for modelled rows
        return np.full(n, -1, np.int64), costs, np.zeros(n, bool)
    parent = cpu_op_parents(trace)
    top = modelled_tops(trace)
    marker = np.zeros(n, bool)
    marker[ops] = names_matching(host["name"], RECOMPUTE_RE.search)[ops]  # once per name
    if not marker.any():  # no recomputation op (most traces): nothing to climb
        return top, costs, marker
    # inside: a marked op or a descendant of one (pointer jumping over the parents)
    inside, up = marker.copy(), parent.copy()
    live = ops[up[ops] >= 0]
    while live.size:
        above = up[live]
        inside[live] |= inside[above]
        up[live] = up[above]
        live = live[up[live] >= 0]
    return top, costs, inside


def row_flops(trace: Trace, kops: pd.DataFrame, captures: tuple[Trace, ...] = ()) -> pd.DataFrame:
    """*kops* (:func:`analyzers.serving.ops.kernel_ops`) with :data:`FLOP_COLUMNS`: each row's
    share of its modelled op call's FLOPs and bytes, the call's precision and exactness, and
    whether the row is modelled or recomputed (module docstring)."""
    n = len(kops)
    owner = np.full(n, -1, dtype=np.int64)
    costs_of: dict[int, Mapping[int, OpCost]] = {}
    recomputed = np.zeros(n, dtype=bool)
    src = kops["capture"].to_numpy()
    op_row = kops["op_row"].to_numpy()
    for s, t in enumerate((trace, *captures), start=-1):
        sel = np.flatnonzero((src == s) & (op_row >= 0))
        if not len(sel):
            continue
        top, costs, inside = _modelled_tops(t)
        owner[sel] = top[op_row[sel]]
        recomputed[sel] = inside[op_row[sel]]
        costs_of[s] = costs
    modelled = owner >= 0
    replay = np.where(kops["graph_launch"].to_numpy(dtype=bool), kops["launch_row"].to_numpy(), -1)
    dur = kops["dur_ns"].to_numpy(dtype=np.int64)
    flops = np.zeros(n, dtype=float)
    nbytes = np.zeros(n, dtype=float)
    precision = np.full(n, None, dtype=object)
    exact = np.zeros(n, dtype=bool)
    if modelled.any():
        idx = np.flatnonzero(modelled)
        calls = pd.DataFrame(
            {"src": src[idx], "owner": owner[idx], "replay": replay[idx], "dur": dur[idx]}
        )
        grp = calls.groupby(["src", "owner", "replay"], sort=False)
        call_dur = grp["dur"].transform("sum").to_numpy()
        call_n = grp["dur"].transform("size").to_numpy()
        weight = np.where(call_dur > 0, dur[idx] / np.maximum(call_dur, 1), 1.0 / call_n)
        # the rows' kernel names are the trace's own: matched once per distinct name
        tf32_rows = names_matching(trace.gpu["name"], _TF32_RX.search)[kops["gpu_row"].to_numpy()]
        tf32 = pd.Series(tf32_rows[idx])
        call_tf32 = tf32.groupby(grp.ngroup().to_numpy()).transform("any").to_numpy()
        # one cost per modelled op: its FLOPs and bytes spread over the rows by weight
        key = (src[idx].astype(np.int64) + 1) * (int(owner.max()) + 1) + owner[idx]
        _, first, pos = np.unique(key, return_index=True, return_inverse=True)
        cost = [
            costs_of[int(s)][int(o)]
            for s, o in zip(src[idx][first].tolist(), owner[idx][first].tolist(), strict=True)
        ]
        c_flops = np.array([c.flops for c in cost], dtype=float)[pos]
        c_bytes = np.array([c.bytes for c in cost], dtype=float)[pos]
        prec = np.array([c.precision for c in cost], dtype=object)[pos]
        matmul = np.array([c.kind in ("gemm", "conv", "attention") for c in cost], bool)[pos]
        flops[idx] = c_flops * weight
        nbytes[idx] = c_bytes * weight
        tf = (prec == "fp32") & matmul & call_tf32.astype(bool)
        prec[tf] = "tf32_tensor"
        precision[idx] = prec
        exact[idx] = np.array([c.exact for c in cost], dtype=bool)[pos]
    out = kops.copy(deep=False)
    out["flops"], out["bytes"], out["precision"] = flops, nbytes, pd.Series(precision, dtype=object)
    out["exact"], out["modelled"], out["recomputed"] = exact, modelled, recomputed & modelled
    return out


def _none_if_nan(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def mfu_table(
    rows: pd.DataFrame,
    keys: np.ndarray | Groups,
    peaks: GpuPeaks | None,
    busy: Mapping[Any, int] | None = None,
) -> pd.DataFrame:
    """One row per group of :func:`row_flops` rows (*keys*: one per row, None left out, or
    :class:`~analyzers.serving.groups.Groups`), in sorted key order, columns
    :data:`MFU_COLUMNS` (module docstring).  *busy*: each group's GPU busy time; by default the
    union of its rows' intervals."""
    groups = keys if isinstance(keys, Groups) else Groups.of(keys)
    if not groups.labels:
        return pd.DataFrame(columns=list(MFU_COLUMNS))
    order, bounds = groups.segments()
    dur = rows["dur_ns"].to_numpy(dtype=np.int64)[order]
    mod = rows["modelled"].to_numpy(dtype=bool)[order]
    rec = rows["recomputed"].to_numpy(dtype=bool)[order]
    exact = rows["exact"].to_numpy(dtype=bool)[order]
    fl = rows["flops"].to_numpy(dtype=float)[order]
    gpu_ns = int_sums(dur, bounds).tolist()
    modelled_ns = int_sums(np.where(mod, dur, 0), bounds).tolist()
    # float sums per group, of the group's rows in table order (a groupby part's sums)
    model_flops = float_sums(fl[~rec], masked_bounds(~rec, bounds))
    recomputed_flops = float_sums(fl[rec], masked_bounds(rec, bounds))
    exact_flops = float_sums(fl[exact], masked_bounds(exact, bounds))
    dtypes = _top_precisions(groups, order, bounds, mod, fl, rows["precision"].to_numpy())
    busy_ns = []
    for g, a, b in zip(groups.labels, bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        got = busy.get(g) if busy is not None else None
        if got is None:
            at = order[a:b]
            got = intervals.total(
                intervals.merge(rows["start_ns"].to_numpy()[at], rows["end_ns"].to_numpy()[at])
            )
        busy_ns.append(int(got))
    out = [
        _mfu_row(
            g, busy_ns[i], gpu_ns[i], modelled_ns[i], model_flops[i], recomputed_flops[i],
            exact_flops[i], dtypes[i], peaks,
        )
        for i, g in enumerate(groups.labels)
    ]  # fmt: skip
    return pd.DataFrame(out, columns=list(MFU_COLUMNS))


def _top_precisions(
    groups: Groups,
    order: np.ndarray,
    bounds: np.ndarray,
    mod: np.ndarray,
    fl: np.ndarray,
    precision: np.ndarray,
) -> list[str | None]:
    """Per group, the precision with the most FLOPs among its modelled rows (ties: the first
    in sorted order; None when no precision has a positive sum): the FLOPs summed per
    precision as ``groupby(...).sum()`` sums them."""
    code = np.repeat(np.arange(len(groups.labels)), np.diff(bounds))[mod]
    prec = precision[order][mod]
    out: list[str | None] = [None] * len(groups.labels)
    if not len(code):
        return out
    cells = pd.Series(fl[mod]).groupby([code, prec]).sum()
    g_of = cells.index.get_level_values(0).to_numpy()
    p_of = cells.index.get_level_values(1)
    vals = cells.to_numpy(dtype=float)
    cut = np.flatnonzero(np.diff(g_of)) + 1
    for part in np.split(np.arange(len(vals)), cut):
        v = vals[part]
        if np.isnan(v).all() or not np.nanmax(v) > 0:
            continue
        out[int(g_of[part[0]])] = str(p_of[part[int(np.nanargmax(v))]])
    return out


def _mfu_row(
    group: Any,
    busy_ns: int,
    gpu_ns: int,
    modelled_ns: int,
    model_flops: float,
    recomputed_flops: float,
    exact: float,
    dtype: str | None,
    peaks: GpuPeaks | None,
) -> tuple[Any, ...]:
    all_flops = model_flops + recomputed_flops
    peak = peaks.peak_flops(dtype) if peaks is not None and dtype is not None else None
    achieved = model_flops * 1e9 / busy_ns if busy_ns > 0 else None
    mfu = achieved / peak if achieved is not None and peak else None
    hfu = (
        all_flops * 1e9 / busy_ns / peak if recomputed_flops > 0 and busy_ns > 0 and peak else None
    )
    return (
        group,
        busy_ns,
        gpu_ns,
        modelled_ns,
        modelled_ns / gpu_ns if gpu_ns else None,
        model_flops,
        recomputed_flops,
        exact / all_flops if all_flops > 0 else None,
        dtype,
        peaks.name if peaks is not None and peak else None,
        peak,
        achieved,
        mfu,
        hfu,
    )


ROOF_COLUMNS = ("group", "category", "modelled_ns", "model_flops", "roof_ns", "pct_of_roof")
"""Columns of :func:`category_roofs`."""


def category_roofs(
    rows: pd.DataFrame, keys: np.ndarray | Groups | None, peaks: GpuPeaks | None
) -> pd.DataFrame:
    """Per group and category of :func:`row_flops` rows with a ``category`` column: the
    modelled time, its FLOPs, ``roof_ns`` = Σ over its modelled rows of the time at their roof,
    max(FLOPs / peak of the row's precision, bytes / memory bandwidth) (rows whose precision
    has no published peak left out of both), and ``pct_of_roof`` = 100 × roof_ns / the
    modelled time of those rows (how close the category's modelled work runs to its roof;
    the rest, modelled_ns − roof_ns, is its headroom).  Without *peaks* roof_ns and
    pct_of_roof are None."""
    if keys is None:
        groups = Groups.one(len(rows))
    else:
        groups = keys if isinstance(keys, Groups) else Groups.of(keys)
    modelled = rows["modelled"].to_numpy(dtype=bool)
    keep = (groups.codes >= 0) & modelled
    if not keep.any():
        return pd.DataFrame(columns=list(ROOF_COLUMNS))
    at = np.flatnonzero(keep)
    precision = rows["precision"].to_numpy()[at]
    flops = rows["flops"].to_numpy(dtype=float)[at]
    dur = rows["dur_ns"].to_numpy(dtype=np.int64)[at]
    bw = peaks.mem_bw_bytes_per_s if peaks is not None else None
    if peaks is not None:
        known_p = pd.Series(precision, dtype=object).dropna()
        pk = {p: peaks.peak_flops(p) for p in set(known_p)}
        peak = pd.Series(precision, dtype=object).map(pk).to_numpy(dtype=float)
        t_flop = flops / peak * 1e9
        t_mem = rows["bytes"].to_numpy()[at] / bw * 1e9 if bw else np.zeros(len(at))
        roof = np.where(np.isfinite(t_flop), np.maximum(t_flop, t_mem), np.nan)
    else:
        roof = np.full(len(at), np.nan)
    rdur = np.where(np.isfinite(roof), dur, 0)
    # cells (group, category) in sorted order, each cell's rows in table order
    cat_codes, cats = pd.factorize(rows["category"].to_numpy(dtype=object)[at], sort=True)
    n_cats = max(len(cats), 1)
    cell = Groups.at(np.where(cat_codes >= 0, groups.codes[at] * n_cats + cat_codes, -1))
    order, bounds = cell.segments()
    known = int_sums(rdur[order], bounds).tolist()
    roof_ns = float_sums(np.where(np.isnan(roof), 0.0, roof)[order], bounds)
    modelled_ns = int_sums(dur[order], bounds).tolist()
    model_flops = float_sums(np.where(np.isnan(flops), 0.0, flops)[order], bounds)
    out = []
    for i, code in enumerate(cell.labels):
        g, c = divmod(int(code), n_cats)
        r = roof_ns[i] if known[i] else None
        out.append(
            (
                groups.labels[g],
                cats[c],
                modelled_ns[i],
                model_flops[i],
                r,
                100.0 * r / known[i] if r is not None else None,
            )
        )
    return pd.DataFrame(out, columns=list(ROOF_COLUMNS))


__all__ = [
    "FLOP_COLUMNS",
    "MFU_COLUMNS",
    "RECOMPUTE_RE",
    "ROOF_COLUMNS",
    "category_roofs",
    "mfu_table",
    "row_flops",
]
