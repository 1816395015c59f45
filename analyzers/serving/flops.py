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
from analyzers.op_models.attribution import (
    cpu_op_parents,
    cpu_op_rows,
    modelled_op_costs,
    name_codes,
    outermost_modelled,
)

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
    parent = cpu_op_parents(trace)
    modelled = np.zeros(n, bool)
    modelled[np.fromiter(costs, np.int64, len(costs))] = True
    top = np.full(n, -1, np.int64)
    top[ops] = outermost_modelled(ops, parent, modelled)[ops]
    codes, names = name_codes(host["name"])
    marker = np.zeros(n, bool)
    marker[ops] = np.asarray([bool(RECOMPUTE_RE.search(str(v))) for v in names], bool)[codes[ops]]
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
    cost_of: dict[tuple[int, int], OpCost] = {}
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
        cost_of.update({(s, r): c for r, c in costs.items()})
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
        names = kops["name"].astype(object).to_numpy()
        tf32 = pd.Series([bool(_TF32_RX.search(str(x))) for x in names[idx]])
        call_tf32 = tf32.groupby(grp.ngroup().to_numpy()).transform("any").to_numpy()
        pairs = zip(idx.tolist(), src[idx].tolist(), owner[idx].tolist(), strict=True)
        for j, (i, s, o) in enumerate(pairs):
            c = cost_of[(int(s), int(o))]
            flops[i] = c.flops * weight[j]
            nbytes[i] = c.bytes * weight[j]
            p = c.precision
            if p == "fp32" and c.kind in ("gemm", "conv", "attention") and call_tf32[j]:
                p = "tf32_tensor"
            precision[i] = p
            exact[i] = c.exact
    out = kops.copy()
    out["flops"], out["bytes"], out["precision"] = flops, nbytes, pd.Series(precision, dtype=object)
    out["exact"], out["modelled"], out["recomputed"] = exact, modelled, recomputed & modelled
    return out


