"""``gpuscope record``, ``gpuscope gate`` and ``gpuscope history`` (docs/gating.md).

``gate`` returns its exit code: 0 pass (warnings, improvements and — unless ``--strict`` —
insufficient data included), 1 regression, 3 insufficient data with ``--strict``; errors raise
and become exit 2 in :mod:`cli.main`.  Summaries are read by
:func:`collectors.summary.reader.read_summary`; the decision is :mod:`analyzers.gate`'s; the
outputs are :mod:`reports.gate_outputs`'.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from analyzers.gate.baseline import BaselinePlan, benchmark_name, file_baseline, store_baseline
from analyzers.gate.environment import Environment, environment_from_summary
from analyzers.gate.metrics import METRICS, MetricValue, extract_metrics, metric_of
from analyzers.gate.rules import GateRules, parse_rules
from analyzers.gate.verdicts import evaluate
from cli.outputs import ForceOpt
from collectors.errors import InputError, UsageError
from collectors.summary.reader import read_summary, read_summary_file
from collectors.summary.schema import Summary
from reports.output import check_output, check_outputs, write_atomic

if TYPE_CHECKING:
    from reports.store import Store

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        help="Run history: a SQLAlchemy URL (postgresql+psycopg://user:pw@host/db, "
        "sqlite:///path.db) or a file path (SQLite, created on first use).",
    ),
]
EnvOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        help="KEY=VALUE fact of the environment fingerprint (repeatable): gpu_model, "
        "gpu_count, nodes, driver, cuda, nccl, torch, or any other key (e.g. NCCL_ALGO=Ring). "
        "Overrides what the summary records.",
    ),
]
RulesOpt = Annotated[
    Path | None,
    typer.Option("--rules", help="Rules file (TOML) with thresholds; see docs/gating.md."),
]


# --- inputs -----------------------------------------------------------------------------------
def read_rules(path: Path | None) -> GateRules:
    """Rules from a TOML file, or the defaults."""
    if path is None:
        return GateRules()
    from collectors.files import regular_file

    regular_file(path)  # a FIFO or device would block the read (docs/reliability.md)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise InputError("rules file not found", path=path) from err
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read rules file: {err}", path=path) from err
    return parse_rules(text, str(path))


def parse_env(pairs: list[str] | None) -> dict[str, str]:
    """``--env KEY=VALUE`` options as a dict."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--env {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _metrics(summary: Summary, rules: GateRules) -> dict[str, MetricValue]:
    return extract_metrics(summary, warmup_steps=rules.warmup_steps)


# --- commands ---------------------------------------------------------------------------------
def record(
    summary: Annotated[Path, typer.Argument(help="JSON summary (gpuscope analyze --json).")],
    store: StoreOpt,
    name: Annotated[str, typer.Option("--name", help="Benchmark name (a series family).")],
    branch: Annotated[str | None, typer.Option("--branch", help="Git branch.")] = None,
    commit: Annotated[str | None, typer.Option("--commit", help="Git commit SHA.")] = None,
    env: EnvOpt = None,
    rules: RulesOpt = None,
) -> None:
    """Record a run's metrics and per-step samples in the run history (one transaction)."""
    from reports.store import open_store

    gate_rules = read_rules(rules)
    env_pairs = parse_env(env)
    read = read_summary_file(summary)  # validated before the store is touched
    metrics = _metrics(read.summary, gate_rules)
    if not metrics:
        raise InputError(
            "summary holds no metric the gate knows (no steps, no sections)", path=summary
        )
    environment = environment_from_summary(read.summary, env_pairs)
    with open_store(store) as st:
        run_id = st.record(
            metrics,
            name=name,
            env=environment,
            branch=branch,
            commit=commit,
            summary_sha256=read.sha256,
        )
        display = st.display
    typer.echo(
        f"Recorded run {run_id} of {name} ({branch or 'no branch'} @ {commit or 'no commit'}): "
        f"{len(metrics)} series into {display}"
    )


