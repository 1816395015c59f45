"""Graph attribution: kernels replayed by ``cudaGraphLaunch``/``hipGraphLaunch`` back to the ops
that launched them while the graph was captured (docs/inference.md "Graph attribution").

Execution side: each graph launch (runtime/driver call matching ``GraphLaunch``) owns the GPU
work rows with its correlation, ordered by GPU start.  Capture side: the nodes of each capture
region (:func:`analyzers.serving.capture.capture_nodes`), in call order.

Pairing: graph launches are taken in time order; launch *i* is paired with the first region, in
capture order starting after the region paired with launch *i − 1* (wrapping around, so one
graph replayed many times reuses its region), whose nodes align with *all* its kernels; if none
does, with the region that aligns the most kernels.  Alignment of a launch's kernels with a
region's nodes, first that applies:

    ============  ===============================================================================
    position      same count and the same kind (kernel/memcpy/memset) at every position, and —
                  when kernel names of the capture's launch calls are known — the same name
    name-scan     (names known) each kernel in GPU order takes the next unused node with its
                  name, scanning forward (nodes without a replayed kernel are skipped)
    name-group    (names known) the *k*-th kernel of each name takes the *k*-th node of that name
                  (the graph ran independent nodes in another order than captured)
    ============  ===============================================================================

The better of name-scan and name-group (more kernels aligned) is kept.  Without kernel names a
launch whose kernel count differs from every region's node count stays unattributed.  The
kernel names of capture launch calls are Kineto's ``args.kernel``: :attr:`Capture.kernel_names`
when given, else the host column ``launch_kernel`` when the reader provides it.

With several captures that say their batch size (``Capture.batch_size``, ``mode``) and the
serving steps, a launch only considers the captures of the smallest batch size ≥ its step's
``tokens``, of mode ``PIECEWISE`` when its step has several graph launches, else ``FULL``
(when a capture of that mode exists) — TraceLens's choice of capture file.

Without a capture, :attr:`GraphAttribution.method` is ``kernel-name``: launches are grouped
into graphs by their kernel-name sequence and no kernel gets an op.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers.serving.capture import capture_nodes
from analyzers.serving.ops import GPU_WORK_KINDS, GRAPH_LAUNCH_RE, frame
from collectors.model import LAUNCH_CATS, names_matching

if TYPE_CHECKING:
    from collectors.model import Trace

LAUNCH_COLUMNS = (
    "launch",
    "host_row",
    "correlation",
    "start_ns",
    "kernels",
    "kernel_ns",
    "graph",
    "capture",
    "region",
    "nodes",
    "attributed",
    "attributed_ns",
    "match",
)
KERNEL_COLUMNS = (
    "gpu_row",
    "launch",
    "capture",
    "region",
    "node_row",
    "capture_correlation",
    "op_row",
    "op",
    "input_dims",
    "match",
)


@dataclass(frozen=True)
class Capture:
    """A capture trace, with the kernel names of its launch calls when known."""

    trace: Trace
    kernel_names: Mapping[int, str] | None = None
    """Correlation of a launch call in :attr:`trace` → the kernel it launched (Kineto
    ``args.kernel``); None: the trace's own (``host.launch_kernel``).  Empty: names unknown."""
    batch_size: int | None = None
    """The batch size (tokens) the graphs were captured for (``execution_details.json``)."""
    mode: str | None = None
    """``FULL`` (one graph per step) or ``PIECEWISE`` (several), as ``execution_details.json``
    says."""


