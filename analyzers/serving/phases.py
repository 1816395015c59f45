"""Serving phases: steps classified as prefill, decode or mixed from the serving frameworks'
annotations (docs/inference.md "Serving phases").

**Steps.**  An annotation (``user`` or ``nvtx``; ``gpu_user`` only when a trace has no CPU-side
one) whose name ``re.fullmatch``-es a rule of the table (:data:`PHASE_RULES`, or the caller's) is
a *step candidate*.  Candidates on one thread nested in each other (SGLang's ``step[DECODE
bs=32]`` inside ``execute_32_context_0(…)_generation_32(…)``) are one step: its CPU range is the
outermost candidate's; its fields are the union of the candidates' named groups (a field given by
two rules takes the value of the rule earlier in the table); its phase is the phase of the rule
earliest in the table.

**Phase** of a rule: fixed, or ``auto``: from the ``mode`` group through the rule's ``modes``
table when the rule has one, else from the request counts — ``prefill_requests`` > 0 and
``decode_requests`` > 0: mixed; only prefill: prefill; only decode: decode; else ``unknown``.

**Fields** (named groups, integers; -1 when the annotation does not carry them): ``batch_size``
(requests; else ``prefill_requests + decode_requests``), ``tokens`` (scheduled query tokens;
else ``prefill_tokens + decode_tokens``), ``prefill_requests``, ``prefill_tokens``,
``decode_requests``, ``decode_tokens`` (for a decode step without it: ``batch_size``, one token
per request), the KV lengths ``prefill_kv_tokens``/``decode_kv_tokens`` and the attention sums
``*_q_sq`` (Σ q²) and ``*_q_kv`` (Σ q·kv) of vLLM's annotation.

**GPU side**: a step owns the GPU work rows whose launching call starts in its CPU range
``[start, end)`` (graph-replayed kernels: the graph launch's start; where steps overlap, the one
that starts last), on the GPU's clock:
``kernels``, ``kernel_ns`` (sum of durations), ``gpu_start_ns``/``gpu_end_ns`` (first start, last
end), ``gpu_span_ns`` (their difference) and ``busy_ns`` (union of the rows' intervals).  A
``gpu_user`` step owns the rows that start in its range.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analyzers import intervals
from analyzers.serving.ops import range_owner

if TYPE_CHECKING:
    from collectors.model import Trace

PHASES = ("prefill", "decode", "mixed", "unknown")


@dataclass(frozen=True)
class PhaseRule:
    """One row of the phase rule table (module docstring)."""

    framework: str
    pattern: str
    """Regular expression, ``re.fullmatch``-ed against the annotation name."""
    phase: str = "auto"
    """``prefill`` | ``decode`` | ``mixed`` | ``auto`` (or a phase name of your own)."""
    modes: Mapping[str, str] = field(default_factory=dict)
    """For ``auto``: text of the ``mode`` group → phase."""

    def __post_init__(self) -> None:
        if not self.phase:
            raise ValueError("a phase rule needs a phase (or 'auto')")
        re.compile(self.pattern)


_EXECUTE = (
    r"execute_(?P<tokens>\d+)"
    r"_context_(?P<prefill_requests>\d+)\(sq(?P<prefill_tokens>\d+)sk(?P<prefill_kv_tokens>\d+)"
    r"sqsq(?P<prefill_q_sq>\d+)sqsk(?P<prefill_q_kv>\d+)\)"
    r"_generation_(?P<decode_requests>\d+)\(sq(?P<decode_tokens>\d+)sk(?P<decode_kv_tokens>\d+)"
    r"sqsq(?P<decode_q_sq>\d+)sqsk(?P<decode_q_kv>\d+)\)"
)

PHASE_RULES: tuple[PhaseRule, ...] = (
    PhaseRule("vLLM/SGLang execute", _EXECUTE),
    PhaseRule(
        "SGLang step",
        r"step\[(?P<mode>[A-Z_]+) bs=(?P<batch_size>\d+)(?: toks=(?P<tokens>\d+))?\]",
        modes={"DECODE": "decode", "EXTEND": "prefill", "PREFILL": "prefill", "MIXED": "mixed"},
    ),
)
"""The default rules; pass your own (e.g. ``(*PHASE_RULES, PhaseRule(...))``) to extend."""

FIELDS = (
    "batch_size",
    "tokens",
    "prefill_requests",
    "prefill_tokens",
    "decode_requests",
    "decode_tokens",
    "prefill_kv_tokens",
    "decode_kv_tokens",
    "prefill_q_sq",
    "prefill_q_kv",
    "decode_q_sq",
    "decode_q_kv",
)
GPU_COLUMNS = ("kernels", "kernel_ns", "gpu_start_ns", "gpu_end_ns", "gpu_span_ns", "busy_ns")
STEP_COLUMNS = (
    "step",
    "name",
    "framework",
    "phase",
    "clock",
    "start_ns",
    "end_ns",
    *FIELDS,
    *GPU_COLUMNS,
)


def _phase(rule: PhaseRule, groups: Mapping[str, str | None]) -> str:
    if rule.phase != "auto":
        return rule.phase
    mode = groups.get("mode")
    if rule.modes and mode is not None:
        return rule.modes.get(mode, "unknown")
    pre = int(groups.get("prefill_requests") or 0)
    dec = int(groups.get("decode_requests") or 0)
    if pre and dec:
        return "mixed"
    return "prefill" if pre else ("decode" if dec else "unknown")


def _candidates(trace: Trace, rules: Sequence[PhaseRule]) -> pd.DataFrame:
    a = trace.annotations
    compiled = [re.compile(r.pattern) for r in rules]
    rows = []
    for kinds, clock in ((("user", "nvtx"), "cpu"), (("gpu_user",), "gpu")):
        sel = a[np.asarray(a["kind"].isin(kinds), dtype=bool)]
        names = sel["name"].astype(object).to_numpy()
        first: dict[str, tuple[int, re.Match[str]] | None] = {}  # each distinct name once
        for n in set(names.tolist()):
            first[n] = next(
                ((ri, m) for ri, rx in enumerate(compiled) if (m := rx.fullmatch(str(n)))), None
            )
        hit = np.array([first[n] is not None for n in names.tolist()], dtype=bool)
        cols = [sel[c].to_numpy()[hit] for c in ("start_ns", "end_ns", "pid", "tid")]
        for n, *vals in zip(names[hit].tolist(), *(c.tolist() for c in cols), strict=True):
            got = first[n]
            assert got is not None
            rows.append((got[0], got[1], str(n), *vals, clock))
        if rows:
            break
    return pd.DataFrame(
        rows, columns=["rule", "match", "name", "start_ns", "end_ns", "pid", "tid", "clock"]
    )


@dataclass
class _Step:
    name: str
    start_ns: int
    end_ns: int
    pid: int
    tid: int
    clock: str
    members: list[tuple[int, re.Match[str]]]
    values: dict[str, object] = field(default_factory=dict)


def _merge(cands: pd.DataFrame, rules: Sequence[PhaseRule]) -> list[_Step]:
    cands = cands.assign(neg=-cands["end_ns"]).sort_values(["pid", "tid", "start_ns", "neg"])
    steps: list[_Step] = []
    for rec in cands.to_dict("records"):
        c: dict[Any, Any] = rec
        member = (int(c["rule"]), c["match"])
        start, end, pid, tid = (int(c[k]) for k in ("start_ns", "end_ns", "pid", "tid"))
        cur = steps[-1] if steps else None
        if (
            cur is not None
            and (cur.pid, cur.tid) == (pid, tid)
            and cur.start_ns <= start
            and end <= cur.end_ns
        ):
            cur.members.append(member)
            continue
        steps.append(_Step(str(c["name"]), start, end, pid, tid, str(c["clock"]), [member]))
    for step in steps:
        step.members.sort(key=lambda x: x[0])
        first_rule = rules[step.members[0][0]]
        phase = _phase(first_rule, step.members[0][1].groupdict())
        vals: dict[str, int] = {}
        for _, m in step.members:
            for k, v in m.groupdict().items():
                if k in FIELDS and v is not None and k not in vals:
                    vals[k] = int(v)
        _derive(vals, phase)
        step.values = {
            "name": step.name,
            "framework": first_rule.framework,
            "phase": phase,
            "clock": step.clock,
            "start_ns": step.start_ns,
            "end_ns": step.end_ns,
            **{f: vals.get(f, -1) for f in FIELDS},
        }
    return steps


def _derive(vals: dict[str, int], phase: str) -> None:
    if "batch_size" not in vals and {"prefill_requests", "decode_requests"} <= vals.keys():
        vals["batch_size"] = vals["prefill_requests"] + vals["decode_requests"]
    if phase == "decode" and "decode_tokens" not in vals and "batch_size" in vals:
        vals["decode_tokens"] = vals["batch_size"]
    if "tokens" not in vals and {"prefill_tokens", "decode_tokens"} <= vals.keys():
        vals["tokens"] = vals["prefill_tokens"] + vals["decode_tokens"]
    if phase == "decode" and "tokens" not in vals and "decode_tokens" in vals:
        vals["tokens"] = vals["decode_tokens"]


RANGE_COLUMNS = STEP_COLUMNS[: -len(GPU_COLUMNS)]


def step_ranges(trace: Trace, rules: Sequence[PhaseRule] = PHASE_RULES) -> pd.DataFrame:
    """The serving steps of *trace* without their GPU side: columns :data:`RANGE_COLUMNS`, in
    time order (what graph attribution needs to choose a capture by batch size)."""
    cands = _candidates(trace, rules)
    steps = _merge(cands, rules) if len(cands) else []
    steps.sort(key=lambda s: s.start_ns)
    df = pd.DataFrame([s.values for s in steps], columns=list(RANGE_COLUMNS[1:]))
    df.insert(0, "step", np.arange(len(df), dtype=np.int64))
    for c in ("start_ns", "end_ns", *FIELDS):
        df[c] = df[c].astype(np.int64)
    for c in ("name", "framework", "phase", "clock"):
        df[c] = df[c].astype(object)
    return df


def serving_steps(
    trace: Trace,
    kops: pd.DataFrame,
    rules: Sequence[PhaseRule] = PHASE_RULES,
    ranges: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """The serving steps of *trace* (columns :data:`STEP_COLUMNS`, in time order) and, per row
    of *kops* (:func:`analyzers.serving.ops.kernel_ops`), the step that owns it (-1: none).
    *ranges*: :func:`step_ranges` already computed."""
    df = step_ranges(trace, rules) if ranges is None else ranges.copy()
    start, end = kops["start_ns"].to_numpy(), kops["end_ns"].to_numpy()
    cpu = bool(len(df)) and df["clock"].iloc[0] == "cpu"
    t = kops["launch_ns"].to_numpy() if cpu else start
    owner = range_owner(t, df["start_ns"].to_numpy(), df["end_ns"].to_numpy())
    n = len(df)
    mine = owner >= 0
    o, s0, e0 = owner[mine], start[mine], end[mine]
    df["kernels"] = np.bincount(o, minlength=n).astype(np.int64)
    df["kernel_ns"] = np.bincount(o, weights=e0 - s0, minlength=n).astype(np.int64)
    lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    np.minimum.at(lo, o, s0)
    np.maximum.at(hi, o, e0)
    lo[df["kernels"].to_numpy() == 0] = -1
    df["gpu_start_ns"], df["gpu_end_ns"] = lo, hi
    df["gpu_span_ns"] = np.where(hi >= 0, hi - lo, 0).astype(np.int64)
    busy = np.zeros(n, dtype=np.int64)
    order = np.lexsort((s0, o))
    bounds = np.flatnonzero(np.diff(o[order])) + 1
    for part in np.split(order, bounds) if len(order) else []:
        busy[o[part[0]]] = intervals.total(intervals.merge(s0[part], e0[part]))
    df["busy_ns"] = busy
    return df[list(STEP_COLUMNS)], owner


PHASE_COLUMNS = (
    "phase",
    "steps",
    "kernels",
    "kernel_ns",
    "gpu_span_ns",
    "busy_ns",
    "requests",
    "tokens",
    "prefill_tokens",
    "decode_tokens",
    "tokens_per_s",
    "output_tokens_per_s",
    "time_per_output_token_ns",
)


def _known_sum(s: pd.Series) -> int:
    """Sum of the known (≥ 0) values; -1 when none is known."""
    k = s[s >= 0]
    return int(k.sum()) if len(k) else -1


def _rate(steps: pd.DataFrame, col: str) -> float | None:
    """Σ col / Σ busy (s) over the steps that carry *col* and ran on the GPU."""
    k = steps[(steps[col] >= 0) & (steps["busy_ns"] > 0)]
    busy = int(k["busy_ns"].sum())
    return float(k[col].sum()) * 1e9 / busy if busy else None


def phase_summary(steps: pd.DataFrame) -> pd.DataFrame:
    """Per phase present (:data:`PHASES` order, then other phase names sorted), columns
    :data:`PHASE_COLUMNS`:

    ``steps``; sums of ``kernels``, ``kernel_ns``, ``gpu_span_ns`` and ``busy_ns``; sums of the
    known ``batch_size`` (``requests``), ``tokens``, ``prefill_tokens`` and ``decode_tokens``
    (-1 when no step carries them); ``tokens_per_s`` = Σ tokens / Σ busy and
    ``output_tokens_per_s`` = Σ decode_tokens / Σ busy over the steps that carry them (per
    second of the GPU's busy time on the phase: waits inside a step are not counted);
    ``time_per_output_token_ns`` = mean ``busy_ns`` of the steps that generate tokens
    (``decode_tokens`` > 0) — each running request gets one token per step, so this is the GPU
    time between two tokens of a request (a lower bound of its latency).  Extra per-step columns
    (e.g. model FLOPs for MFU) are summed into columns of the same name.
    """
    extra = [c for c in steps.columns if c not in STEP_COLUMNS]
    rows = []
    names = list(steps["phase"].unique())
    for phase in [*[p for p in PHASES if p in names], *sorted(p for p in names if p not in PHASES)]:
        s = steps[steps["phase"] == phase]
        if not len(s):
            continue
        gen = s[s["decode_tokens"] > 0]
        rows.append(
            {
                "phase": phase,
                "steps": len(s),
                **{c: int(s[c].sum()) for c in ("kernels", "kernel_ns", "gpu_span_ns", "busy_ns")},
                "requests": _known_sum(s["batch_size"]),
                **{c: _known_sum(s[c]) for c in ("tokens", "prefill_tokens", "decode_tokens")},
                "tokens_per_s": _rate(s, "tokens"),
                "output_tokens_per_s": _rate(s, "decode_tokens"),
                "time_per_output_token_ns": float(gen["busy_ns"].mean()) if len(gen) else None,
                **{c: s[c].sum() for c in extra},
            }
        )
    return pd.DataFrame(rows, columns=[*PHASE_COLUMNS, *extra])
