"""MoE view: the GPU work of mixture-of-experts layers, grouped per layer type and role
(docs/inference.md "MoE").

**Scope.**  A GPU work row belongs to an MoE layer when its op, or an op enclosing it, is a
*layer op* — a ``cpu_op`` whose name matches :data:`LAYER_RE` (``vllm::moe_forward``,
``aiter::fused_moe``, ``FusedMoE``…; Inductor's ``triton_*`` kernels excluded) — or, failing
that, when its category is ``MoE`` (:mod:`analyzers.serving.categories`).  The *layer type* is
the name of the outermost enclosing layer op; rows in scope without one (e.g. graph replays
without a capture trace) have layer type ``(kernel name)``.  One *call* is one instance of the
layer op.  For graph-replayed kernels the ops are the capture trace's.

**Role** of a row in scope, first that applies:

1. communication (category ``communication``, or a name matching ``dispatch``/``combine``):
   ``dispatch`` when it runs before the call's first expert GEMM, else ``combine``;
2. the op name against :data:`OP_ROLES`, then the kernel name against :data:`KERNEL_ROLES`;
3. ``other`` (e.g. quantisation, padding inside the layer).

**Numbers** per layer type and role: ``kernels``, ``time_ns`` (sum of durations),
``share_of_layer`` (of the layer type's time) and ``share_of_gpu`` (of all GPU work time of the
trace); per step (:func:`analyzers.serving.phases.serving_steps`), the layer type's time and its
share of the step's ``kernel_ns``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analyzers.op_models.calls import cpu_op_parents
from analyzers.serving.categories import COMMUNICATION, MOE, categorize
from analyzers.serving.ops import taken
from collectors.model import names_matching

if TYPE_CHECKING:
    from analyzers.serving.graphs import GraphAttribution
    from collectors.model import Trace

LAYER_RE = re.compile(r"^(?!triton_)(?i:.*(moe|expert))")
ROLES = ("routing", "permute", "dispatch", "expert_gemm", "combine", "unpermute", "other")
OP_ROLES: tuple[tuple[str, str], ...] = (
    ("routing", r"^TopK$|(?i:topk|router|gate)"),
    ("permute", r"^SortTokens$|(?i:sort|align_block_size|(?<!un)permute)"),
)
"""Op name → role (``re.search``, first match)."""
KERNEL_ROLES: tuple[tuple[str, str], ...] = (
    ("unpermute", r"(?i)finalize|unpermute|moe_sum|scatter"),
    ("permute", r"(?i)sort|align_block_size|bitmatrix|combined_routing|(?<!un)permute"),
    ("routing", r"(?i)topk|router|gating|moe_fused_gate"),
    ("expert_gemm", r"^Cijk_|(?i:matmul_ogs|fused_moe|moe_gemm|grouped_gemm|ck_moe|fmoe|gemm)"),
)
"""Kernel name → role (``re.search``, first match)."""
_COMM_NAME = re.compile(r"(?i)dispatch|combine(?!d)")
NO_LAYER = "(kernel name)"

ROLE_COLUMNS = ("layer", "role", "kernels", "time_ns", "share_of_layer", "share_of_gpu")
LAYER_COLUMNS = ("layer", "calls", "kernels", "time_ns", "share_of_gpu")
STEP_COLUMNS = ("step", "layer", "time_ns", "step_kernel_ns", "share_of_step")


def _layer_ops(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per op row (host rows of *trace*), the host row of the outermost enclosing-or-self layer
    op, or -1 (the ``cpu_op`` rows' parents: :func:`analyzers.op_models.calls.cpu_op_parents`,
    memoised)."""
    out = np.full(len(rows), -1, dtype=np.int64)
    if not len(rows):
        return out
    host = trace.host
    is_op = np.asarray(host["cat"] == "cpu_op", dtype=bool)
    # each distinct name tested once (LAYER_RE never matches a missing name's "nan")
    match = is_op & names_matching(host["name"], LAYER_RE.search)
    if not match.any():  # no layer op at all (most traces): nothing to climb
        return out
    parent = cpu_op_parents(trace)
    rows = np.asarray(rows, dtype=np.int64)
    pos = np.where(is_op[rows], rows, -1)
    while (pos >= 0).any():
        live = pos >= 0
        hit = live & match[np.maximum(pos, 0)]
        out[hit] = pos[hit]
        pos = np.where(live, parent[np.maximum(pos, 0)], -1)
    return out


def _first(rules: tuple[tuple[str, str], ...], name: object) -> str | None:
    if not isinstance(name, str):
        return None
    return next((role for role, rx in rules if re.search(rx, name)), None)