@dataclass(frozen=True)
class GraphAttribution:
    """Graph-replayed kernels and the capture ops they came from (module docstring)."""

    method: str
    """``capture`` (captures given), ``kernel-name`` (none given) or ``none`` (no graph
    launches)."""
    launches: pd.DataFrame
    """One row per graph launch, columns :data:`LAUNCH_COLUMNS`."""
    kernels: pd.DataFrame
    """One row per graph-launched GPU work row, columns :data:`KERNEL_COLUMNS` (``op_row`` is a
    host row of capture number ``capture``; -1 and None when unattributed)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    captures: tuple[Trace, ...] = field(default_factory=tuple)
    """The capture traces, in the order ``capture`` numbers them."""

    @property
    def graph_kernel_ns(self) -> int:
        """Sum of the durations of graph-launched GPU work."""
        return int(self.launches["kernel_ns"].sum()) if len(self.launches) else 0

    @property
    def attributed_ns(self) -> int:
        """The part of :attr:`graph_kernel_ns` whose rows got a capture op."""
        return int(self.launches["attributed_ns"].sum()) if len(self.launches) else 0

    @property
    def coverage(self) -> float | None:
        """attributed_ns / graph_kernel_ns, or None without graph-launched work."""
        total = self.graph_kernel_ns
        return self.attributed_ns / total if total else None


@dataclass
class _Region:
    capture: int
    region: int
    nodes: pd.DataFrame
    names: list[str | None]


def _graph_launches(trace: Trace) -> tuple[np.ndarray, list[np.ndarray]]:
    """Host rows of graph launches (time order) and, per launch, its GPU work rows (GPU order)."""
    h, g = trace.host, trace.gpu
    rt = np.asarray(h["cat"].isin(LAUNCH_CATS), dtype=bool)
    rows = np.flatnonzero(rt & names_matching(h["name"], GRAPH_LAUNCH_RE.search))
    rows = rows[np.argsort(h["start_ns"].to_numpy()[rows], kind="stable")]
    work = np.flatnonzero(np.asarray(g["kind"].isin(GPU_WORK_KINDS), dtype=bool))
    corr = g["correlation"].to_numpy()[work]
    # work rows grouped by correlation id, each group in GPU order (start, then row)
    order = np.lexsort((work, g["start_ns"].to_numpy()[work], corr))
    ids, rows_by_id = corr[order], work[order].astype(np.int64)
    launch_corr = h["correlation"].to_numpy()[rows]
    lo = np.searchsorted(ids, launch_corr, side="left")
    hi = np.searchsorted(ids, launch_corr, side="right")
    kernels = [rows_by_id[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    return rows, kernels


def _align(
    kinds: list[str], names: list[str], region: _Region, names_known: bool
) -> tuple[list[int], str]:
    """Node position (in the region) per kernel, -1 unaligned, and the method used."""
    n_kinds = region.nodes["kind"].tolist()
    n_names = region.names
    n = len(kinds)
    same_names = not names_known or all(
        k != "kernel" or a == b for k, a, b in zip(kinds, names, n_names, strict=False)
    )
    if n == len(n_kinds) and kinds == n_kinds and same_names:
        return list(range(n)), "position"
    if not names_known:
        return [-1] * n, "count-mismatch"

    def key(kind: str, name: str | None) -> tuple[str, str | None]:
        return (kind, name if kind == "kernel" else None)

    node_keys = [key(k, m) for k, m in zip(n_kinds, n_names, strict=True)]
    scan, j = [], 0
    for k, m in zip(kinds, names, strict=True):
        want, at = key(k, m), j
        while at < len(node_keys) and node_keys[at] != want:
            at += 1
        if at < len(node_keys):
            scan.append(at)
            j = at + 1
        else:
            scan.append(-1)
    queues: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i, nk in enumerate(node_keys):
        queues[nk].append(i)
    taken: dict[tuple[str, str | None], int] = defaultdict(int)
    group = []
    for k, m in zip(kinds, names, strict=True):
        q, t = queues.get(key(k, m), []), taken[key(k, m)]
        group.append(q[t] if t < len(q) else -1)
        taken[key(k, m)] = t + 1
    n_scan = sum(p >= 0 for p in scan)
    n_group = sum(p >= 0 for p in group)
    return (scan, "name-scan") if n_scan >= n_group else (group, "name-group")


LAUNCH_KERNEL = "launch_kernel"
"""Host-table column of the kernel a launch call launched (Kineto ``args.kernel``), when the
reader provides it."""


def launch_kernel_names(trace: Trace) -> dict[int, str] | None:
    """Correlation → kernel name of the trace's launch calls, from the host column
    :data:`LAUNCH_KERNEL`; None when the trace model has no such column or it names no kernel
    (then alignment falls back to position and kind)."""
    h = trace.host
    if LAUNCH_KERNEL not in h.columns:
        return None
    names = h[LAUNCH_KERNEL].astype(object).to_numpy()
    corr = h["correlation"].to_numpy()
    out = {
        int(c): n
        for c, n in zip(corr.tolist(), names.tolist(), strict=True)
        if isinstance(n, str) and n and c >= 0
    }
    return out or None


def kernel_names_of(cap: Capture) -> Mapping[int, str] | None:
    """The capture's launch-call kernel names: given, else read from the trace model."""
    return cap.kernel_names if cap.kernel_names is not None else launch_kernel_names(cap.trace)


