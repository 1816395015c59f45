"""The tables of docs/inference.md that are generated from code and data (the docs must contain
them verbatim; ``benchmarks/serving_docs_tables.py`` prints them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analyzers.serving.categories import KERNEL_RULES, OP_RULES
from analyzers.serving.graphs import Capture, attribute_graphs
from analyzers.serving.moe import KERNEL_ROLES, OP_ROLES
from analyzers.serving.ops import kernel_ops
from analyzers.serving.phases import PHASE_RULES, phase_summary, serving_steps
from collectors.kineto import read_kineto


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def category_rules_table() -> str:
    """Markdown: the two rule tables in decision order."""
    lines = ["| # | on | category | pattern (`re.search`) | meant for |", "|---|---|---|---|---|"]
    for on, rules in (("op", OP_RULES), ("kernel", KERNEL_RULES)):
        for i, r in enumerate(rules, 1):
            lines.append(f"| {i} | {on} | {r.category} | `{_cell(r.pattern)}` | {r.about} |")
    return "\n".join(lines)


def phase_rules_table() -> str:
    """Markdown: the default phase rules."""
    lines = ["| framework | pattern (`re.fullmatch`) | phase | modes |", "|---|---|---|---|"]
    for r in PHASE_RULES:
        modes = ", ".join(f"{k} → {v}" for k, v in r.modes.items()) or "–"
        lines.append(f"| {r.framework} | `{_cell(r.pattern)}` | {r.phase} | {modes} |")
    return "\n".join(lines)


def graph_coverage_table(tracelens: Path) -> str:
    """Markdown: graph attribution on the shared traces with a capture, with and without the
    capture's kernel names."""
    from tests.support.serving_data import CAPTURED

    lines = [
        "| trace | graph launches | replayed kernels | replayed ms | kernel names | "
        "alignment | attributed % |",
        "|---|---:|---:|---:|---|---|---:|",
    ]
    inf = tracelens / "inference"
    for ex_rel, cap_rel in CAPTURED.values():
        ex, cap = read_kineto(inf / ex_rel), read_kineto(inf / cap_rel)
        for names in (False, True):
            c = Capture(cap, None if names else {})  # the model's names, or none
            g = attribute_graphs(ex, [c])
            lines.append(
                f"| {ex_rel.split('/')[0]} | {len(g.launches)} | {int(g.launches['kernels'].sum())}"
                f" | {g.graph_kernel_ns / 1e6:.3f} | {'yes' if names else 'no'} | "
                f"{', '.join(sorted(set(g.launches['match'])))} | {100 * (g.coverage or 0):.2f} |"
            )
    return "\n".join(lines)


def phase_results_table(tracelens: Path) -> str:
    """Markdown: the serving steps of the shared SGLang and vLLM traces."""
    from tests.support.serving_data import SERVING

    lines = [
        "| trace | phase | requests | tokens (prefill + decode) | kernels | GPU busy ms | "
        "GPU span ms | tokens/s | output tokens/s | TPOT ms |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for rel in SERVING.values():
        t = read_kineto(tracelens / "inference" / rel)
        steps, _ = serving_steps(t, kernel_ops(t))
        for p in phase_summary(steps).itertuples(index=False):
            tpot = p.time_per_output_token_ns
            lines.append(
                f"| {rel.split('/')[0]} | {p.phase} | {p.requests} | {p.tokens} "
                f"({p.prefill_tokens} + {p.decode_tokens}) | {p.kernels} | "
                f"{p.busy_ns / 1e6:.3f} | {p.gpu_span_ns / 1e6:.3f} | {p.tokens_per_s:,.0f} | "
                f"{p.output_tokens_per_s:,.0f} | "
                f"{'–' if pd.isna(tpot) else f'{tpot / 1e6:.3f}'} |"
            )
    return "\n".join(lines)


def moe_roles_table() -> str:
    """Markdown: the MoE role rules in order."""
    lines = ["| # | on | role | pattern (`re.search`) |", "|---|---|---|---|"]
    rules = [("op", r) for r in OP_ROLES] + [("kernel", r) for r in KERNEL_ROLES]
    for i, (on, (role, rx)) in enumerate(rules, 1):
        lines.append(f"| {i} | {on} | {role} | `{_cell(rx)}` |")
    return "\n".join(lines)


def mfu_results_table(tracelens: Path) -> str:
    """Markdown: MFU of the shared serving traces (with their captures), per phase and of all
    GPU work, against the peak the device's entry of the built-in table gives."""
    from analyzers.gpu_peaks import peaks_for_device
    from analyzers.serving import serving_analysis
    from collectors.peaks import load_peaks
    from tests.support.serving_data import CAPTURED, SERVING

    lines = [
        "| trace | of | GPU busy ms | model TFLOP | TFLOP/s | MFU | peak, dtype | coverage % "
        "| exact % |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    inf = tracelens / "inference"
    table = load_peaks(None)
    cap_of = dict(CAPTURED.values())
    for rel in [*SERVING.values(), CAPTURED["xdit"][0]]:
        t = read_kineto(inf / rel)
        caps = [Capture(read_kineto(inf / cap_of[rel]))] if rel in cap_of else []
        a = serving_analysis(t, caps, peaks=peaks_for_device(table, t.gpu_device).peaks)
        rows = [(f"phase {r['group']}", r) for r in a.mfu["phases"].to_dict("records")]
        rows += [("all GPU work", r) for r in a.mfu["total"].to_dict("records")]
        for label, r in rows:
            mfu = "–" if r["mfu"] is None else f"{100 * r['mfu']:.2f} %"
            lines.append(
                f"| {rel.split('/')[0]}{' (+ capture)' if caps else ''} | {label} | "
                f"{r['busy_ns'] / 1e6:.3f} | {r['model_flops'] / 1e12:.3f} | "
                f"{r['achieved_flops_per_s'] / 1e12:.1f} | {mfu} | {r['peak']}, {r['dtype']} | "
                f"{100 * r['coverage']:.1f} | {100 * r['exact_share']:.1f} |"
            )
    return "\n".join(lines)
