"""Behaviour-unchanged proof: every JSON output of gpuscope on every trace, before and after.

``write OUTDIR`` runs the CLI (a fresh process per command, ``--no-cache``) over every trace in
``../shared/data`` and ``sample_traces/`` and writes, per input, the JSON summary, plus the
``compare`` JSON of a few pairs, the ``gate`` verdict JSON of summary pairs and the
``nccl-tests --json`` of every log.  Outputs are normalised (the tool version, the repository
root and temporary paths are replaced by placeholders) so that two checkouts can be compared.

``diff A B`` compares two such directories and exits 1 when any output differs (printing the
first differing JSON paths of each file).

Typical use across a refactor::

    git stash; python benchmarks/summary_snapshot.py write /tmp/snap-before; git stash pop
    python benchmarks/summary_snapshot.py write /tmp/snap-after
    python benchmarks/summary_snapshot.py diff /tmp/snap-before /tmp/snap-after
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED_DATA", REPO.parent / "shared" / "data"))

# Inputs analysed one by one; a directory is one multi-rank input.
NOT_TRACES = ("execution_trace/benchmark_simple_add_et", "memory_analysis/", "execution_details")
COMPARE_PAIRS = [
    ("kineto/hta/trace_compare/base/base.json.gz", "kineto/hta/trace_compare/test/test.json.gz"),
    (
        "kineto/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "kineto/tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    ),
]
SAMPLE_COMPARE = [("sample_traces/synthetic_2rank", "sample_traces/synthetic_8rank")]
COMPARE_VIEWS = ("kernel", "op", "collective", "annotation", "step")


def inputs() -> Iterator[tuple[str, list[str]]]:
    """(label, CLI arguments naming the input) for every trace."""
    for sub in ("synthetic_2rank", "synthetic_8rank", "torch_cpu"):
        if (REPO / "sample_traces" / sub).is_dir():
            yield f"sample_traces/{sub}", [f"sample_traces/{sub}"]
    real = REPO / "sample_traces" / "real"
    if real.is_dir():
        for f in sorted(real.rglob("*.json*")):
            rel = f.relative_to(REPO).as_posix()
            yield rel, [rel]
    for f in sorted((SHARED / "kineto").rglob("*.json*")):
        rel = f.relative_to(SHARED).as_posix()
        if any(n in rel for n in NOT_TRACES):
            continue
        yield rel, [str(f)]
    for f in sorted((SHARED / "nsys").glob("*.sqlite")):
        yield f.relative_to(SHARED).as_posix(), [str(f)]


def _label_file(label: str, suffix: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", label) + suffix


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GPUSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="snapcache"))
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def normalise(doc: Any) -> Any:
    """Replace run-specific strings (tool version, repository root, temp dirs)."""
    text = json.dumps(doc, sort_keys=True)
    text = text.replace(str(REPO), "<REPO>").replace(str(SHARED), "<SHARED>")
    text = re.sub(r"/tmp/[^\"/]*snap[^\"/]*", "<TMP>", text)
    out = json.loads(text)
    if isinstance(out, dict) and isinstance(out.get("tool"), dict):
        out["tool"].pop("version", None)
    _drop_version_keys(out)
    return out


def _drop_version_keys(doc: Any) -> None:
    """The gate's environment records gpuscope's version and a fingerprint hashed from it: both
    depend on how the checkout is installed, not on the code (every other fact is kept)."""
    if isinstance(doc, dict):
        env = doc.get("environment")
        if isinstance(env, dict):
            env.pop("gpuscope_version", None)
            env.pop("fingerprint", None)
        for v in doc.values():
            _drop_version_keys(v)
    elif isinstance(doc, list):
        for v in doc:
            _drop_version_keys(v)


def _save(outdir: Path, name: str, proc: subprocess.CompletedProcess[str], json_path: Path) -> None:
    record: dict[str, Any] = {"exit_code": proc.returncode}
    if json_path.exists():
        record["json"] = normalise(json.loads(json_path.read_text()))
    else:
        record["stderr_last_line"] = (proc.stderr.strip().splitlines() or [""])[-1]
    (outdir / name).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def write(outdir: Path, only: str | None) -> int:
    outdir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="snapout"))
    summaries: dict[str, Path] = {}
    for label, args in inputs():
        if only and only not in label:
            continue
        j = tmp / _label_file(label, ".summary.json")
        proc = _run(["analyze", *args, "--json", str(j), "--no-cache"], REPO)
        _save(outdir, _label_file(label, ".summary.json"), proc, j)
        if j.exists():
            summaries[label] = j
        print(f"{proc.returncode}  analyze {label}", flush=True)
    pairs = [(str(SHARED / a), str(SHARED / b), f"{a}~{b}") for a, b in COMPARE_PAIRS]
    pairs += [(a, b, f"{a}~{b}") for a, b in SAMPLE_COMPARE]
    for a, b, label in pairs:
        if only and only not in label:
            continue
        for view in COMPARE_VIEWS:
            j = tmp / _label_file(f"{label}.{view}", ".compare.json")
            proc = _run(["compare", a, b, "--by", view, "--json", str(j)], REPO)
            _save(outdir, _label_file(f"{label}.{view}", ".compare.json"), proc, j)
            print(f"{proc.returncode}  compare --by {view} {label}", flush=True)
    labels = sorted(summaries)
    for base, cur in zip(labels, labels[1:] + labels[:1], strict=True):
        j = tmp / _label_file(f"{base}~{cur}", ".gate.json")
        args = ["gate", str(summaries[cur]), "--baseline", str(summaries[base]), "--json", str(j)]
        proc = _run(args, REPO)
        _save(outdir, _label_file(f"{base}~{cur}", ".gate.json"), proc, j)
        print(f"{proc.returncode}  gate {base} -> {cur}", flush=True)
    for log in sorted((SHARED / "nccl-tests").glob("*")):
        if log.suffix not in (".log", ".txt"):
            continue
        if only and only not in log.name:
            continue
        j = tmp / _label_file(log.name, ".nccl.json")
        proc = _run(["nccl-tests", str(log), "--json", str(j)], REPO)
        _save(outdir, _label_file(log.name, ".nccl.json"), proc, j)
        print(f"{proc.returncode}  nccl-tests {log.name}", flush=True)
    return 0


def _first_diffs(a: Any, b: Any, path: str = "$", limit: int = 8) -> list[str]:
    out: list[str] = []
    if type(a) is not type(b):
        return [f"{path}: {a!r:.80} != {b!r:.80}"]
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if len(out) >= limit:
                break
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'B' if k not in a else 'A'}")
            else:
                out += _first_diffs(a[k], b[k], f"{path}.{k}", limit - len(out))
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if len(out) >= limit:
                break
            out += _first_diffs(x, y, f"{path}[{i}]", limit - len(out))
    elif a != b:
        out.append(f"{path}: {a!r:.80} != {b!r:.80}")
    return out


def diff(a: Path, b: Path) -> int:
    names_a = {p.name for p in a.iterdir()}
    names_b = {p.name for p in b.iterdir()}
    bad = 0
    for n in sorted(names_a ^ names_b):
        print(f"only in {'A' if n in names_a else 'B'}: {n}")
        bad += 1
    same = 0
    for n in sorted(names_a & names_b):
        da = normalise(json.loads((a / n).read_text()))
        db = normalise(json.loads((b / n).read_text()))
        if da == db:
            same += 1
            continue
        bad += 1
        print(f"DIFFERS: {n}")
        for line in _first_diffs(da, db):
            print(f"    {line}")
    print(f"{same} identical, {bad} different or missing")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("outdir", type=Path)
    w.add_argument("--only", help="only inputs whose label contains this string")
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    ns = ap.parse_args(argv)
    if ns.cmd == "write":
        return write(ns.outdir, ns.only)
    return diff(ns.a, ns.b)


if __name__ == "__main__":
    raise SystemExit(main())
