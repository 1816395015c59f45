"""gpuscope against TraceLens on every shared trace that carries TraceLens's own report.

For each trace under ``../shared/data/kineto/tracelens`` with a ``*_perf_report_csvs/`` or
``perf_csvs/`` folder beside it (TraceLens's ``generate_perf_report`` output), compares,
through gpuscope's Python API (``collectors.load.load_traces`` → analyzers):

* the GPU timeline (``gpu_timeline.csv``): total span, busy, idle, computation, communication
  and exposed communication time (:mod:`analyzers.temporal`);
* the kernel-summary totals (``kernel_summary.csv``): Σ kernel time, kernel count, and the
  per-kernel-name count and time (:mod:`analyzers.kernel_summary`);
* per op row of ``GEMM.csv``, ``CONV_fwd.csv`` and ``SDPA_fwd.csv``: FLOP and bytes of one call
  (:func:`analyzers.op_models.model_op` on the host row of the same op with the same recorded
  arguments, found in the trace or, for ops replayed from CUDA/HIP graphs, in the capture
  trace beside it).

Every comparison is ``equal`` (TraceLens works in float µs: equal within its rounding, see
:func:`float_tolerance_ns`), ``explained`` (a documented definitional difference, each checked
by recomputing gpuscope's number under TraceLens's definition, :data:`EXPLANATIONS`) or
``unexplained``.  ``python benchmarks/accuracy_vs_tracelens.py --write docs/accuracy.md``
regenerates the table; the exit status is 1 when a difference is unexplained.
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from analyzers import intervals as iv  # noqa: E402
from analyzers.classify import COMMUNICATION, COMPUTATION  # noqa: E402
from analyzers.kernel_summary import kernel_summary  # noqa: E402
from analyzers.op_models import OpCost, dtype_size, model_op  # noqa: E402
from analyzers.temporal import typed_events  # noqa: E402
from collectors.load import load_traces  # noqa: E402
from collectors.model import LAUNCH_CATS, Trace  # noqa: E402

DATA = (
    Path(os.environ.get("GPUSCOPE_SHARED_DATA", REPO.parent / "shared" / "data"))
    / "kineto"
    / "tracelens"
)
OP_CSVS = ("GEMM.csv", "CONV_fwd.csv", "SDPA_fwd.csv")
MIB = 1 << 20

EXPLANATIONS: dict[str, str] = {
    "memset": (
        "TraceLens's gpu_timeline leaves memset activities out of busy time; gpuscope counts "
        "them (HTA's MEMORY type, docs/metrics.md). Checked: gpuscope without memsets equals "
        "TraceLens."
    ),
    "unlaunched": (
        "TraceLens's gpu_timeline counts only GPU work whose launching runtime call is in the "
        "trace; gpuscope also counts work launched before the profiler started (known, issue "
        "16 steps item). Checked: gpuscope without that work equals TraceLens."
    ),
    "causal": (
        "causal attention: gpuscope counts the L·(L+1)/2 (query, key) pairs a causal mask "
        "keeps, TraceLens half the L² product. Checked: gpuscope = TraceLens × (L+1)/L."
    ),
    "conv_bias": (
        "TraceLens's aten_conv counts a bias only when Input Dims has exactly 3 entries "
        "(aten::convolution records 9), so the recorded bias is left out; gpuscope counts one "
        "add per output element and reads the bias. Checked: the differences are N·C_out·Π(out) "
        "FLOP and C_out elements."
    ),
}
"""Definitional differences, each verified where it is applied."""


@dataclass(frozen=True)
class Row:
    """One comparison."""

    trace: str
    section: str
    item: str
    gpuscope: float | int | None
    tracelens: float | int | None
    status: str
    """``equal`` | ``explained`` | ``unexplained``."""
    reason: str = ""
    """The :data:`EXPLANATIONS` key, or what is unexplained."""
    where: str = ""
    """For op rows: where the op was found (``trace`` or the capture trace's name)."""


@dataclass(frozen=True)
class Reference:
    """A trace and the TraceLens report beside it."""

    trace: Path
    csvs: Path
    captures: tuple[Path, ...]

    def csv(self, name: str) -> pd.DataFrame | None:
        p = self.csvs / name
        return pd.read_csv(p) if p.exists() else None


def references(data: Path = DATA) -> list[Reference]:
    """Every trace under *data* with a TraceLens report folder beside it."""
    out = []
    for folder in sorted(data.rglob("*")):
        if not folder.is_dir() or not (folder / "gpu_timeline.csv").exists():
            continue
        parent = folder.parent
        if folder.name.endswith("_perf_report_csvs"):
            trace = parent / (folder.name.removesuffix("_perf_report_csvs") + ".json.gz")
        else:
            (trace,) = sorted(parent.glob("*.json.gz"))
        captures = tuple(sorted((parent / "capture_traces").glob("*.json.gz")))
        out.append(Reference(trace, folder, captures))
    return out


def label(ref: Reference, data: Path = DATA) -> str:
    return ref.trace.relative_to(data).as_posix()


@cache
def _load(path: Path) -> Trace:
    (t,) = load_traces([path])
    return t


# --- tolerance ---------------------------------------------------------------------------------


def float_tolerance_ns(n_events: int, max_us: float) -> float:
    """TraceLens keeps times as float µs, gpuscope exact integer ns: each of the *n_events*
    starts and ends carries at most ½ ulp of the largest timestamp (≈ 0.5 ns at 2e12 µs), so a
    union or a sum over them is off by at most ``n_events × ulp`` (+ ½ ns for the final
    rounding)."""
    return n_events * math.ulp(max_us) * 1000 + 0.5


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol


# --- GPU timeline ------------------------------------------------------------------------------

TIMELINE = (
    ("total_time", "span"),
    ("busy_time", "busy"),
    ("idle_time", "idle"),
    ("computation_time", "computation"),
    ("total_comm_time", "communication"),
    ("exposed_comm_time", "exposed communication"),
)


def timeline_values(g: pd.DataFrame) -> dict[str, int]:
    """The timeline metrics of typed GPU events *g* (``analyzers.temporal`` definitions)."""
    s, e, t = g["start_ns"].to_numpy(), g["end_ns"].to_numpy(), g["type"].to_numpy()
    busy = iv.merge(s, e)
    comp = iv.merge(s[t == COMPUTATION], e[t == COMPUTATION])
    comm = iv.merge(s[t == COMMUNICATION], e[t == COMMUNICATION])
    span = int(busy[1][-1] - busy[0][0]) if busy[0].size else 0
    return {
        "total_time": span,
        "busy_time": iv.total(busy),
        "idle_time": span - iv.total(busy),
        "computation_time": iv.total(comp),
        "total_comm_time": iv.total(comm),
        "exposed_comm_time": iv.total(iv.subtract(comm, comp)),
    }


def _launched(trace: Trace, g: pd.DataFrame) -> np.ndarray:
    h = trace.host
    calls = h.loc[h["cat"].isin(LAUNCH_CATS), "correlation"].to_numpy()
    return np.isin(g["correlation"].to_numpy(), calls)


def compare_timeline(ref: Reference, data: Path = DATA) -> list[Row]:
    """gpuscope's GPU timeline against ``gpu_timeline.csv`` (module docstring)."""
    tl_csv = ref.csv("gpu_timeline.csv")
    assert tl_csv is not None
    tl = (tl_csv.set_index("type")["time ms"] * 1e6).to_dict()
    trace = _load(ref.trace)
    g = typed_events(trace)
    max_us = float(g["end_ns"].max()) / 1000 if len(g) else 0.0
    memset = (g["kind"] != "memset").to_numpy()
    launched = _launched(trace, g)
    variants: dict[str, np.ndarray] = {
        "": np.ones(len(g), dtype=bool),
        "memset": memset,
        "unlaunched": launched,
        "memset+unlaunched": memset & launched,
    }
    values = {
        k: (timeline_values(g[keep]), float_tolerance_ns(int(keep.sum()), max_us))
        for k, keep in variants.items()
    }
    got = values[""][0]
    rows = []
    for metric, item in TIMELINE:
        ref_v = float(tl[metric])
        status, reason = "unexplained", "differs"
        for key, (vals, tol) in values.items():
            if _close(vals[metric], ref_v, tol):
                status, reason = ("explained", key) if key else ("equal", "")
                break
        rows.append(Row(label(ref, data), "timeline", item, got[metric], ref_v, status, reason))
    return rows


# --- kernel summary ----------------------------------------------------------------------------


def compare_kernel_summary(ref: Reference, data: Path = DATA) -> list[Row]:
    """Σ kernel time, kernel count and per-name totals against ``kernel_summary.csv``."""
    ks = ref.csv("kernel_summary.csv")
    if ks is None:
        return []
    trace = _load(ref.trace)
    ours = kernel_summary(trace)
    name = label(ref, data)
    dur = ks["Kernel duration (µs)_sum"] * 1000
    count = ks["Kernel duration (µs)_count"]
    tol = float_tolerance_ns(int(count.sum()), float(ks["Kernel duration (µs)_max"].max()))
    rows = [
        _row(
            name,
            "kernel summary",
            "Σ kernel time (ns)",
            int(ours["total_ns"].sum()),
            dur.sum(),
            tol,
        ),
        _row(name, "kernel summary", "kernels", int(ours["count"].sum()), int(count.sum()), 0),
    ]
    by_name = pd.DataFrame({"name": ks["Kernel name"], "ns": dur, "n": count})
    theirs = by_name.groupby("name").agg(ns=("ns", "sum"), n=("n", "sum"))
    mine = ours.set_index("name")
    same = sum(
        1
        for k, r in theirs.iterrows()
        if k in mine.index
        and int(mine.at[k, "count"]) == int(r["n"])
        and _close(float(mine.at[k, "total_ns"]), float(r["ns"]), tol)
    )
    rows.append(
        Row(
            name,
            "kernel summary",
            "kernel names with equal count and time",
            same,
            len(theirs),
            "equal" if same == len(theirs) == len(mine) else "unexplained",
            "" if same == len(theirs) == len(mine) else f"gpuscope lists {len(mine)} names",
        )
    )
    return rows


def _row(trace: str, section: str, item: str, ours: float, theirs: float, tol: float) -> Row:
    ok = _close(ours, theirs, tol)
    return Row(
        trace,
        section,
        item,
        ours,
        theirs,
        "equal" if ok else "unexplained",
        "" if ok else "differs",
    )


# --- per-op FLOP and bytes ---------------------------------------------------------------------


def _literal(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return ast.literal_eval(v) if isinstance(v, str) else v


def _host_index(trace: Trace) -> dict[tuple[str, str, str, str], int]:
    """(name, dims, types, concrete) as canonical JSON → first host row position."""
    h = trace.host
    out: dict[tuple[str, str, str, str], int] = {}
    cols = [h[c].to_numpy() for c in ("input_dims", "input_types", "concrete_inputs")]
    names = h["name"].astype(object).to_numpy()
    for i in np.flatnonzero(h["input_dims"].notna().to_numpy()).tolist():
        key = (str(names[i]), *(_canon(c[i]) for c in cols))
        out.setdefault(key, i)
    return out


def _canon(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    obj = msgspec.json.decode(v) if isinstance(v, str) else v
    return msgspec.json.encode(obj).decode()


@cache
def _index(path: Path) -> dict[tuple[str, str, str, str], int]:
    return _host_index(_load(path))


def _find(ref: Reference, key: tuple[str, str, str, str]) -> tuple[OpCost | None, str]:
    for path in (ref.trace, *ref.captures):
        i = _index(path).get(key)
        if i is not None:
            h = _load(path).host
            r = h.iloc[i]
            cost = model_op(
                key[0], r["input_dims"], r["input_types"], r["concrete_inputs"], r["input_strides"]
            )
            where = "trace" if path == ref.trace else f"capture trace {path.name}"
            return cost, where
    return None, "not found"


def _param(row: pd.Series, name: str) -> Any:
    return _literal(row.get(f"param: {name}"))


def _explain_op(csv: str, row: pd.Series, cost: OpCost, tl_flops: float, tl_bytes: float) -> str:
    """The :data:`EXPLANATIONS` key that accounts for the difference exactly, or ""."""
    if csv == "SDPA_fwd.csv" and bool(_param(row, "causal")):
        n_q, n_kv = int(_param(row, "N_Q")), int(_param(row, "N_KV"))
        if (
            n_q == n_kv
            and _close(cost.flops * n_q, tl_flops * (n_q + 1), n_q)
            and _close(cost.bytes, tl_bytes, 0.5)
        ):
            return "causal"
    if csv == "CONV_fwd.csv" and not bool(_param(row, "bias")):
        dims = _literal(row["Input Dims_first"])
        if len(dims) > 2 and dims[2]:
            x, w = _param(row, "input_shape"), _param(row, "filter_shape")
            stride, pad, dil = (
                _param(row, "stride"),
                _param(row, "padding"),
                _param(row, "dilation"),
            )
            out = [
                (x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
                for i in range(len(x) - 2)
            ]
            c_out = w[0]
            bias_adds = x[0] * c_out * math.prod(out)
            bpe = dtype_size(_literal(row["Input type_first"])[2]) or 0
            if _close(cost.flops - tl_flops, bias_adds, 0.5) and _close(
                cost.bytes - tl_bytes, c_out * bpe, 0.5
            ):
                return "conv_bias"
    return ""


def compare_ops(ref: Reference, csv: str, data: Path = DATA) -> list[Row]:
    """One FLOP and one bytes comparison per row of TraceLens's *csv*."""
    df = ref.csv(csv)
    if df is None:
        return []
    rows = []
    for _, r in df.iterrows():
        key = (
            str(r["name"]),
            _canon(_literal(r["Input Dims_first"])),
            _canon(_literal(r["Input type_first"])),
            _canon(_literal(r["Concrete Inputs_first"])),
        )
        cost, where = _find(ref, key)
        tl_flops = float(r["GFLOPS_first"]) * 1e9
        tl_bytes = float(r["Data Moved (MB)_first"]) * MIB
        item = f"{key[0]} {key[1]}"
        section = csv.removesuffix(".csv")
        if cost is None:
            why = (
                "op not found in the trace or its capture traces"
                if where == "not found"
                else ("not modelled by gpuscope")
            )
            for what, theirs in (("FLOP", tl_flops), ("bytes", tl_bytes)):
                rows.append(
                    Row(
                        label(ref, data),
                        section,
                        f"{item} {what}",
                        None,
                        theirs,
                        "unexplained",
                        why,
                        where,
                    )
                )
            continue
        reason = ""
        equal = _close(cost.flops, tl_flops, 1e-9 * tl_flops + 0.5) and _close(
            cost.bytes, tl_bytes, 1e-9 * tl_bytes + 0.5
        )
        if not equal:
            reason = _explain_op(csv, r, cost, tl_flops, tl_bytes)
        for what, ours, theirs in (("FLOP", cost.flops, tl_flops), ("bytes", cost.bytes, tl_bytes)):
            same = _close(ours, theirs, 1e-9 * theirs + 0.5)
            status = "equal" if same else ("explained" if reason else "unexplained")
            why = "" if same else (reason or "differs")
            rows.append(
                Row(label(ref, data), section, f"{item} {what}", ours, theirs, status, why, where)
            )
    return rows


# --- all ---------------------------------------------------------------------------------------


def compare_all(data: Path = DATA) -> list[Row]:
    """Every comparison on every reference under *data*."""
    rows: list[Row] = []
    for ref in references(data):
        rows += compare_timeline(ref, data)
        rows += compare_kernel_summary(ref, data)
        for csv in OP_CSVS:
            rows += compare_ops(ref, csv, data)
    return rows


def counts(rows: Iterable[Row], section: str | None = None) -> dict[str, int]:
    """equal / explained / unexplained counts (of *section*'s rows when given)."""
    out = {"equal": 0, "explained": 0, "unexplained": 0}
    for r in rows:
        if section is None or r.section == section:
            out[r.status] += 1
    return out


def op_row_counts(rows: Iterable[Row], section: str) -> dict[str, int]:
    """Per TraceLens op row (its FLOP and bytes comparisons together): equal when both are,
    unexplained when either is, else explained."""
    status: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        if r.section == section:
            key = (r.trace, r.item.rsplit(" ", 1)[0])
            status.setdefault(key, set()).add(r.status)
    out = {"equal": 0, "explained": 0, "unexplained": 0}
    for s in status.values():
        out[
            "unexplained" if "unexplained" in s else "explained" if "explained" in s else "equal"
        ] += 1
    return out


def _fmt(v: float | int | None) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.3f}"
    return f"{int(v):,}"


def render(rows: list[Row]) -> str:
    """docs/accuracy.md."""
    lines = [
        "# Accuracy: gpuscope against TraceLens",
        "",
        "Generated by `benchmarks/accuracy_vs_tracelens.py --write docs/accuracy.md` — do not "
        "edit by hand. For every trace in `../shared/data/kineto/tracelens` with TraceLens's "
        "own report beside it (AMD-AGI/TraceLens `generate_perf_report`, see that folder's "
        "MANIFEST.md), gpuscope's numbers (its Python API: load the trace, run the analyzers) "
        "against TraceLens's CSVs. Times in ns (TraceLens's ms × 10⁶), FLOP and bytes per "
        "call (TraceLens's GFLOPS × 10⁹, MB × 2²⁰).",
        "",
        "*equal*: the same number (TraceLens keeps float µs: equal within its rounding, "
        "one ulp of the largest timestamp per event compared); *explained*: a definitional "
        "difference below, checked by recomputing gpuscope's number under TraceLens's "
        "definition; "
        "*unexplained*: neither (`tests/benchmarks/test_accuracy_vs_tracelens.py` fails on "
        "one).",
        "",
        "## Definitional differences",
        "",
    ]
    lines += [f"- **{k}**: {v}" for k, v in EXPLANATIONS.items()]
    lines += [
        "",
        "Op rows are matched by op name and recorded arguments (Input Dims, Input type, "
        "Concrete Inputs); TraceLens attributes kernels replayed from CUDA/HIP graphs to the "
        "ops of the capture trace beside the trace, so some rows are found there (*where*). "
        "gpuscope's own roofline attributes kernels to the outermost modelled op (e.g. "
        "`aten::conv2d` around TraceLens's `aten::convolution`), whose cost is the same.",
        "",
        "## Summary",
        "",
        "Comparisons (an op row gives two: FLOP and bytes), and TraceLens op rows:",
        "",
        "| section | equal | explained | unexplained |",
        "|---|---:|---:|---:|",
    ]
    for section in ("timeline", "kernel summary", *(c.removesuffix(".csv") for c in OP_CSVS)):
        c = counts(rows, section)
        lines.append(f"| {section} | {c['equal']} | {c['explained']} | {c['unexplained']} |")
    for csv in OP_CSVS:
        section = csv.removesuffix(".csv")
        c = op_row_counts(rows, section)
        lines.append(f"| {csv} rows | {c['equal']} | {c['explained']} | {c['unexplained']} |")
    for trace in dict.fromkeys(r.trace for r in rows):
        lines += [
            "",
            f"## {trace}",
            "",
            "| section | item | gpuscope | TraceLens | status | where |",
        ]
        lines.append("|---|---|---:|---:|---|---|")
        for r in (x for x in rows if x.trace == trace):
            status = r.status + (f" ({r.reason})" if r.reason else "")
            item = r.item.replace("|", "\\|")
            lines.append(
                f"| {r.section} | `{item}` | {_fmt(r.gpuscope)} | {_fmt(r.tracelens)} | "
                f"{status} | {r.where} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA, help="the tracelens data folder")
    p.add_argument("--write", type=Path, help="write the markdown table here (else stdout)")
    args = p.parse_args(argv)
    rows = compare_all(args.data)
    text = render(rows)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    bad = [r for r in rows if r.status == "unexplained"]
    for r in bad:
        print(f"unexplained: {r.trace} {r.section} {r.item}: {r.reason}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
