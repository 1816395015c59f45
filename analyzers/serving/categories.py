"""Op categories: one category for every GPU op and kernel (docs/inference.md "Op categories").

A GPU work row's category is decided by the first of these that applies:

1. its ``kind`` is ``memcpy`` or ``memset``: ``memory``;
2. it has an op (:func:`analyzers.serving.ops.kernel_ops`: the launching ``cpu_op``, or the
   capture op of a graph-replayed kernel) and the op name matches a rule of :data:`OP_RULES`;
3. its kernel name matches a rule of :data:`KERNEL_RULES`;
4. ``other``.

Rules are ``re.search`` patterns tried in table order, first match wins.  The order matters
where names overlap: Inductor's fused kernels (``triton_poi_fused_…moe_forward_0``) are Triton-fused
before anything else, MoE is tested before GEMM so that expert GEMMs (``matmul_ogs``) count as MoE,
attention before GEMM so that attention's own kernels (``fmha``…) are not GEMMs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzers.serving.groups import Groups

GEMM = "GEMM"
ATTENTION = "attention"
MOE = "MoE"
NORMALIZATION = "normalization"
ELEMENTWISE = "elementwise"
TRITON = "Triton-fused"
COMMUNICATION = "communication"
MEMORY = "memory"
OTHER = "other"
CATEGORIES = (
    GEMM,
    ATTENTION,
    MOE,
    NORMALIZATION,
    ELEMENTWISE,
    TRITON,
    COMMUNICATION,
    MEMORY,
    OTHER,
)
"""Every category, in display order."""


@dataclass(frozen=True)
class CategoryRule:
    """``re.search(pattern, name)`` → *category*; *about* says what it is meant to catch."""

    category: str
    pattern: str
    about: str

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}")


_COMM = r"(?i)nccl|rccl|c10d::|^record_param_comms|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce|custom_ar"  # noqa: E501
_TRITON = r"^triton_(poi|red|per|tem|for|unk)_"
_NORM = r"(?i)(layer|rms|group|batch|instance)_?norm"

OP_RULES: tuple[CategoryRule, ...] = (
    CategoryRule(COMMUNICATION, _COMM, "collectives: c10d, NCCL/RCCL, custom all-reduce"),
    CategoryRule(TRITON, _TRITON, "Inductor-generated Triton kernels (pointwise/reduction/…)"),
    CategoryRule(
        MOE,
        r"(?i)moe|expert|matmul_ogs|topk_softmax|topk_sigmoid|grouped_topk|^TopK$|^SortTokens$",
        "MoE layers and their routing (vLLM moe_forward, aiter/sglang fused_moe, "
        "triton_kernels TopK/SortTokens)",
    ),
    CategoryRule(
        ATTENTION,
        r"(?i)attention|attn|sdpa|scaled_dot_product|flash|fmha|mha_|::mha|paged|"
        r"store_cache|reshape_and_cache|concat_and_cache|^sage_",
        "SDPA/flash/paged attention, KV-cache writes, SageAttention",
    ),
    CategoryRule(NORMALIZATION, _NORM, "layer/RMS/group/batch/instance norm, fwd and bwd"),
    CategoryRule(
        GEMM,
        r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addmv|mv|dot|_int_mm|"
        r"_addmm_activation)$|(?i:gemm|convolution|conv[123]d)",
        "matrix multiplies and convolutions (ATen ops, *gemm* custom ops)",
    ),
    CategoryRule(
        ELEMENTWISE,
        r"^aten::|(?i:silu|gelu|relu|act_and_mul|swiglu|rotary|rope)",
        "every other ATen op that launches kernels (pointwise, reductions, softmax, copies, "
        "indexing, concatenation), activations, rotary embeddings",
    ),
)
"""Rules on the op name, in order."""

KERNEL_RULES: tuple[CategoryRule, ...] = (
    CategoryRule(MEMORY, r"^(Memcpy|Memset)|^dma", "copies and fills named as such"),
    CategoryRule(COMMUNICATION, _COMM, "NCCL/RCCL and custom all-reduce kernels"),
    CategoryRule(TRITON, _TRITON, "Inductor-generated Triton kernels"),
    CategoryRule(
        MOE,
        r"(?i)matmul_ogs|moe|expert|topk_softmax|_topk_forward|bitmatrix|_routing|"
        r"finalize_matmul_scatter|align_block_size",
        "expert GEMMs (triton_kernels matmul_ogs, fused_moe), routing, token sorting",
    ),
    CategoryRule(
        ATTENTION,
        r"(?i)fmha|flash|attn|attention|paged|mha|sage|reshape_and_cache|store_cache|kv_cache",
        "attention kernels and KV-cache writes",
    ),
    CategoryRule(NORMALIZATION, _NORM, "normalization kernels (also CK Rmsnorm2dFwd, MIOpen)"),
    CategoryRule(
        GEMM,
        r"^Cijk_|(?i:gemm|gemv|matmul|cutlass|xmma|wgmma|igemm|conv(olution)?_?(fwd|bwd|wrw))",
        "hipBLASLt/Tensile (Cijk_), cuBLAS/CUTLASS, MIOpen implicit-GEMM convolutions",
    ),
    CategoryRule(
        ELEMENTWISE,
        r"(?i)at::native|elementwise|vectorized|reduce|softmax|silu|gelu|relu|act_and_mul|"
        r"rotary|rope|index|gather|scatter|copy|fill|cat|arange|sort|topk|cumsum|argmax|"
        r"embedding|transpose|pool|upsample",
        "ATen's native kernels and other pointwise/reduction/data-movement kernels",
    ),
)
"""Rules on the kernel name, in order (also :func:`kernel_category` without ops)."""


_POS = {c: i for i, c in enumerate(CATEGORIES)}
_CATEGORY_OBJECTS = np.asarray(CATEGORIES, dtype=object)


def _first_match(names: Sequence[str | None], rules: Sequence[CategoryRule]) -> np.ndarray:
    """Category of the first matching rule per name, None where none matches (or no name)."""
    codes, values = _factorized(names)
    return np.array([*CATEGORIES, None], dtype=object)[_rule_codes(values, rules)[codes]]


def _factorized(values: Iterable[object]) -> tuple[np.ndarray, list[object]]:
    """``(codes, distinct values)`` of *values*; a missing value (None, NaN) has code -1."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    codes, uniques = pd.factorize(np.asarray(arr, dtype=object).reshape(-1))
    return np.asarray(codes, dtype=np.int64), list(uniques)


