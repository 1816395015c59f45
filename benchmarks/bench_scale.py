"""Scale benchmarks, each measured side by side in one run (fresh processes, ratios printed):

A. **gpuscope vs HTA** on the largest real trace: load + temporal breakdown + overlap.
   gpuscope three times: parsing the trace (``load_traces``; two processes, the default for a
   large file, and one process, ``GPUSCOPE_READ_PROCS=1``), and from a warm parse cache
   (``collectors.cache``); HTA 0.6.1 (``traceinsight``, ``HTA_DISABLE_NS_ROUNDING=1``) in its
   own venv (``bench_vs_hta.ensure_hta_venv``).  Target: ≥ 10x faster at ≤ half the peak RSS.
B. **cached re-analysis vs first analysis** of the same trace with every summary section
   (``reports.summary.engine.analyze_paths``): cold cache; warm cache (per-rank results reused);
   warm trace cache only (results removed, sections recomputed).  Target: ≥ 20x.
C. **many ranks, 1 vs 2 workers**: ``analyze_paths`` over ranks from
   ``benchmarks/scale_generator.py`` (default 64 ranks × 50 MB) in a pool of 1 worker process
   and of 2, without cache, interleaved ``--repeat-c`` times; then 2 workers with a cold cache
   and a re-analysis; peak RSS of the caller and of each worker, CPU-seconds used, load
   average.  Target: ≥ 1.7x with 2 workers on a 2-core machine.

Every child prints its wall time (interpreter start to end), the time of the measured work
(modules imported before the clock starts, for every tool alike), its peak RSS (``VmHWM``; plus
the private memory of the helper when gpuscope reads one large trace with two processes,
``collectors.kineto.parallel``) and a hash (or the key numbers) of what it computed, so that
the rows can be checked to do the same work.

Usage::

    python benchmarks/bench_scale.py [--small] [--repeat N] [--ranks N] [--target-mb MB]
        [--data DIR] [--skip-hta] [--venv DIR]

``--small``: 8 ranks × one copy of the source steps (≈10 MB each), 1 repeat.
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
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
LARGEST = SHARED / "data" / "kineto" / "hta" / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"

_PRELUDE = """
import time; T0 = time.perf_counter()
import hashlib, json, resource, sys
def _peak_kib():  # this process's own high-water mark (ru_maxrss would include the parent's)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
def _cpu():  # CPU-seconds of this process and the children it has waited for
    ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(r.ru_utime + r.ru_stime for r in ru)
"""

GPUSCOPE_TO_CHILD = (
    _PRELUDE
    + """
import os
from pathlib import Path
from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.kineto import parallel as kineto_parallel  # the reader, loaded before the clock
from collectors.cache import TraceCache, read_kineto_cached
from collectors.load import load_traces
from reports.summary.sections import core as cs
trace, mode, cache_dir = sys.argv[1], sys.argv[2], sys.argv[3]
os.environ["GPUSCOPE_READ_STATS"] = "1"
if mode == "parse-serial":
    os.environ["GPUSCOPE_READ_PROCS"] = "1"
c1 = _cpu()
t1 = time.perf_counter()
if mode.startswith("parse"):
    traces = load_traces([trace])
else:
    traces, outcome = read_kineto_cached(Path(trace), TraceCache(cache_dir))
    assert outcome.status == "hit", outcome
opts = AnalysisOptions()
tb = cs.temporal(traces[0], opts, AnalysisInputs())
ov = cs.overlap(traces[0], opts, AnalysisInputs())
t2 = time.perf_counter()
helper = kineto_parallel.last_helper
print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "cpu_s": _cpu() - c1,
                  "peak_kib": _peak_kib() + (helper.private_peak_kib if helper else 0),
                  "helper_private_kib": helper.private_peak_kib if helper else 0,
                  "helper_maxrss_kib": helper.maxrss_kib if helper else 0,
                  "check": f"idle {tb['idle_pct']:.2f}% compute {tb['compute_pct']:.2f}% "
                           f"overlap {ov['overlap_pct']}"}))
"""
)

HTA_TO_CHILD = (
    _PRELUDE
    + """
