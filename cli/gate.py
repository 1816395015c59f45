"""``gpuscope record``, ``gpuscope gate`` and ``gpuscope history`` (docs/gating.md).

``gate`` returns its exit code: 0 pass (warnings, improvements and — unless ``--strict`` —
insufficient data included), 1 regression, 3 insufficient data with ``--strict``; errors raise
and become exit 2 in :mod:`cli.main`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console

from analyzers.gate import Baseline, GateResult, decide
from analyzers.gate_metrics import METRICS, MetricValue, extract_metrics, metric_of
from analyzers.gate_rules import GateRules, parse_rules
from collectors.errors import InputError, UsageError

SUPPORTED_SCHEMA = 1

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
def read_summary(path: Path) -> tuple[dict[str, Any], str]:
    """A JSON summary of the supported schema version, and the SHA-256 of its bytes.

    Raises:
        InputError: missing, unreadable, not JSON, not a summary, or another schema version.
    """
    if not path.exists():
        raise InputError("no such file", path=path)
    if path.is_dir():
        raise InputError(
            "is a directory; expected a JSON summary (gpuscope analyze --json)", path=path
        )
    try:
        raw = path.read_bytes()
        data = msgspec.json.decode(raw)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=path) from err
    except msgspec.DecodeError as err:
        raise InputError(f"not valid JSON: {err}", path=path) from err
    if not isinstance(data, dict) or "schema_version" not in data or "ranks" not in data:
        raise InputError("not a gpuscope JSON summary (no schema_version/ranks)", path=path)
    version = data["schema_version"]
    if version != SUPPORTED_SCHEMA:
        raise InputError(
            f"summary schema_version {version!r} is not supported "
            f"(this gpuscope reads schema_version {SUPPORTED_SCHEMA})",
            path=path,
        )
    return data, hashlib.sha256(raw).hexdigest()


def read_rules(path: Path | None) -> GateRules:
    """Rules from a TOML file, or the defaults."""
    if path is None:
        return GateRules()
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


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror}", path=path) from err


def _metrics(summary: dict[str, Any], source: Path, rules: GateRules) -> dict[str, MetricValue]:
    return extract_metrics(summary, warmup_steps=rules.warmup_steps, source=str(source))


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
    from reports.store import environment_from_summary, open_store

    gate_rules = read_rules(rules)
    data, sha = read_summary(summary)
    metrics = _metrics(data, summary, gate_rules)
    if not metrics:
        raise InputError(
            "summary holds no metric the gate knows (no steps, no sections)", path=summary
        )
    environment = environment_from_summary(data, parse_env(env))
    with open_store(store) as st:
        run_id = st.record(
            metrics, name=name, env=environment, branch=branch, commit=commit, summary_sha256=sha
        )
        display = st.display
    typer.echo(
        f"Recorded run {run_id} of {name} ({branch or 'no branch'} @ {commit or 'no commit'}): "
        f"{len(metrics)} series into {display}"
    )


def _store_baseline(
    store: str,
    name: str | None,
    branch: str,
    data: dict[str, Any],
    env_pairs: dict[str, str],
    rules: GateRules,
) -> tuple[Baseline, str, dict[str, Any], list[str], Any]:
    from reports.store import environment_from_summary, open_store

    st = open_store(store)
    try:
        if name is None:
            names = st.names(branch)
            if len(names) != 1:
                raise UsageError(
                    f"pass --name: the store holds {len(names)} benchmarks on branch "
                    f"'{branch}'" + (f" ({', '.join(names[:10])})" if names else "")
                )
            name = names[0]
        env = environment_from_summary(data, env_pairs)
        found = st.baseline(name, branch, env, rules.baseline_runs)
    except BaseException:
        st.close()
        raise
    if found.segment_env is None:
        st.close()
        raise InputError(
            f"no baseline: no run of '{name}' on branch '{branch}' "
            f"(record one with: gpuscope record SUMMARY.json --store ... --name {name} "
            f"--branch {branch})",
            path=st.display,
        )
    notes = []
    if found.mismatch:
        notes.append(
            "environment differs from the latest baseline segment ("
            + "; ".join(found.mismatch)
            + "): not compared"
        )
    label = f"{st.display} {name}@{branch}, last {len(found.run_ids)} run(s)"
    info = {
        "kind": "store",
        "label": label,
        "store": st.display,
        "branch": branch,
        "run_ids": list(found.run_ids),
        "commits": list(found.commits),
        "environment": {
            **found.segment_env.as_dict(),
            "fingerprint": found.segment_env.fingerprint,
        },
    }
    return Baseline("store", found.runs, found.run_ids), name, info, notes, st


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
) -> int:
    """Gate CURRENT against a baseline: exit 0 pass, 1 regression, 2 error, 3 insufficient
    data (with --strict)."""
    from reports import gate_outputs as out
    from reports.store import environment_from_summary

    if (baseline is None) == (store is None):
        raise UsageError("give exactly one of --baseline BASE.json or --store URL")
    gate_rules = read_rules(rules)
    env_pairs = parse_env(env)
    data, _ = read_summary(current)
    cur_metrics = _metrics(data, current, gate_rules)
    cur_env = environment_from_summary(data, env_pairs)
    notes: list[str] = []
    st = None
    if baseline is not None:
        base_data, _ = read_summary(baseline)
        base = Baseline("file", (_metrics(base_data, baseline, gate_rules),))
        base_env = environment_from_summary(base_data, env_pairs)
        name = name or current.stem
        if base_env.fingerprint != cur_env.fingerprint:
            notes.append(
                "baseline environment differs: " + "; ".join(base_env.differences(cur_env))
            )
        base_info: dict[str, Any] = {
            "kind": "file",
            "label": str(baseline),
            "run_ids": [],
            "commits": [],
            "environment": {**base_env.as_dict(), "fingerprint": base_env.fingerprint},
        }
    else:
        assert store is not None
        base, name, base_info, notes, st = _store_baseline(
            store, name, branch, data, env_pairs, gate_rules
        )
    try:
        result = decide(cur_metrics, base, gate_rules)
        if not base.runs:
            result = _without_baseline(result)
        doc = out.gate_document(
            result,
            name=name,
            strict=strict,
            baseline=base_info,
            current={
                "source": str(current),
                "commit": commit,
                "environment": {**cur_env.as_dict(), "fingerprint": cur_env.fingerprint},
            },
            notes=notes,
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
        _write(junit, out.junit_xml(doc))
    if markdown is not None:
        _write(markdown, out.markdown(doc))
    if json_out is not None:
        _write(json_out, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in out.github_annotations(doc):
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    return int(doc["exit_code"])


def _without_baseline(result: GateResult) -> GateResult:
    why = "no baseline run in the candidate's environment"
    return replace(result, verdicts=tuple(replace(v, reason=why) for v in result.verdicts))


def history(
    store: StoreOpt,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    name: Annotated[str | None, typer.Option("--name", help="Only this benchmark.")] = None,
    metric: Annotated[
        str | None,
        typer.Option("--metric", help="Only this metric (step_time_ns) or series key."),
    ] = None,
    branch: Annotated[str | None, typer.Option("--branch", help="Only this branch.")] = None,
) -> None:
    """Write a trend page: metrics over commits, change points (ruptures), gate verdicts."""
    from reports.history import render_history
    from reports.store import open_store

    if metric is not None and metric_of(metric) not in METRICS:
        raise UsageError(f"--metric {metric!r}: unknown metric; known: {', '.join(METRICS)}")
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
    _write(output, render_history(hist, verdicts, title=title))
    typer.echo(f"Wrote {output}")


def register(app: typer.Typer) -> None:
    """Add ``record``, ``gate`` and ``history`` to *app*."""
    app.command("record")(record)
    app.command("gate")(gate)
    app.command("history")(history)