def moe_rows(
    trace: Trace, kops: pd.DataFrame, graphs: GraphAttribution | None = None
) -> pd.DataFrame:
    """The rows of *kops* (:func:`analyzers.serving.ops.kernel_ops`) in MoE scope, with columns
    ``layer`` (layer type), ``call`` (host row of the layer op, -1 none; with ``capture``, the
    trace it belongs to), ``call_key`` (one per execution of a layer op: graph replays of one
    captured call count once per launch), ``category`` and ``role``."""
    layer_row = np.full(len(kops), -1, dtype=np.int64)
    layer = np.full(len(kops), None, dtype=object)
    cap = kops["capture"].to_numpy()
    op_row = kops["op_row"].to_numpy()
    for i, t in enumerate((trace, *(graphs.captures if graphs else ()))):
        sel = np.flatnonzero((cap == i - 1) & (op_row >= 0))
        lr = _layer_ops(t, op_row[sel])
        layer_row[sel] = lr
        if (lr >= 0).any():
            layer[sel[lr >= 0]] = taken(t.host["name"], lr[lr >= 0])
    if "category" in kops:
        is_moe = np.asarray(kops["category"] == MOE, dtype=bool)
    else:
        cats = categorize(kops)
        is_moe = cats == MOE
    scope = (layer_row >= 0) | is_moe
    at = np.flatnonzero(scope)
    out = kops.iloc[at].copy()
    out["layer"] = pd.Series(
        np.where(layer_row >= 0, layer, NO_LAYER)[scope], index=out.index, dtype=object
    )
    out["call"] = layer_row[scope]
    out["category"] = kops["category"].take(at).to_numpy() if "category" in kops else cats[scope]
    ops, names = out["op"].tolist(), out["name"].tolist()
    roles = {
        (o, n): _first(OP_ROLES, o) or _first(KERNEL_ROLES, n) or "other"
        for o, n in set(zip(ops, names, strict=True))
    }
    role = np.array([roles[k] for k in zip(ops, names, strict=True)], dtype=object)
    comm_name = {n: bool(_COMM_NAME.search(str(n))) for n in set(names)}
    comm = (out["category"] == COMMUNICATION).to_numpy() | np.array(
        [comm_name[n] for n in names], dtype=bool
    )
    # one call of a layer: its layer op instance, and for graph replays the replaying launch
    replay = np.where(out["graph_launch"].to_numpy(dtype=bool), out["launch_row"].to_numpy(), -1)
    out["call_key"] = list(zip(out["capture"], out["call"], replay, strict=True))
    if comm.any():
        first_gemm: dict[object, int] = {}
        for k, r, s in zip(out["call_key"], role, out["start_ns"].tolist(), strict=True):
            if r == "expert_gemm":
                first_gemm[k] = min(first_gemm.get(k, s), s)
        starts, keys = out["start_ns"].tolist(), out["call_key"].tolist()
        for i in np.flatnonzero(comm).tolist():
            before = starts[i] < first_gemm.get(keys[i], 2**63 - 1)
            role[i] = "dispatch" if before else "combine"
    out["role"] = pd.Series(role, index=out.index, dtype=object)
    return out


def moe_view(
    trace: Trace,
    kops: pd.DataFrame,
    graphs: GraphAttribution | None = None,
    steps: pd.DataFrame | None = None,
    owner: np.ndarray | None = None,
) -> dict[str, pd.DataFrame]:
    """``roles`` (:data:`ROLE_COLUMNS`), ``layers`` (:data:`LAYER_COLUMNS`) and, with *steps*
    and *owner* (:func:`analyzers.serving.phases.serving_steps`), ``steps``
    (:data:`STEP_COLUMNS`): module docstring."""
    m = moe_rows(trace, kops, graphs)
    if not len(m):
        out = {
            "roles": pd.DataFrame(columns=list(ROLE_COLUMNS)),
            "layers": pd.DataFrame(columns=list(LAYER_COLUMNS)),
        }
        if steps is not None and owner is not None and len(steps):
            out["steps"] = pd.DataFrame(columns=list(STEP_COLUMNS))
        return out
    total = int(kops["dur_ns"].sum())
    role_order = {r: i for i, r in enumerate(ROLES)}
    g = m.groupby(["layer", "role"], sort=False)["dur_ns"].agg(["size", "sum"]).reset_index()
    g.columns = ["layer", "role", "kernels", "time_ns"]
    layer_total = g.groupby("layer")["time_ns"].transform("sum")
    g["share_of_layer"] = g["time_ns"] / layer_total.where(layer_total > 0, 1)
    g["share_of_gpu"] = g["time_ns"] / total if total else np.nan
    g["_o"] = g["role"].map(role_order)
    g = g.sort_values(["layer", "_o"]).drop(columns="_o").reset_index(drop=True)
    layers = (
        m.groupby("layer", sort=True)
        .agg(
            calls=("call_key", lambda c: len({k for k in c if k[1] >= 0})),
            kernels=("dur_ns", "size"),
            time_ns=("dur_ns", "sum"),
        )
        .reset_index()
    )
    layers["share_of_gpu"] = layers["time_ns"] / total if total else np.nan
    layers = layers.sort_values("time_ns", ascending=False, kind="stable").reset_index(drop=True)
    out = {"roles": g[list(ROLE_COLUMNS)], "layers": layers[list(LAYER_COLUMNS)]}
    if steps is not None and owner is not None and len(steps):
        own = pd.Series(owner, index=kops.index).reindex(m.index).to_numpy()
        ms = m.assign(step=own)[own >= 0].groupby(["step", "layer"])["dur_ns"].sum().reset_index()
        ms.columns = ["step", "layer", "time_ns"]
        step_ns = steps.set_index("step")["kernel_ns"]
        ms["step_kernel_ns"] = ms["step"].map(step_ns).astype(np.int64)
        ms["share_of_step"] = ms["time_ns"] / ms["step_kernel_ns"].where(
            ms["step_kernel_ns"] > 0, 1
        )
        out["steps"] = ms[list(STEP_COLUMNS)]
    return out