import contextlib, io, logging, os, warnings
warnings.filterwarnings("ignore")
trace = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from hta.trace_analysis import TraceAnalysis
    logging.disable(logging.CRITICAL)
    c1 = _cpu()
    t1 = time.perf_counter()
    ta = TraceAnalysis(trace_files={0: trace}, trace_dir=os.path.dirname(trace))
    tb = ta.get_temporal_breakdown(visualize=False)
    ov = ta.get_comm_comp_overlap(visualize=False)
    t2 = time.perf_counter()
row = tb.iloc[0]
pct = float(ov.iloc[0]["comp_comm_overlap_pctg"])
print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "peak_kib": _peak_kib(),
                  "cpu_s": _cpu() - c1,
                  "check": f"idle {float(row['idle_time_pctg']):.2f}% compute "
                           f"{float(row['compute_time_pctg']):.2f}% "
                           f"overlap {None if pct != pct else pct}"}))
"""
)

ANALYZE_CHILD = (
    _PRELUDE
    + """
if __name__ == "__main__":
    import importlib
    from reports.summary.engine import analyze_paths
    from reports.summary.registry import RANK_SECTIONS, RUN_SECTIONS
    for _, fn in RANK_SECTIONS + RUN_SECTIONS:  # code loaded before the clock, as for HTA
        importlib.import_module(fn.__module__)
    for module in ("collectors.cache", "collectors.load", "collectors.kineto", "analyzers.comm",
                   "analyzers.skew", "importlib.metadata"):  # what analyze_paths imports lazily
        importlib.import_module(module)
    paths, scheduler, workers, cache_dir, clear = sys.argv[1:6]
    import os
    from collectors.kineto import parallel as kineto_parallel
    os.environ["GPUSCOPE_READ_STATS"] = "1"  # a two-process read reports its helper's memory
    if clear == "results":
        from collectors.cache import TraceCache
        TraceCache(cache_dir).results.clear()
    with open("/proc/loadavg") as f:
        load0 = float(f.read().split()[0])
    c1 = _cpu()
    t1 = time.perf_counter()
    res = analyze_paths(
        [paths], scheduler=None if scheduler == "auto" else scheduler,
        workers=None if workers == "auto" else int(workers),
        use_cache=cache_dir != "-", cache_dir=None if cache_dir == "-" else cache_dir)
    t2 = time.perf_counter()
    cpu = _cpu() - c1  # this process and its reaped workers
    with open("/proc/loadavg") as f:
        load1 = float(f.read().split()[0])
    s = json.dumps(res.summary, sort_keys=True).encode()
    peaks = res.peak_rss_by_worker()
    statuses = {}
    for u in res.units:
        statuses[u.cache_status] = statuses.get(u.cache_status, 0) + 1
    helper = kineto_parallel.last_helper  # in this process (one input, read with 2 procs)
    peak = _peak_kib() + (helper.private_peak_kib if helper else 0)
    print(json.dumps({"wall_s": t2 - T0, "work_s": t2 - t1, "peak_kib": peak,
                      "scheduler": res.scheduler, "workers": res.workers,
                      "worker_peaks_mib": sorted(v / 2**20 for v in peaks.values()),
                      "ranks": len(res.summary["ranks"]), "errors": len(res.errors),
                      "statuses": statuses, "cpu_s": cpu, "load": [load0, load1],
                      "check": hashlib.sha256(s).hexdigest()[:12]}))
