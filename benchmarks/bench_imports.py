"""What ``gpuscope analyze`` imports before it reads the first byte of its trace, and how long.

Runs ``python -X importtime`` on the CLI in a fresh process with an audit hook that marks, on
stderr, the moment the trace file is first opened to be read (by the command or by the read's
helper it forks early, docs/kineto-reader.md; the gzip size check and the SQLite format check,
which read the 4-byte trailer and the 16-byte header, do not count); sums the cumulative import
times of the top-level imports before that mark (the import time a user waits for before any
work) and after it (modules imported lazily by the work itself), and lists the heavy packages
that were imported at all (Dask, SQLAlchemy, alembic, plotly, scipy, ruptures, pydantic,
pyarrow).  Median of ``--repeat`` runs.

Usage::

    python benchmarks/bench_imports.py [TRACE] [--repeat 5] [--top 15] [-- extra analyze args]

Default trace: ``sample_traces/torch_cpu/rank-0.json.gz``.  The command is
``gpuscope analyze TRACE --json OUT --no-cache``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO / "sample_traces" / "torch_cpu" / "rank-0.json.gz"
HEAVY = ("dask", "distributed", "sqlalchemy", "alembic", "plotly", "scipy", "ruptures",
         "pydantic", "pyarrow")  # fmt: skip
MARK = "gpuscope-bench: first read"

DRIVER = f"""
import os, sys
_target = sys.argv[1]
_parent = os.getpid()
_seen = []
def _hook(event, args):
    if not _seen and event == "open" and args and str(args[0]) == _target:
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name in ("gzip_isize", "is_sqlite"):
                return  # the size check and the format check peek: not the read of the trace
            f = f.f_back
        _seen.append(1)
        who = "this process" if os.getpid() == _parent else "the read's helper"
        sys.stderr.write({MARK!r} + " by " + who + "\\n")
        sys.stderr.flush()
sys.addaudithook(_hook)
sys.argv = ["gpuscope", *sys.argv[2:]]
from cli.launch import main  # the console script's entry point
rc = main()
sys.stderr.write("gpuscope-bench: modules " + " ".join(sorted(sys.modules)) + "\\n")
sys.exit(rc)
"""

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def one_run(trace: Path, extra: list[str]) -> dict[str, object]:
    """One fresh process: import µs before/after the first read, top imports, modules."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-X", "importtime", "-c", DRIVER, str(trace), "analyze",
               str(trace), "--json", str(Path(tmp) / "s.json"), "--no-cache", *extra]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(REPO))
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if r.returncode != 0:
        sys.exit(f"analyze failed ({r.returncode}):\n{r.stderr[-3000:]}")
    before = after = 0
    seen = False
    reader = ""
    tops: list[tuple[int, str]] = []
    modules: list[str] = []
    for line in r.stderr.splitlines():
        if line.startswith(MARK):
            reader = reader or line[len(MARK) :].strip()  # the first: the helper's, when early
            seen = True
            continue
        if line.startswith("gpuscope-bench: modules "):
            modules = line.split()[3:]
            continue
        m = _LINE.match(line)
        if m and not m.group(3).removeprefix(" "):  # a top-level import
            us = int(m.group(2))
            if seen:
                after += us
            else:
                before += us
                tops.append((us, m.group(4)))
    if not seen:
        sys.exit("the trace was never opened by name (a directory? pass the file)")
    heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
    return {"before_us": before, "after_us": after, "tops": tops, "heavy": heavy, "by": reader}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, nargs="?", default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=15, help="top-level imports listed")
    ap.add_argument("extra", nargs="*", help="more `analyze` arguments (after --)")
    a = ap.parse_args(argv)
    trace = a.trace.resolve()
    runs = [one_run(trace, a.extra) for _ in range(a.repeat)]
    before = statistics.median(int(r["before_us"]) for r in runs) / 1e6  # type: ignore[call-overload]
    after = statistics.median(int(r["after_us"]) for r in runs) / 1e6  # type: ignore[call-overload]
    print(f"trace: {trace}; {a.repeat} fresh processes, median")
    print(
        f"imports before the first byte is read: {before:.3f} s (target <= 0.35 s; read first "
        f"{runs[0]['by']})"
    )
    print(f"imports after (lazy, by the work):      {after:.3f} s")
    print(f"heavy packages imported: {', '.join(runs[0]['heavy']) or 'none'}")  # type: ignore[arg-type]
    tops = sorted(runs[-1]["tops"], reverse=True)[: a.top]  # type: ignore[call-overload]
    print("largest top-level imports before the read (last run, cumulative s):")
    for us, name in tops:
        print(f"  {us / 1e6:7.3f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
