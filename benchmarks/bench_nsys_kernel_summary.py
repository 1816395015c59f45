"""gpuscope's nsys load + kernel summary vs one hand-written GROUP BY query in sqlite3.

    python benchmarks/bench_nsys_kernel_summary.py [EXPORT.sqlite] [--kernels N] [--repeat R]

Without a file, writes the synthetic export of ``nsys_synthetic_export.py`` (1,000,000 kernels
by default) to a temporary folder.  Both sides are timed in this run on the same file,
interleaved, best of ``--repeat``, in wall time and in CPU time of this process (the latter is
less disturbed by other load on a shared machine), and the ratios gpuscope / raw query are
printed (target: within 3x).  The raw
query computes count, total, mean, min and max per kernel name; gpuscope additionally reads
every other table into the trace model and computes median and sample stddev.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RAW_QUERY = """
SELECT s.value, COUNT(*), SUM(k.end - k.start), AVG(k.end - k.start),
       MIN(k.end - k.start), MAX(k.end - k.start)
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName
GROUP BY k.demangledName
ORDER BY 3 DESC
"""


def raw_group_by(path: Path) -> list[tuple[Any, ...]]:
    """The reference: one GROUP BY over the kernel table, names joined from StringIds."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(RAW_QUERY).fetchall()
    finally:
        con.close()


def gpuscope_summary(path: Path) -> Any:
    """Load the export into Traces (every table) and compute the kernel summary of rank 0."""
    from analyzers.kernel_summary import kernel_summary
    from collectors.nsys import read_nsys

    traces = read_nsys(path)
    return kernel_summary(traces[0])


def _without_arrow(path: Path) -> Any:
    """gpuscope_summary with the DB-API read path (``GPUSCOPE_NSYS_ARROW=0``)."""
    from collectors.nsys.schema import ARROW_ENV

    os.environ[ARROW_ENV] = "0"
    try:
        return gpuscope_summary(path)
    finally:
        del os.environ[ARROW_ENV]


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", nargs="?", type=Path)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from collectors.nsys.schema import use_arrow

    with tempfile.TemporaryDirectory() as tmp:
        path = args.export
        if path is None:
            from nsys_synthetic_export import write_synthetic_export

            path = Path(tmp) / "synthetic.sqlite"
            t0 = time.perf_counter()
            write_synthetic_export(path, args.kernels)
            print(
                f"wrote synthetic export ({args.kernels} kernels) in "
                f"{time.perf_counter() - t0:.1f} s"
            )
        gpuscope_summary(path)  # warm the page cache and the imports once
        sides: dict[str, Callable[[], Any]] = {
            "raw GROUP BY query": lambda: raw_group_by(path),
            "gpuscope load + summary": lambda: gpuscope_summary(path),
        }
        if use_arrow():
            sides["  same, DB-API reads"] = lambda: _without_arrow(path)
        wall: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        results: dict[str, Any] = {}
        for _ in range(args.repeat):  # interleaved, so every side sees the same machine load
            for key, fn in sides.items():
                w, c, results[key] = timed(fn)
                wall[key].append(w)
                cpu[key].append(c)
        rows = results["raw GROUP BY query"]
        summary = results["gpuscope load + summary"]
        assert [r[2] for r in rows] == summary["total_ns"].tolist(), "same kernels on both sides"
        raw = "raw GROUP BY query"
        print(f"{'':28}{'wall s':>10}{'CPU s':>10}{'ratio wall':>12}{'ratio CPU':>11}")
        for key in sides:
            print(
                f"{key:28}{min(wall[key]):10.3f}{min(cpu[key]):10.3f}"
                f"{min(wall[key]) / min(wall[raw]):11.2f}x{min(cpu[key]) / min(cpu[raw]):10.2f}x"
            )
        print(f"best of {args.repeat}; {len(rows)} kernel names; target: gpuscope within 3x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