"""
)


def _child(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd[0] -c cmd[1] cmd[2:]``; its last stdout line is a JSON object."""
    r = subprocess.run(
        [cmd[0], "-c", cmd[1], *cmd[2:]], capture_output=True, text=True, env=env, cwd=REPO
    )
    if r.returncode != 0:
        sys.exit(f"benchmark child failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _med(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _row(label: str, runs: list[dict[str, Any]]) -> str:
    cpu = f"{_med(runs, 'cpu_s'):7.2f}" if "cpu_s" in runs[0] else f"{'-':>7}"
    return (
        f"{label:38} {_med(runs, 'wall_s'):9.2f} {_med(runs, 'work_s'):8.2f} {cpu} "
        f"{_med(runs, 'peak_kib') / 1024:9.0f}  {runs[0]['check']}"
    )


HEADER = f"{'':38} {'process s':>9} {'work s':>8} {'CPU s':>7} {'peak MiB':>9}  same work?"


def part_a(trace: Path, repeat: int, hta_py: Path | None, env: dict[str, str]) -> None:
    print(f"\nA. load + temporal breakdown + overlap, {trace.name} (median of {repeat})")
    modes = {
        "parse": "gpuscope, parsing (default: 2 procs)",
        "parse-serial": "gpuscope, parsing (1 process)",
        "cached": "gpuscope, warm parse cache",
    }
    with tempfile.TemporaryDirectory() as cache:
        warm = "from pathlib import Path; import sys; from collectors.cache import *\n"
        warm += "read_kineto_cached(Path(sys.argv[1]), TraceCache(sys.argv[2])); print('{}')"
        _child([sys.executable, warm, str(trace), cache], env)  # fill the parse cache
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in (*modes, "hta")}
        for _ in range(repeat):  # interleaved: machine noise hits every tool alike
            for mode in modes:
                runs[mode].append(
                    _child([sys.executable, GPUSCOPE_TO_CHILD, str(trace), mode, cache], env)
                )
            if hta_py is not None:
                runs["hta"].append(_child([str(hta_py), HTA_TO_CHILD, str(trace)], env))
    print(HEADER)
    for mode, label in modes.items():
        print(_row(label, runs[mode]))
    helper = [r["helper_private_kib"] for r in runs["parse"]]
    if any(helper):
        print(
            f"  (2 procs: peak MiB = the process's VmHWM + its helper's private memory, "
            f"{statistics.median(helper) / 1024:.0f} MiB; the helper's own VmHWM, counting "
            f"the pages it shares with the process, "
            f"{_med(runs['parse'], 'helper_maxrss_kib') / 1024:.0f} MiB)"
        )
    if runs["hta"]:
        print(_row("HTA 0.6.1", runs["hta"]))
        for k, label in modes.items():
            print(
                f"ratio HTA / {label}: process time "
                f"{_med(runs['hta'], 'wall_s') / _med(runs[k], 'wall_s'):.1f}x, work time "
                f"{_med(runs['hta'], 'work_s') / _med(runs[k], 'work_s'):.1f}x, peak memory "
                f"{_med(runs['hta'], 'peak_kib') / _med(runs[k], 'peak_kib'):.1f}x"
                "  (target >= 10x time, >= 2x memory)"
            )


def _analyze(paths: Path, scheduler: str, workers: str, cache: str, clear: str, env: Any) -> Any:
    return _child(
        [sys.executable, ANALYZE_CHILD, str(paths), scheduler, workers, cache, clear], env
    )


def part_b(trace: Path, repeat: int, env: dict[str, str]) -> None:
    print(f"\nB. whole analysis (every summary section), {trace.name} (median of {repeat})")
    runs: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": [], "traces": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            runs["cold"].append(_analyze(trace, "auto", "auto", cache, "-", env))
            runs["warm"].append(_analyze(trace, "auto", "auto", cache, "-", env))
            runs["traces"].append(_analyze(trace, "auto", "auto", cache, "results", env))
    print(HEADER)
    print(_row("first analysis (cold cache)", runs["cold"]))
    print(_row("re-analysis (warm cache)", runs["warm"]))
    print(_row("re-analysis (parse cache only)", runs["traces"]))
    for k, label in (("warm", "warm cache"), ("traces", "parse cache only")):
        print(
            f"ratio first / re-analysis, {label}: process time "
            f"{_med(runs['cold'], 'wall_s') / _med(runs[k], 'wall_s'):.1f}x, work time "
            f"{_med(runs['cold'], 'work_s') / _med(runs[k], 'work_s'):.1f}x  (target >= 20x)"
        )


