"""Memory of the trace model per event: what a read :class:`~collectors.model.Trace` holds.

For each trace (a fresh process each, so that peaks do not mix) prints the rows of every table,
the bytes its columns hold (numpy buffers, categorical codes and categories, the object columns'
pointers plus each distinct object they reference once), the bytes per row, and the process's
peak RSS after the read (``ru_maxrss``) with the RSS before it (interpreter + imports).

Usage::

    python benchmarks/bench_model_memory.py TRACE [TRACE...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys
import numpy as np, pandas as pd
from collectors.kineto.reader import read_kineto

def deep(obj, seen):
    if id(obj) in seen or obj is None:
        return 0
    seen.add(id(obj))
    n = sys.getsizeof(obj)
    if isinstance(obj, dict):
        n += sum(deep(k, seen) + deep(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        n += sum(deep(v, seen) for v in obj)
    return n

def table_bytes(df):
    seen = set()
    total = 0
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            total += s.cat.codes.to_numpy().nbytes
            total += sum(deep(x, seen) for x in s.cat.categories) + 8 * len(s.cat.categories)
        elif s.dtype == object:
            arr = s.to_numpy()
            total += arr.nbytes + sum(deep(x, seen) for x in arr)
        else:
            total += s.to_numpy().nbytes
    return total

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
trace = read_kineto(sys.argv[1])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"rss_before_kib": before, "rss_peak_kib": peak, "tables": {}}
for name in ("gpu", "host", "annotations", "counters"):
    df = getattr(trace, name)
    out["tables"][name] = [len(df), table_bytes(df)]
print(json.dumps(out))
"""


def measure(path: Path) -> dict[str, Any]:
    """The child's figures for one trace."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    args = ap.parse_args(argv)
    print(f"{'trace':40} {'rows':>9} {'model MiB':>10} {'B/row':>7} {'RSS before/peak MiB':>20}")
    for path in args.traces:
        m = measure(path)
        rows = sum(n for n, _ in m["tables"].values())
        nbytes = sum(b for _, b in m["tables"].values())
        per = nbytes / rows if rows else 0.0
        rss = f"{m['rss_before_kib'] / 1024:.0f} / {m['rss_peak_kib'] / 1024:.0f}"
        print(f"{path.name[-40:]:40} {rows:>9} {nbytes / 2**20:>10.1f} {per:>7.0f} {rss:>20}")
        for name, (n, b) in m["tables"].items():
            print(f"  {name:38} {n:>9} {b / 2**20:>10.1f} {(b / n if n else 0):>7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