def gate(
    current: Annotated[Path, typer.Argument(help="The candidate's JSON summary.")],
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="Baseline JSON summary (one run).")
    ] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", help="Run history (URL or SQLite path) to take the baseline from."),
    ] = None,
    branch: Annotated[str, typer.Option("--branch", help="Baseline branch in the store.")] = "main",
    name: Annotated[
        str | None,
        typer.Option("--name", help="Benchmark name in the store (default: its only one)."),
    ] = None,
    rules: RulesOpt = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Write a Markdown summary (PR comment).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the verdict document (JSON) here.")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when a series has insufficient data.")
    ] = False,
    commit: Annotated[
        str | None, typer.Option("--commit", help="The candidate's commit (labels, verdicts).")
    ] = None,
    env: EnvOpt = None,
    save_verdicts: Annotated[
        bool,
        typer.Option("--save-verdicts/--no-save-verdicts", help="Store verdicts (with --store)."),
    ] = True,
    force: ForceOpt = False,
) -> int:
    """Gate CURRENT against a baseline: exit 0 pass, 1 regression, 2 error, 3 insufficient
    data (with --strict)."""
    from analyzers.gate.environment import environment_record
    from reports import gate_outputs as out
    from reports.store import open_store

    if (baseline is None) == (store is None):
        raise UsageError("give exactly one of --baseline BASE.json or --store URL")
    check_outputs([junit, markdown, json_out], force=force)
    gate_rules = read_rules(rules)
    env_pairs = parse_env(env)
    data = read_summary(current)
    cur_metrics = _metrics(data, gate_rules)
    cur_env = environment_from_summary(data, env_pairs)
    st = None
    if baseline is not None:
        plan = _file_plan(read_summary(baseline), baseline, cur_env, gate_rules, env_pairs)
        name = name or current.stem
    else:
        assert store is not None
        st = open_store(store)
    try:
        if st is not None:
            name, plan = _store_plan(st, name, branch, cur_env, gate_rules)
        assert name is not None
        result = evaluate(cur_metrics, plan, gate_rules)
        doc = out.gate_document(
            result,
            name=name,
            strict=strict,
            baseline=plan.info,
            current={
                "source": str(current),
                "commit": commit,
                "environment": environment_record(cur_env),
            },
            notes=plan.notes,
        )
        if st is not None and save_verdicts:
            st.save_verdicts(result, name=name, branch=branch, commit=commit)
    finally:
        if st is not None:
            st.close()
    # CI logs are not terminals: give the table room instead of rich's 80-column default
    width = None if sys.stdout.isatty() else 160
    out.render_table(doc, Console(highlight=False, width=width))
    if junit is not None:
        write_atomic(junit, out.junit_xml(doc), force=force, what="JUnit XML")
    if markdown is not None:
        write_atomic(markdown, out.markdown(doc), force=force, what="Markdown summary")
    if json_out is not None:
        write_atomic(json_out, out.document_json(doc), force=force, what="gate result")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in out.github_annotations(doc):
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    return int(doc["exit_code"])


def _file_plan(
    data: Summary,
    path: Path,
    cur_env: Environment,
    rules: GateRules,
    env_pairs: dict[str, str],
) -> BaselinePlan:
    env = environment_from_summary(data, env_pairs)
    return file_baseline(_metrics(data, rules), env, cur_env, label=str(path))


def _store_plan(
    st: Store, name: str | None, branch: str, cur_env: Environment, rules: GateRules
) -> tuple[str, BaselinePlan]:
    name = name or benchmark_name(st.names(branch), branch)
    found = st.baseline(name, branch, cur_env, rules.baseline_runs)
    return name, store_baseline(found, name=name, branch=branch, store=st.display)


def history(
    store: StoreOpt,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    name: Annotated[str | None, typer.Option("--name", help="Only this benchmark.")] = None,
    metric: Annotated[
        str | None,
        typer.Option("--metric", help="Only this metric (step_time_ns) or series key."),
    ] = None,
    branch: Annotated[str | None, typer.Option("--branch", help="Only this branch.")] = None,
    force: ForceOpt = False,
) -> None:
    """Write a trend page: metrics over commits, change points (ruptures), gate verdicts."""
    from reports.history import render_history
    from reports.store import open_store

    if metric is not None and metric_of(metric) not in METRICS:
        raise UsageError(f"--metric {metric!r}: unknown metric; known: {', '.join(METRICS)}")
    check_output(output, force=force)
    with open_store(store) as st:
        hist = st.history(name=name, branch=branch, metric=metric)
        verdicts = st.verdicts(name=name)
        display = st.display
    if hist.empty:
        what = " ".join(
            f"{k} {v!r}" for k, v in (("name", name), ("branch", branch), ("metric", metric)) if v
        )
        raise InputError(f"no recorded run{' for ' + what if what else ''}", path=display)
    title = f"gpuscope history: {name or 'all benchmarks'}" + (f" · {metric}" if metric else "")
    page = render_history(hist, verdicts, title=title)
    write_atomic(output, page, force=force, what="history page")
    typer.echo(f"Wrote {output}")


def register(app: typer.Typer) -> None:
    """Add ``record``, ``gate`` and ``history`` to *app*."""
    app.command("record")(record)
    app.command("gate")(gate)
    app.command("history")(history)