def _rule_codes(values: Sequence[object], rules: Sequence[CategoryRule]) -> np.ndarray:
    """Per distinct value, the position in :data:`CATEGORIES` of the first rule whose pattern
    it matches (-1: none, or not a string), and -1 once more at the end (for code -1)."""
    compiled = [(_POS[r.category], re.compile(r.pattern)) for r in rules]
    return np.array(
        [
            next((c for c, rx in compiled if rx.search(v)), -1) if isinstance(v, str) else -1
            for v in values
        ]
        + [-1],
        dtype=np.int64,
    )


def category_positions(
    names: tuple[np.ndarray, Sequence[object]],
    ops: tuple[np.ndarray, Sequence[object]] | None = None,
    kinds: tuple[np.ndarray, Sequence[object]] | None = None,
) -> np.ndarray:
    """:func:`kernel_category` as positions in :data:`CATEGORIES`, of rows given as ``(codes,
    distinct values)`` per column (code -1: missing), each distinct value matched once."""
    name_codes, name_values = names
    out = np.full(len(name_codes), -1, dtype=np.int64)
    if kinds is not None:
        kind_codes, kind_values = kinds
        memory = np.array([v in ("memcpy", "memset") for v in kind_values] + [False], dtype=bool)
        out[memory[kind_codes]] = _POS[MEMORY]
    if ops is not None:
        op_codes, op_values = ops
        by_op = _rule_codes(op_values, OP_RULES)[op_codes]
        todo = out < 0
        out[todo] = by_op[todo]
    todo = out < 0
    if todo.any():
        out[todo] = _rule_codes(name_values, KERNEL_RULES)[name_codes[todo]]
    out[out < 0] = _POS[OTHER]
    return out