def part_c(data: Path, repeat: int, env: dict[str, str]) -> None:
    files = sorted(data.glob("rank-*.json.gz"))
    size = sum(p.stat().st_size for p in files)
    print(f"\nC. {len(files)} ranks from {data} ({size / 1e6:.0f} MB gzip), every section")
    print(
        f"{'':26} {'process s':>9} {'work s':>8} {'CPU s':>7} {'CPU use':>7} {'load':>9} "
        f"{'caller MiB':>10}  per-worker peak MiB"
    )

    def show(label: str, r: dict[str, Any]) -> None:
        wp = ", ".join(f"{m:.0f}" for m in r["worker_peaks_mib"]) or "-"
        use = r["cpu_s"] / (r["work_s"] * r["workers"])
        print(
            f"{label:26} {r['wall_s']:9.1f} {r['work_s']:8.1f} {r['cpu_s']:7.0f} {use:7.0%} "
            f"{r['load'][0]:4.1f}-{r['load'][1]:<4.1f} {r['peak_kib'] / 1024:10.0f}  {wp}  "
            f"[{r['scheduler']} x{r['workers']}, ranks {r['ranks']}, errors {r['errors']}, "
            f"{r['statuses']}, summary {r['check']}]"
        )

    runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
    for _ in range(repeat):  # interleaved, so that other jobs' load hits both alike
        for w in ("1", "2"):
            runs[w].append(_analyze(data, "processes", w, "-", "-", env))
            show(f"{w} worker{'s' if w == '2' else ''}, no cache", runs[w][-1])
    with tempfile.TemporaryDirectory() as cache:
        cold = _analyze(data, "auto", "2", cache, "-", env)
        show("2 workers, cold cache", cold)
        warm = _analyze(data, "auto", "auto", cache, "-", env)
        show("re-analysis, warm cache", warm)
    print(
        f"ratio 1 / 2 workers: {_med(runs['1'], 'work_s') / _med(runs['2'], 'work_s'):.2f}x "
        f"work time (median of {repeat}; target >= 1.7x); CPU use is CPU-seconds / (work "
        "time x workers): below 100 % the workers waited for a CPU held by other processes"
    )
    print(
        f"ratio first / re-analysis: {cold['work_s'] / warm['work_s']:.1f}x work time, "
        f"{cold['wall_s'] / warm['wall_s']:.1f}x process time (target >= 20x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=LARGEST)
    ap.add_argument("--data", type=Path, help="existing rank-*.json.gz folder for part C")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--target-mb", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool in parts A and B")
    ap.add_argument("--repeat-c", type=int, default=2, help="1- and 2-worker runs in part C")
    ap.add_argument("--small", action="store_true", help="8 small ranks, 1 repeat")
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--parts", default="ABC", help="which parts to run (default ABC)")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/hta-venv"))
    a = ap.parse_args()
    if a.small:
        a.ranks, a.target_mb, a.repeat, a.repeat_c = 8, 0.0, 1, 1
    if not a.trace.exists():
        sys.exit(f"{a.trace}: no such file (set GPUSCOPE_SHARED or pass --trace)")
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1", PYTHONPATH=str(REPO))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
        f"Python {platform.python_version()}; load average {' '.join(load)} at start; "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    a.trace.read_bytes()  # page cache warm for everyone
    if "A" in a.parts:
        hta_py = None
        if not a.skip_hta:
            sys.path.insert(0, str(HERE))
            from bench_vs_hta import _hta_version, ensure_hta_venv

            hta_py = ensure_hta_venv(a.venv)
            print(f"HTA: {_hta_version(hta_py)}")
        part_a(a.trace, a.repeat, hta_py, env)
    if "B" in a.parts:
        part_b(a.trace, a.repeat, env)
    if "C" in a.parts:
        if a.data is not None:
            part_c(a.data, a.repeat_c, env)
        else:
            sys.path.insert(0, str(HERE))
            from scale_generator import generate

            with tempfile.TemporaryDirectory() as tmp:
                t = time.perf_counter()
                generate(Path(tmp), a.ranks, a.target_mb)
                print(f"(generated in {time.perf_counter() - t:.0f} s)")
                part_c(Path(tmp), a.repeat_c, env)
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