def _regions(captures: Sequence[Capture]) -> list[_Region]:
    out = []
    for ci, cap in enumerate(captures):
        nodes = capture_nodes(cap.trace)
        known = kernel_names_of(cap) or {}
        for r, part in nodes.groupby("region", sort=True):
            part = part.reset_index(drop=True)
            names = [known.get(int(c)) for c in part["correlation"].tolist()]
            out.append(_Region(ci, int(str(r)), part, names))
    return out


def _sequence_ids(name_lists: list[tuple[str, ...]]) -> list[int]:
    ids: dict[tuple[str, ...], int] = {}
    return [ids.setdefault(s, len(ids)) for s in name_lists]


def _eligible(
    caps: Sequence[Capture], rows: np.ndarray, h: pd.DataFrame, steps: pd.DataFrame | None
) -> list[set[int] | None]:
    """Per graph launch, the captures its step's batch size selects (None: any)."""
    out: list[set[int] | None] = [None] * len(rows)
    sized = [(i, c.batch_size, c.mode) for i, c in enumerate(caps) if c.batch_size is not None]
    if steps is None or not len(steps) or not sized or not len(rows):
        return out
    t = h["start_ns"].to_numpy()[rows]
    lo, hi = steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy()
    step_of = [
        int(np.flatnonzero((lo <= x) & (x < hi))[0]) if ((lo <= x) & (x < hi)).any() else -1
        for x in t
    ]
    per_step = pd.Series(step_of).value_counts().to_dict()
    tokens = steps["tokens"].to_numpy()
    for li, si in enumerate(step_of):
        if si < 0 or tokens[si] < 0:
            continue
        fits = [(b, i, m) for i, b, m in sized if b >= tokens[si]]
        if not fits:
            continue
        bs = min(f[0] for f in fits)
        want = "PIECEWISE" if per_step[si] > 1 else "FULL"
        same = {i for b, i, m in fits if b == bs and m in (want, None)}
        out[li] = same or {i for b, i, _ in fits if b == bs}
    return out


