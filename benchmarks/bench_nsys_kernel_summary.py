"""gpuscope's nsys load + kernel summary vs one hand-written GROUP BY query in sqlite3.

    python benchmarks/bench_nsys_kernel_summary.py [EXPORT.sqlite] [--kernels N] [--repeat R]

Without a file, writes the synthetic export of ``nsys_synthetic_export.py`` (1,000,000 kernels
by default) to a temporary folder.  Both sides are timed in this run on the same file (best of
``--repeat``), and the ratio gpuscope / raw query is printed (target: within 3x).  The raw
query computes count, total, mean, min and max per kernel name; gpuscope additionally reads
every other table into the trace model and computes median and sample stddev.
"""

from __future__ import annotations

import argparse
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


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", nargs="?", type=Path)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
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
        t_raw, rows = best_of(lambda: raw_group_by(path), args.repeat)
        t_ours, summary = best_of(lambda: gpuscope_summary(path), args.repeat)
        assert len(rows) == len(summary), "both sides must see the same kernel names"
        assert [r[2] for r in rows] == summary["total_ns"].tolist()
        print(f"raw GROUP BY query          : {t_raw:8.3f} s  ({len(rows)} names)")
        print(f"gpuscope load + summary     : {t_ours:8.3f} s")
        print(f"ratio gpuscope / raw query  : {t_ours / t_raw:8.2f}x  (target <= 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