def _none_if_nan(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def mfu_table(
    rows: pd.DataFrame,
    keys: np.ndarray,
    peaks: GpuPeaks | None,
    busy: Mapping[Any, int] | None = None,
) -> pd.DataFrame:
    """One row per group of :func:`row_flops` rows (*keys*: one per row; None left out),
    columns :data:`MFU_COLUMNS` (module docstring).  *busy*: each group's GPU busy time; by
    default the union of its rows' intervals."""
    keys = np.asarray(keys, dtype=object)
    keep = np.array([k is not None for k in keys], dtype=bool)
    if not keep.any():
        return pd.DataFrame(columns=list(MFU_COLUMNS))
    df = rows[list(_MFU_INPUTS)][keep].assign(_g=keys[keep])  # not every column of *rows*
    out = []
    for g, part in df.groupby("_g", sort=True):
        b = busy.get(g) if busy is not None else None
        if b is None:
            b = intervals.total(
                intervals.merge(part["start_ns"].to_numpy(), part["end_ns"].to_numpy())
            )
        out.append(_mfu_row(g, part, int(b), peaks))
    return pd.DataFrame(out, columns=list(MFU_COLUMNS))


_MFU_INPUTS = (
    "start_ns", "end_ns", "dur_ns", "modelled", "recomputed", "flops", "exact", "precision"
)  # fmt: skip
"""The columns of :func:`row_flops` rows that :func:`_mfu_row` reads."""


def _mfu_row(group: Any, part: pd.DataFrame, busy_ns: int, peaks: GpuPeaks | None) -> dict:
    dur = part["dur_ns"].to_numpy(dtype=np.int64)
    mod = part["modelled"].to_numpy(dtype=bool)
    rec = part["recomputed"].to_numpy(dtype=bool)
    fl = part["flops"].to_numpy(dtype=float)
    gpu_ns, modelled_ns = int(dur.sum()), int(dur[mod].sum())
    model_flops, recomputed_flops = float(fl[~rec].sum()), float(fl[rec].sum())
    all_flops = model_flops + recomputed_flops
    exact = float(fl[part["exact"].to_numpy(dtype=bool)].sum())
    by_prec = pd.Series(fl[mod]).groupby(part["precision"].to_numpy()[mod]).sum()
    dtype = str(by_prec.idxmax()) if len(by_prec) and by_prec.max() > 0 else None
    peak = peaks.peak_flops(dtype) if peaks is not None and dtype is not None else None
    achieved = model_flops * 1e9 / busy_ns if busy_ns > 0 else None
    mfu = achieved / peak if achieved is not None and peak else None
    hfu = (
        all_flops * 1e9 / busy_ns / peak if recomputed_flops > 0 and busy_ns > 0 and peak else None
    )
    return {
        "group": group,
        "busy_ns": busy_ns,
        "gpu_ns": gpu_ns,
        "modelled_ns": modelled_ns,
        "coverage": modelled_ns / gpu_ns if gpu_ns else None,
        "model_flops": model_flops,
        "recomputed_flops": recomputed_flops,
        "exact_share": exact / all_flops if all_flops > 0 else None,
        "dtype": dtype,
        "peak": peaks.name if peaks is not None and peak else None,
        "peak_flops": peak,
        "achieved_flops_per_s": achieved,
        "mfu": mfu,
        "hfu": hfu,
    }


ROOF_COLUMNS = ("group", "category", "modelled_ns", "model_flops", "roof_ns", "pct_of_roof")
"""Columns of :func:`category_roofs`."""


def category_roofs(
    rows: pd.DataFrame, keys: np.ndarray | None, peaks: GpuPeaks | None
) -> pd.DataFrame:
    """Per group and category of :func:`row_flops` rows with a ``category`` column: the
    modelled time, its FLOPs, ``roof_ns`` = Σ over its modelled rows of the time at their roof,
    max(FLOPs / peak of the row's precision, bytes / memory bandwidth) (rows whose precision
    has no published peak left out of both), and ``pct_of_roof`` = 100 × roof_ns / the
    modelled time of those rows (how close the category's modelled work runs to its roof;
    the rest, modelled_ns − roof_ns, is its headroom).  Without *peaks* roof_ns and
    pct_of_roof are None."""
    keys = np.zeros(len(rows), dtype=object) if keys is None else np.asarray(keys, dtype=object)
    keep = np.array([k is not None for k in keys], dtype=bool) & rows["modelled"].to_numpy(bool)
    if not keep.any():
        return pd.DataFrame(columns=list(ROOF_COLUMNS))
    df = rows[keep].assign(_g=keys[keep])
    bw = peaks.mem_bw_bytes_per_s if peaks is not None else None
    if peaks is not None and len(df):
        pk = {p: peaks.peak_flops(p) for p in set(df["precision"].dropna())}
        peak = df["precision"].map(pk).to_numpy(dtype=float)
        t_flop = df["flops"].to_numpy() / peak * 1e9
        t_mem = df["bytes"].to_numpy() / bw * 1e9 if bw else np.zeros(len(df))
        roof = np.where(np.isfinite(t_flop), np.maximum(t_flop, t_mem), np.nan)
    else:
        roof = np.full(len(df), np.nan)
    df = df.assign(_roof=roof, _rdur=np.where(np.isfinite(roof), df["dur_ns"], 0))
    out = []
    for (g, c), part in df.groupby(["_g", "category"], sort=True):
        known = int(part["_rdur"].sum())
        roof_ns = float(np.nansum(part["_roof"])) if known else None
        out.append(
            {
                "group": g,
                "category": c,
                "modelled_ns": int(part["dur_ns"].sum()),
                "model_flops": float(part["flops"].sum()),
                "roof_ns": roof_ns,
                "pct_of_roof": 100.0 * roof_ns / known if roof_ns is not None else None,
            }
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
