"""gpuscope vs HTA: load + the foundation analyses on one real Kineto trace, in one run.

Each tool runs in a fresh Python process (interpreter start, imports, decompress, parse, analyses)
that reports its own wall time, the time spent in load + analyses, and its peak RSS
(``resource.getrusage``: the process itself and any workers it waited for; when gpuscope reads
the trace with two processes, its peak plus the helper's private memory,
``collectors.kineto.parallel``).  The script prints
both tools' figures and the ratios HTA / gpuscope.

- gpuscope: ``load_traces`` + the foundation's JSON sections (device, window, kernel summary,
  temporal breakdown, overlap, steps) + the JSON written; and, for reference, the whole
  ``gpuscope analyze TRACE --json OUT`` command (CLI start-up, every subcommand module imported,
  every registered summary section, including later features', tables rendered).
- HTA (``traceinsight``, import name ``hta``) with ``HTA_DISABLE_NS_ROUNDING=1`` (exact time, the
  numbers gpuscope reproduces): ``TraceAnalysis`` load, ``get_temporal_breakdown``,
  ``get_comm_comp_overlap``, ``get_gpu_kernel_breakdown`` (its kernel summary).

HTA lives in its own virtual environment outside the repository (default ``/tmp/hta-venv``); the
script creates it when missing with ``python -m venv`` + ``pip install traceinsight`` (falling
back to ``HolisticTraceAnalysis``), and says so.

Usage::

    python benchmarks/bench_vs_hta.py [--trace FILE] [--venv DIR] [--repeat N]

Default trace: the largest file in ``../shared/data/kineto`` (``mtia_trace_single_rank``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
DEFAULT_TRACE = (
    SHARED / "data" / "kineto" / "hta" / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"
)

# Both children print one JSON line: wall (process start to end of work), work (load +
# analyses), peak RSS in KiB, and a few numbers to show that both did the same work.
_RUSAGE = """
import resource
def _peak_kib():
    s = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(s, c)
"""

GPUSCOPE_CHILD = (
    "import time; T0 = time.perf_counter()\n"
    + _RUSAGE
    + """
import json, os, sys
from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.kineto import parallel as kineto_parallel  # loaded before the clock (as HTA's)
from collectors.load import load_traces
from reports.summary.sections import core as cs
from reports.summary import write_summary
trace, out = sys.argv[1], sys.argv[2]
os.environ["GPUSCOPE_READ_STATS"] = "1"  # a two-process read reports its helper's memory
t1 = time.perf_counter()
opts = AnalysisOptions()
sections = ("device", "window", "kernel_summary", "temporal", "overlap", "steps")
ranks = [{"rank": t.rank, **{k: getattr(cs, k)(t, opts, AnalysisInputs()) for k in sections}}
         for t in load_traces([trace])]
summary = {"schema_version": 1, "ranks": ranks}
write_summary(summary, out, force=True)  # the same path on every repeat
t2 = time.perf_counter()
r = summary["ranks"][0]
helper = kineto_parallel.last_helper  # its private memory adds to this process's peak
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
peak = own + helper.private_peak_kib if helper else _peak_kib()
print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "peak_kib": peak,
                  "idle_pct": r["temporal"]["idle_pct"],
                  "compute_pct": r["temporal"]["compute_pct"],
                  "overlap_pct": r["overlap"]["overlap_pct"]}))
"""
)

CLI_CHILD = (
    "import time; T0 = time.perf_counter()\n"
    + _RUSAGE
    + """
import contextlib, io, json, sys
from cli.main import main
trace, out = sys.argv[1], sys.argv[2]
t1 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["analyze", trace, "--json", out, "--force"])
t2 = time.perf_counter()
assert rc == 0, rc
r = json.load(open(out))["ranks"][0]
print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "peak_kib": _peak_kib(),
                  "idle_pct": r["temporal"]["idle_pct"],
                  "compute_pct": r["temporal"]["compute_pct"],
                  "overlap_pct": r["overlap"]["overlap_pct"]}))
"""
)

HTA_CHILD = (
    "import time; T0 = time.perf_counter()\n"
    + _RUSAGE
    + """
import contextlib, io, json, logging, os, sys, warnings
warnings.filterwarnings("ignore")
trace = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from hta.trace_analysis import TraceAnalysis
    logging.disable(logging.CRITICAL)
    t1 = time.perf_counter()
    ta = TraceAnalysis(trace_files={0: trace}, trace_dir=os.path.dirname(trace))
    tb = ta.get_temporal_breakdown(visualize=False)
    ov = ta.get_comm_comp_overlap(visualize=False)
    kb = ta.get_gpu_kernel_breakdown(visualize=False)
    t2 = time.perf_counter()
