"""GPU work launched from inside each NVTX range ("which range launched which kernels").

Definition (Nsight Systems ``nvtx_gpu_proj_sum`` / ``nvtx_gpu_proj_trace``): a GPU row belongs
to an annotation range when the host call that launched it — the ``host`` row with the same
``correlation`` — lies inside the range on the same thread::

    call.pid == range.pid  and  call.tid == range.tid
    range.start_ns <= call.start_ns  and  call.end_ns <= range.end_ns

Nested ranges each count the work of their children (children are not subtracted).  One call
can launch several GPU rows (a CUDA graph launch); all of them count.  Per range:

- ``gpu_ops``: GPU rows launched from the range; ``kernels``: those of kind ``kernel``;
- ``gpu_start_ns`` / ``gpu_end_ns``: first start and last end of those rows (the *projected*
  range; ``-1`` when none), ``gpu_span_ns`` = their difference (0 when none);
- ``gpu_sum_ns``: Σ (end − start) of the rows; ``gpu_busy_ns``: length of their union
  (overlapping work on several streams counted once).

    ======  ===============  =============  ==========================  =========
    range   calls inside     GPU rows       gpu_start/end, span         busy, sum
    ======  ===============  =============  ==========================  =========
    step    launch c1, c2    k1 [100,150),  100, 260, 160               150, 160
                             k2 [140,260)
    ======  ===============  =============  ==========================  =========
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.options import AnalysisOptions
from collectors.model import GPU_WORK_KINDS

if TYPE_CHECKING:
    from collectors.model import Trace

RANGE_COLUMNS = (
    "name",
    "domain",
    "pid",
    "tid",
    "start_ns",
    "end_ns",
    "gpu_ops",
    "kernels",
    "gpu_start_ns",
    "gpu_end_ns",
    "gpu_span_ns",
    "gpu_sum_ns",
    "gpu_busy_ns",
)


def range_launches(
    trace: Trace,
    annotation_kinds: Sequence[str] = ("nvtx",),
    gpu_kinds: Sequence[str] = GPU_WORK_KINDS,
) -> pd.DataFrame:
    """Pairs (range, GPU row): ``range`` (position in ``trace.annotations``) and ``gpu`` (position
    in ``trace.gpu``) for every GPU row launched from inside the range (module docstring)."""
    ann = trace.annotations
    ranges = np.flatnonzero(ann["kind"].isin(list(annotation_kinds)).to_numpy())
    host = trace.host
    calls = np.flatnonzero(host["correlation"].to_numpy() >= 0)
    empty = pd.DataFrame({"range": np.empty(0, np.int64), "gpu": np.empty(0, np.int64)})
    if ranges.size == 0 or calls.size == 0:
        return empty
    r_pid = ann["pid"].to_numpy()[ranges]
    r_tid = ann["tid"].to_numpy()[ranges]
    r_start = ann["start_ns"].to_numpy()[ranges]
    r_end = ann["end_ns"].to_numpy()[ranges]
    c_pid = host["pid"].to_numpy()[calls]
    c_tid = host["tid"].to_numpy()[calls]
    c_start = host["start_ns"].to_numpy()[calls]
    c_end = host["end_ns"].to_numpy()[calls]
    c_corr = host["correlation"].to_numpy()[calls]
    # calls sorted by (pid, tid, start): each range's candidate calls are one contiguous slice
    order = np.lexsort((c_start, c_tid, c_pid))
    c_pid, c_tid, c_start, c_end, c_corr = (
        a[order] for a in (c_pid, c_tid, c_start, c_end, c_corr)
    )
    keys = np.stack([c_pid, c_tid], axis=1)
    thread_first = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    thread_last = np.r_[thread_first[1:], c_pid.size]
    thread_index = {
        (int(c_pid[f]), int(c_tid[f])): (f, e)
        for f, e in zip(thread_first, thread_last, strict=True)
    }
    lo = np.zeros(ranges.size, np.int64)
    hi = np.zeros(ranges.size, np.int64)
    for i, (p, t) in enumerate(zip(r_pid.tolist(), r_tid.tolist(), strict=True)):
        f, e = thread_index.get((p, t), (0, 0))
        if e > f:
            lo[i] = f + np.searchsorted(c_start[f:e], r_start[i], side="left")
            hi[i] = f + np.searchsorted(c_start[f:e], r_end[i], side="right")
    counts = np.maximum(hi - lo, 0)
    pair_range = np.repeat(np.arange(ranges.size), counts)
    pair_call = np.repeat(lo - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    inside = c_end[pair_call] <= r_end[pair_range]
    pairs = pd.DataFrame({"range": ranges[pair_range[inside]], "corr": c_corr[pair_call[inside]]})
    gpu = trace.gpu
    g_sel = np.flatnonzero(
        gpu["kind"].isin(list(gpu_kinds)).to_numpy() & (gpu["correlation"].to_numpy() >= 0)
    )
    g = pd.DataFrame({"gpu": g_sel, "corr": gpu["correlation"].to_numpy()[g_sel]})
    out = pairs.merge(g, on="corr", how="inner")[["range", "gpu"]]
    return out.sort_values(["range", "gpu"], kind="stable").reset_index(drop=True)


def nvtx_gpu_projection(
    trace: Trace,
    options: AnalysisOptions | None = None,
    annotation_kinds: Sequence[str] = ("nvtx",),
    gpu_kinds: Sequence[str] = GPU_WORK_KINDS,
) -> pd.DataFrame:
    """One row per range of *annotation_kinds* with the GPU work it launched (module docstring).

    Rows follow ``trace.annotations`` order; columns :data:`RANGE_COLUMNS`.  *options* is
    accepted for the analyzer signature; the projection covers every event (no window).
    """
    ann = trace.annotations
    sel = np.flatnonzero(ann["kind"].isin(list(annotation_kinds)).to_numpy())
    base = ann.iloc[sel][["name", "domain", "pid", "tid", "start_ns", "end_ns"]].reset_index(
        drop=True
    )
    pairs = range_launches(trace, annotation_kinds, gpu_kinds)
    pos = pd.Series(np.arange(sel.size), index=sel)
    r = pos.reindex(pairs["range"].to_numpy()).to_numpy()
    gpu = trace.gpu
    s = gpu["start_ns"].to_numpy()[pairs["gpu"].to_numpy()]
    e = gpu["end_ns"].to_numpy()[pairs["gpu"].to_numpy()]
    is_kernel = (gpu["kind"].to_numpy()[pairs["gpu"].to_numpy()] == "kernel").astype(np.int64)
    n = sel.size
    ops = np.bincount(r, minlength=n).astype(np.int64)
    kernels = np.bincount(r, weights=is_kernel, minlength=n).astype(np.int64)
    total = np.zeros(n, np.int64)
    np.add.at(total, r, e - s)
    first = np.full(n, np.iinfo(np.int64).max)
    last = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(first, r, s)
    np.maximum.at(last, r, e)
    has = ops > 0
    base["gpu_ops"] = ops
    base["kernels"] = kernels
    base["gpu_start_ns"] = np.where(has, first, -1)
    base["gpu_end_ns"] = np.where(has, last, -1)
    base["gpu_span_ns"] = np.where(has, last - first, 0)
    base["gpu_sum_ns"] = total
    base["gpu_busy_ns"] = _union_lengths(r, s, e, n)
    return base[list(RANGE_COLUMNS)]


def _union_lengths(group: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """Per group, the length of the union of its intervals [s, e) (HTA merge: touching merge)."""
    out = np.zeros(n, np.int64)
    if group.size == 0:
        return out
    order = np.lexsort((s, group))
    g, s, e = group[order], s[order], e[order]
    run_max = pd.Series(e).groupby(g).cummax().to_numpy()
    new_group = np.r_[True, g[1:] != g[:-1]]
    new_seg = new_group | np.r_[True, s[1:] > run_max[:-1]]
    seg = np.cumsum(new_seg) - 1
    seg_start = s[new_seg]
    seg_end = np.full(seg_start.size, np.iinfo(np.int64).min)
    np.maximum.at(seg_end, seg, run_max)
    np.add.at(out, g[new_seg], seg_end - seg_start)
    return out