def attribute_graphs(
    execution: Trace,
    captures: Sequence[Trace | Capture] = (),
    steps: pd.DataFrame | None = None,
) -> GraphAttribution:
    """Attribute every graph-launched GPU row of *execution* (module docstring).  With *steps*
    (serving steps: ``start_ns``, ``end_ns``, ``tokens``) and captures that say their batch size,
    a launch only considers the captures of the smallest batch size ≥ its step's tokens (and of
    its mode, when one matches), as TraceLens chooses a capture file."""
    caps = [c if isinstance(c, Capture) else Capture(c) for c in captures]
    g, h = execution.gpu, execution.host
    rows, per_launch = _graph_launches(execution)
    gname = g["name"].astype(object).to_numpy()
    gkind = g["kind"].astype(object).to_numpy()
    dur = (g["end_ns"] - g["start_ns"]).to_numpy()
    regions = _regions(caps)
    names_known = {i: bool(kernel_names_of(c)) for i, c in enumerate(caps)}
    seq = _sequence_ids([tuple(gname[k].tolist()) for k in per_launch])
    launch_rows: list[tuple[Any, ...]] = []
    parts: dict[str, list[np.ndarray]] = {c: [] for c in KERNEL_COLUMNS}
    node_cols: dict[int, tuple[np.ndarray, ...]] = {}  # per region, its nodes' columns
    corr, start = h["correlation"].to_numpy(), h["start_ns"].to_numpy()
    notes: list[str] = []
    last = -1
    eligible = _eligible(caps, rows, h, steps)
    for li, (row, ks) in enumerate(zip(rows.tolist(), per_launch, strict=True)):
        kinds, names = [str(x) for x in gkind[ks]], [str(x) for x in gname[ks]]
        best: tuple[int, int, list[int], str] | None = None
        for step in range(len(regions)):
            ri = (last + 1 + step) % len(regions)
            cand = regions[ri]
            allowed = eligible[li]
            if allowed is not None and cand.capture not in allowed:
                continue
            pos, how = _align(kinds, names, cand, names_known[cand.capture])
            got = sum(p >= 0 for p in pos)
            if best is None or got > best[1]:
                best = (ri, got, pos, how)
            if len(ks) and got == len(ks):
                break
        miss = "count-mismatch" if best is not None and best[3] == "count-mismatch" else ""
        ri, got, pos, how = best if best is not None and best[1] > 0 else (-1, 0, [], miss)
        if not caps:
            how = "no-capture"
        elif not len(ks):
            how = "no-kernels"
        elif ri < 0 and not how:
            how = "unmatched"
        if ri >= 0:
            last = ri
        reg = regions[ri] if ri >= 0 else None
        n = len(ks)
        p = np.asarray(pos if pos else [-1] * n, dtype=np.int64)
        ok = p >= 0
        # this launch's kernel rows, as columns (one table is built after the loop)
        node_row, capture_corr, op_row = (np.full(n, -1, dtype=np.int64) for _ in range(3))
        op, dims = np.full(n, None, dtype=object), np.full(n, None, dtype=object)
        if reg is not None and ok.any():
            if ri not in node_cols:
                nodes = reg.nodes
                node_cols[ri] = tuple(
                    nodes[c].to_numpy()
                    for c in ("host_row", "correlation", "op_row", "op", "input_dims")
                )
            at = p[ok]
            for col, src in zip(
                (node_row, capture_corr, op_row, op, dims), node_cols[ri], strict=True
            ):
                col[ok] = src[at]
        for c, v in (
            ("gpu_row", np.asarray(ks, dtype=np.int64)),
            ("launch", np.full(n, li, dtype=np.int64)),
            ("capture", np.full(n, reg.capture if reg is not None else -1, dtype=np.int64)),
            ("region", np.full(n, reg.region if reg is not None else -1, dtype=np.int64)),
            ("node_row", node_row),
            ("capture_correlation", capture_corr),
            ("op_row", op_row),
            ("op", op),
            ("input_dims", dims),
            ("match", np.where(ok, how, "").astype(object)),
        ):
            parts[c].append(v)
        attributed = op_row >= 0
        launch_rows.append(
            (
                li,
                row,
                int(corr[row]),
                int(start[row]),
                n,
                int(dur[ks].sum()),
                seq[li],
                reg.capture if reg is not None else -1,
                reg.region if reg is not None else -1,
                len(reg.nodes) if reg is not None else -1,
                int(attributed.sum()),
                int(dur[ks][attributed].sum()),
                how,
            )
        )
    launches = pd.DataFrame(launch_rows, columns=list(LAUNCH_COLUMNS))
    kernels = (
        frame({c: np.concatenate(v) for c, v in parts.items()}, KERNEL_COLUMNS)
        if launch_rows
        else pd.DataFrame(columns=list(KERNEL_COLUMNS))
    )
    for c in ("gpu_row", "launch", "capture", "region", "node_row", "capture_correlation"):
        kernels[c] = kernels[c].astype(np.int64)
    kernels["op_row"] = kernels["op_row"].astype(np.int64)
    method = "none" if not len(rows) else ("capture" if caps else "kernel-name")
    notes.extend(_notes(launches, method))
    return GraphAttribution(method, launches, kernels, tuple(notes), tuple(c.trace for c in caps))


def _notes(launches: pd.DataFrame, method: str) -> list[str]:
    out = []
    if method == "kernel-name":
        out.append(
            f"{len(launches)} graph launches, no capture trace: graph-launched kernels are "
            "grouped per graph and categorised by kernel name only"
        )
    empty = int((launches["kernels"] == 0).sum()) if len(launches) else 0
    if empty:
        out.append(f"{empty} graph launches have no recorded GPU work (replay not recorded)")
    if method == "capture" and len(launches):
        short = launches[(launches["nodes"] > launches["kernels"]) & (launches["kernels"] > 0)]
        if len(short):
            missing = int((short["nodes"] - short["kernels"]).sum())
            out.append(
                f"{len(short)} graph launches recorded fewer kernels than their captured graph "
                f"has nodes ({missing} missing)"
            )
        un = launches[launches["attributed"] < launches["kernels"]]
        if len(un):
            n = int((un["kernels"] - un["attributed"]).sum())
            why = ""
            if (un["match"] == "count-mismatch").any():
                why = (
                    " (kernel count differs from every captured graph and the kernel names of "
                    "the capture's launch calls are unknown)"
                )
            out.append(f"{n} graph-launched kernels in {len(un)} launches have no capture op{why}")
    return out