row = tb.iloc[0]
pct = float(ov.iloc[0]["comp_comm_overlap_pctg"])
print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "peak_kib": _peak_kib(),
                  "idle_pct": float(row["idle_time_pctg"]),
                  "compute_pct": float(row["compute_time_pctg"]),
                  "overlap_pct": None if pct != pct else pct}))
"""
)


def ensure_hta_venv(venv: Path) -> Path:
    """The venv's python with ``hta`` importable; create the venv and install HTA if needed."""
    py = venv / "bin" / "python"
    if py.exists() and _imports_hta(py):
        return py
    print(f"[setup] creating {venv} and installing HTA into it (once; outside the repository)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for package in ("traceinsight", "HolisticTraceAnalysis"):
        print(f"[setup] {py} -m pip install {package}")
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", package])
        if r.returncode == 0 and _imports_hta(py):
            return py
    sys.exit(f"could not install HTA into {venv}: run `{py} -m pip install traceinsight` and retry")


def _imports_hta(py: Path) -> bool:
    r = subprocess.run([str(py), "-c", "import hta.trace_analysis"], capture_output=True)
    return r.returncode == 0


def _run(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if r.returncode != 0:
        sys.exit(f"benchmark child failed ({' '.join(cmd[:2])}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _hta_version(py: Path) -> str:
    r = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.metadata as m\n"
            "for d in ('traceinsight', 'HolisticTraceAnalysis'):\n"
            "    try: print(d, m.version(d)); break\n"
            "    except m.PackageNotFoundError: pass",
        ],
        capture_output=True,
        text=True,
    )
    return r.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--venv", type=Path, default=Path("/tmp/hta-venv"))
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool (median reported)")
    args = ap.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace}: no such file (set GPUSCOPE_SHARED or pass --trace)")
    hta_py = ensure_hta_venv(args.venv)

    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1", PYTHONPATH=str(REPO))
    args.trace.read_bytes()  # warm the page cache for both
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "summary.json")
        runs: dict[str, list[dict[str, float]]] = {"gpuscope": [], "hta": [], "gpuscope CLI": []}
        for _ in range(args.repeat):  # interleaved, so machine noise hits all alike
            runs["gpuscope"].append(
                _run([sys.executable, "-c", GPUSCOPE_CHILD, str(args.trace), out], env)
            )
            runs["hta"].append(_run([str(hta_py), "-c", HTA_CHILD, str(args.trace)], env))
            runs["gpuscope CLI"].append(
                _run([sys.executable, "-c", CLI_CHILD, str(args.trace), out], env)
            )

    def med(tool: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[tool])

    size = args.trace.stat().st_size
    print(f"trace: {args.trace} ({size / 1e6:.1f} MB compressed)")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        f"; HTA: {_hta_version(hta_py)}; runs per tool: {args.repeat} (median)"
    )
    print(f"{'':12} {'process s':>10} {'load+analyses s':>16} {'peak RSS MiB':>13}  same work?")
    for tool in ("gpuscope", "hta", "gpuscope CLI"):
        r = runs[tool][0]
        check = (
            f"idle {r['idle_pct']:.2f}% compute {r['compute_pct']:.2f}% overlap {r['overlap_pct']}"
        )
        print(
            f"{tool:12} {med(tool, 'wall_s'):10.2f} {med(tool, 'work_s'):16.2f} "
            f"{med(tool, 'peak_kib') / 1024:13.0f}  {check}"
        )
    print(
        f"ratio HTA/gpuscope CLI: process time "
        f"{med('hta', 'wall_s') / med('gpuscope CLI', 'wall_s'):.1f}x, peak memory "
        f"{med('hta', 'peak_kib') / med('gpuscope CLI', 'peak_kib'):.1f}x"
    )
    print(
        f"ratio HTA/gpuscope: process time {med('hta', 'wall_s') / med('gpuscope', 'wall_s'):.1f}x,"
        f" load+analyses time {med('hta', 'work_s') / med('gpuscope', 'work_s'):.1f}x,"
        f" peak memory {med('hta', 'peak_kib') / med('gpuscope', 'peak_kib'):.1f}x"
        "  (target: >= 5x time, >= 2x memory)"
    )


if __name__ == "__main__":
    main()