def kernel_category(
    names: Iterable[str | None],
    ops: Iterable[str | None] | None = None,
    kinds: Iterable[str | None] | None = None,
) -> np.ndarray:
    """The category (:data:`CATEGORIES`) of each GPU row given its kernel *names*, optionally the
    name of the op that launched it (*ops*, None where unknown) and its ``gpu.kind`` (*kinds*):
    the decision order of the module docstring.  Returns an object array of strings."""
    pos = category_positions(
        _factorized(names),
        None if ops is None else _factorized(ops),
        None if kinds is None else _factorized(kinds),
    )
    return _CATEGORY_OBJECTS[pos]


def op_category(ops: Iterable[str | None]) -> np.ndarray:
    """The category an op's name alone gives (:data:`OP_RULES`), None where no rule matches."""
    return _first_match(list(ops), OP_RULES)


def categorize(kops: pd.DataFrame) -> np.ndarray:
    """Categories of the rows of :func:`analyzers.serving.ops.kernel_ops`."""
    return kernel_category(
        kops["name"].to_numpy(dtype=object),
        kops["op"].to_numpy(dtype=object),
        kops["kind"].to_numpy(dtype=object),
    )


BREAKDOWN_COLUMNS = ("category", "kernels", "time_ns", "share")


def category_codes(kops: pd.DataFrame) -> np.ndarray:
    """Per row of *kops*, the position of its category in :data:`CATEGORIES` (-1 for any other
    value); the ``category`` column when present, else :func:`categorize`."""
    cats = kops["category"] if "category" in kops else pd.Series(categorize(kops), dtype=object)
    codes, values = pd.factorize(cats)  # a pyarrow string column: by pyarrow, not per object
    return np.array([_POS.get(v, -1) if isinstance(v, str) else -1 for v in values] + [-1])[codes]


@dataclass(frozen=True)
class CategoryCells:
    """The (group, category) cells present, by group then :data:`CATEGORIES` order: the group's
    position in its labels, the category's in :data:`CATEGORIES`, the rows, the sum of their
    durations and its share of the group's total (NaN when that is 0)."""

    group: np.ndarray
    category: np.ndarray
    kernels: np.ndarray
    time_ns: np.ndarray
    share: np.ndarray


def category_cells(codes: np.ndarray, dur: np.ndarray, groups: Groups) -> CategoryCells:
    """:class:`CategoryCells` of rows with category *codes* (:func:`category_codes`) and
    durations *dur* in *groups*; rows in no group or of no category are left out."""
    n_cat = len(CATEGORIES)
    keep = (groups.codes >= 0) & (codes >= 0)
    cell = groups.codes[keep] * n_cat + codes[keep]
    size = len(groups.labels) * n_cat
    kernels = np.bincount(cell, minlength=size)
    time = np.zeros(size, dtype=np.int64)
    np.add.at(time, cell, np.asarray(dur, dtype=np.int64)[keep])
    present = np.flatnonzero(kernels)
    g = present // n_cat
    totals = time.reshape(-1, n_cat).sum(axis=1)[g]
    t = time[present]
    share = np.where(totals > 0, t / np.where(totals > 0, totals, 1), np.nan)
    return CategoryCells(g, present % n_cat, kernels[present].astype(np.int64), t, share)


def category_breakdown(kops: pd.DataFrame, by: np.ndarray | None = None) -> pd.DataFrame:
    """GPU time per category: ``kernels`` (rows), ``time_ns`` (sum of durations) and ``share``
    (of the total ``time_ns`` of the group), one row per category present, in
    :data:`CATEGORIES` order.  With *by* (one key per row, e.g. a step or a phase), one block
    per key (sorted) with the key as the first column ``group``; rows whose key is None are
    left out.  A ``category`` column of *kops* is used when present."""
    groups = Groups.one(len(kops)) if by is None else Groups.of(by)
    c = category_cells(category_codes(kops), kops["dur_ns"].to_numpy(dtype=np.int64), groups)
    out = pd.DataFrame(
        {
            "group": pd.Series([groups.labels[i] for i in c.group.tolist()]),
            "category": pd.Series(np.asarray(CATEGORIES, dtype=object)[c.category], dtype=object),
            "kernels": c.kernels,
            "time_ns": c.time_ns,
            "share": c.share,
        }
    )
    if by is None:
        return out[list(BREAKDOWN_COLUMNS)].reset_index(drop=True)
    return out[["group", *BREAKDOWN_COLUMNS]].reset_index(drop=True)
