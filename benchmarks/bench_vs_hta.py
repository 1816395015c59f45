"""gpuscope vs HTA as a user runs them: whole processes first, then in-process figures.

**Table 1, whole process** (what a user waits for).  Per trace, each side runs in a fresh
process, the two interleaved, ``--repeat`` times (median reported):

- gpuscope: the command ``gpuscope analyze TRACE --json OUT --no-cache`` (the console
  script's entry point, ``cli.launch:run``; every registered summary section, the tables
  printed to /dev/null);
- HTA (``traceinsight``, import name ``hta``) with ``HTA_DISABLE_NS_ROUNDING=1`` (exact times,
  the numbers gpuscope reproduces): a script that imports HTA and runs ``TraceAnalysis`` load,
  ``get_comm_comp_overlap`` and ``get_temporal_breakdown``.

*process s* is measured by this script from the child's start to its exit, in runs where
nothing else is measured; *peak MiB* is the largest sum, over the child and all its descendants
(gpuscope's read and section helpers, HTA's parser pool), of their proportional set size
(``Pss`` of ``/proc/PID/smaps_rollup``, so pages shared after a fork count once), sampled every
50 ms in ``--memory-runs`` more runs of each tool (default 1; their median, each printed under
the table when more than one: gpuscope's section helper and this process peak at moments that
depend on timing, so its peak varies by about 10 % from run to run).  The sampling is kept out
of the timed runs: walking every process's page tables every 50 ms takes CPU from the tool
measured (same run, gpuscope on the 300 MB trace: 2.27 s sampled against 2.06 s not, median of
5; 2 × 47 MB 1.27 against 1.21 s).
With ``--huge`` the one run of each tool is both timed and sampled.

Traces: the largest shared trace (``hta/mtia_trace_single_rank``), one generated rank of about
300 MB of JSON (``scale_generator.py --ranks 1 --target-mb 300``) and two generated ranks of
about 47 MB each (``--ranks 2 --target-mb 50``), from ``nccl_parser_config``; generated into
``--work`` (default ``/tmp/gpuscope-bench-hta``) on first use, never into the repository.

**Table 2, in process**: the same traces, modules imported before the clock: gpuscope's
``load_traces`` + the foundation sections (device, window, kernel summary, temporal, overlap,
steps) + the JSON written, against HTA's load + temporal breakdown + overlap + kernel
breakdown (the comparison docs/performance.md has always printed).

``--huge`` adds the 2 GB trace (``--ranks 1 --target-mb 2000``): one run of each, HTA under an
address-space limit (``--hta-limit-gb``, ``RLIMIT_AS`` set in the child) so that the machine
survives it; a run that hits the limit is reported as not finished.

HTA lives in its own virtual environment outside the repository (default ``/tmp/hta-venv``);
the script creates it when missing with ``python -m venv`` + ``pip install traceinsight``
(falling back to ``HolisticTraceAnalysis``), and says so.

Usage::

    python benchmarks/bench_vs_hta.py [--repeat 3] [--memory-runs 1] [--only mtia,300mb,2x47mb]
        [--huge] [--no-inprocess] [--venv DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
HTA_DATA = SHARED / "data" / "kineto" / "hta"
MTIA = HTA_DATA / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"
NCCL = HTA_DATA / "nccl_parser_config" / "nccl_data.json.gz"

GPUSCOPE = [sys.executable, "-c", "from cli.launch import run; run()"]
"""The ``gpuscope`` console script's entry point (``cli.launch:run``), run by this interpreter
(whose environment has gpuscope installed): the command a user runs."""

GENERATED = {"300mb": (1, 300.0), "2x47mb": (2, 50.0), "2gb": (1, 2000.0)}
"""name → (ranks, --target-mb) of the traces generated from nccl_parser_config."""

# ---- children -----------------------------------------------------------------------------

HTA_WHOLE = """
import contextlib, io, json, logging, os, sys, warnings
warnings.filterwarnings("ignore")
path = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from hta.trace_analysis import TraceAnalysis
    logging.disable(logging.CRITICAL)
    if os.path.isdir(path):
        ta = TraceAnalysis(trace_dir=path)
    else:
        ta = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))
    ov = ta.get_comm_comp_overlap(visualize=False)
    tb = ta.get_temporal_breakdown(visualize=False)
row = tb.iloc[0]
pct = float(ov.iloc[0]["comp_comm_overlap_pctg"])
print(json.dumps({"idle_pct": float(row["idle_time_pctg"]),
                  "compute_pct": float(row["compute_time_pctg"]),
                  "overlap_pct": None if pct != pct else pct}))
"""

_RUSAGE = """
import resource
def _peak_kib():
    s = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(s, c)
"""

GPUSCOPE_INPROCESS = (
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

HTA_INPROCESS = (
    "import time; T0 = time.perf_counter()\n"
    + _RUSAGE
    + """
import contextlib, io, json, logging, os, sys, warnings
warnings.filterwarnings("ignore")
path = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from hta.trace_analysis import TraceAnalysis
    logging.disable(logging.CRITICAL)
    t1 = time.perf_counter()
    if os.path.isdir(path):
        ta = TraceAnalysis(trace_dir=path)
    else:
        ta = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))
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

# ---- measuring a process tree ------------------------------------------------------------


def _children_of() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        out.setdefault(ppid, []).append(int(d))
    return out


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kib(root: int) -> int:
    """Σ Pss of *root* and its descendants now."""
    kids = _children_of()
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        total += _pss_kib(pid)
        todo.extend(kids.get(pid, []))
    return total


def run_measured(
    cmd: list[str],
    env: dict[str, str],
    limit_bytes: int | None = None,
    timeout: float | None = None,
    sample: bool = True,
) -> dict[str, Any]:
    """Run *cmd*; its wall time, peak tree Pss (0 unless *sample*), exit code and stdout."""

    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    peak = [0]
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
        preexec_fn=limit,  # only sets a resource limit
    )
    done = threading.Event()

    def sampler() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], tree_pss_kib(p.pid))

    th = threading.Thread(target=sampler, daemon=True)
    if sample:
        th.start()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    wall = time.perf_counter() - t0
    done.set()
    if sample:
        th.join()
    return {
        "wall_s": wall,
        "peak_kib": peak[0],
        "rc": p.returncode,
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
    }


# ---- setup ---------------------------------------------------------------------------------


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


def trace_path(name: str, work: Path) -> Path:
    """The trace (file or directory of ranks) called *name*, generated when needed."""
    if name == "mtia":
        return MTIA
    ranks, mb = GENERATED[name]
    out = work / name
    if not (out / f"rank-{ranks - 1}.json.gz").exists():
        sys.path.insert(0, str(REPO / "benchmarks"))
        from scale_generator import generate

        print(f"[setup] generating {name} into {out}")
        generate(out, ranks, mb, NCCL, log=lambda m: print(f"[setup] {m}"))
    return out if ranks > 1 else out / "rank-0.json.gz"


def _mb(p: Path) -> float:
    files = sorted(p.glob("*.json.gz")) if p.is_dir() else [p]
    return sum(f.stat().st_size for f in files) / 1e6


# ---- the two tables ------------------------------------------------------------------------


def warm_up(hta_py: Path, env: dict[str, str]) -> None:
    """One untimed run of each tool on a small trace: their modules' bytecode is then cached,
    as for an installed package, and the file cache holds the interpreters."""
    small = REPO / "sample_traces" / "torch_cpu" / "rank-0.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "s.json")
        cmd = [*GPUSCOPE, "analyze", str(small), "--json", out, "--no-cache"]
        subprocess.run(cmd, capture_output=True, env=env, cwd=REPO)
        subprocess.run(
            [str(hta_py), "-c", "import hta.trace_analysis"], capture_output=True, env=env
        )


def whole_process(
    path: Path,
    hta_py: Path,
    repeat: int,
    env: dict[str, str],
    limit: int | None = None,
    memory_run: bool = True,
    memory_runs: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """*repeat* timed runs of each tool, interleaved, then (*memory_run*) *memory_runs*
    sampled runs of each, interleaved, for the peak memory (each timed run is given their
    median; every peak is kept under ``peaks``); without *memory_run* the timed runs are
    sampled."""
    runs: dict[str, list[dict[str, Any]]] = {"gpuscope": [], "hta": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        gpuscope = [*GPUSCOPE, "analyze", str(path), "--json", str(out), "--no-cache", "--force"]
        hta = [str(hta_py), "-c", HTA_WHOLE, str(path)]
        for _ in range(repeat):  # interleaved: machine noise hits both alike
            g = run_measured(gpuscope, env, sample=not memory_run)
            if g["rc"] != 0:
                sys.exit(f"gpuscope analyze failed ({g['rc']}):\n{g['stderr'][-3000:]}")
            r = json.loads(out.read_text())["ranks"][0]
            g["check"] = (r["temporal"]["idle_pct"], r["temporal"]["compute_pct"])
            runs["gpuscope"].append(g)
            h = run_measured(hta, env, limit, sample=not memory_run)
            if h["rc"] == 0:
                c = json.loads(h["stdout"].strip().splitlines()[-1])
                h["check"] = (c["idle_pct"], c["compute_pct"])
            runs["hta"].append(h)
        if memory_run:
            peaks: dict[str, list[int]] = {"gpuscope": [], "hta": []}
            for _ in range(memory_runs):
                peaks["gpuscope"].append(run_measured(gpuscope, env)["peak_kib"])
                peaks["hta"].append(run_measured(hta, env, limit)["peak_kib"])
            for tool, kib in peaks.items():
                for r in runs[tool]:
                    r["peak_kib"] = statistics.median(kib)
                    r["peaks_kib"] = kib
    return runs


def _median(rs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rs)


def print_whole(rows: list[tuple[str, Path, dict[str, list[dict[str, Any]]]]]) -> None:
    print("\nTable 1: whole process, `gpuscope analyze DIR --json F --no-cache` vs the HTA script")
    print(
        f"{'trace':10} {'MB gz':>6} {'gpuscope s':>10} {'HTA s':>8} {'ratio':>6} "
        f"{'gpuscope MiB':>12} {'HTA MiB':>8} {'mem g/H':>7}  same numbers? (idle %, compute %)"
    )
    for name, path, runs in rows:
        g, h = runs["gpuscope"], runs["hta"]
        ok = [r for r in h if r["rc"] == 0]
        gs, gm = _median(g, "wall_s"), _median(g, "peak_kib") / 1024
        if ok:
            hs, hm = _median(ok, "wall_s"), _median(ok, "peak_kib") / 1024
            ratio, mem = f"{hs / gs:5.1f}x", f"{gm / hm:6.2f}x"
            hs_txt, hm_txt = f"{hs:8.2f}", f"{hm:8.0f}"
            same = f"gpuscope {g[0]['check']}, HTA {ok[0]['check']}"
        else:
            hs_txt, hm_txt, ratio, mem = "   n/a", "   n/a", "   -", "     -"
            why = h[0]["stderr"].strip().splitlines()[-1:] or [f"exit {h[0]['rc']}"]
            same = f"HTA did not finish (exit {h[0]['rc']}: {why[0][:80]})"
        print(
            f"{name:10} {_mb(path):6.1f} {gs:10.2f} {hs_txt} {ratio:>6} {gm:12.0f} {hm_txt} "
            f"{mem:>7}  {same}"
        )
    for name, _, runs in rows:
        spread = {t: runs[t][0].get("peaks_kib", []) for t in ("gpuscope", "hta")}
        if len(spread["gpuscope"]) > 1:
            print(
                f"  {name}: peak MiB of each sampled run, gpuscope "
                + ", ".join(f"{k / 1024:.0f}" for k in spread["gpuscope"])
                + "; HTA "
                + ", ".join(f"{k / 1024:.0f}" for k in spread["hta"])
            )


def in_process(path: Path, hta_py: Path, repeat: int, env: dict[str, str]) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"gpuscope": [], "hta": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "summary.json")
        for _ in range(repeat):
            for tool, cmd in (
                ("gpuscope", [sys.executable, "-c", GPUSCOPE_INPROCESS, str(path), out]),
                ("hta", [str(hta_py), "-c", HTA_INPROCESS, str(path)]),
            ):
                r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
                if r.returncode != 0:
                    sys.exit(f"{tool} in-process child failed:\n{r.stderr[-3000:]}")
                runs[tool].append(json.loads(r.stdout.strip().splitlines()[-1]))
    return runs


def print_in_process(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print("\nTable 2: in process (modules imported before the clock): load + analyses")
    print(
        f"{'trace':10} {'gpuscope s':>10} {'HTA s':>8} {'ratio':>6} {'gpuscope MiB':>12} "
        f"{'HTA MiB':>8}  process s gpuscope / HTA"
    )
    for name, runs in rows:
        g, h = runs["gpuscope"], runs["hta"]
        gw, hw = _median(g, "work_s"), _median(h, "work_s")
        print(
            f"{name:10} {gw:10.2f} {hw:8.2f} {hw / gw:5.1f}x {_median(g, 'peak_kib') / 1024:12.0f} "
            f"{_median(h, 'peak_kib') / 1024:8.0f}  {_median(g, 'wall_s'):.2f} / "
            f"{_median(h, 'wall_s'):.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool (median reported)")
    ap.add_argument("--only", default="mtia,300mb,2x47mb", help="traces: mtia,300mb,2x47mb")
    ap.add_argument("--huge", action="store_true", help="also the 2 GB trace (one run each)")
    ap.add_argument("--hta-limit-gb", type=float, default=20.0, help="HTA's RLIMIT_AS on --huge")
    ap.add_argument(
        "--memory-runs",
        type=int,
        default=1,
        help="sampled runs of each tool for the peak memory (median reported, each printed)",
    )
    ap.add_argument("--no-inprocess", action="store_true", help="skip table 2")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/hta-venv"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/gpuscope-bench-hta"))
    a = ap.parse_args(argv)
    if a.repeat < 1 or a.memory_runs < 1:
        ap.error("--repeat and --memory-runs must be >= 1")
    for p in (MTIA, NCCL):
        if not p.exists():
            sys.exit(f"{p}: no such file (set GPUSCOPE_SHARED)")
    hta_py = ensure_hta_venv(a.venv)
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1", PYTHONPATH=str(REPO))
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        print("[setup] PYTHONDONTWRITEBYTECODE unset for the children (an installed package has")
        print("[setup] its .pyc files; otherwise both tools recompile every module in every run)")
    names = [n for n in a.only.split(",") if n]
    paths = {n: trace_path(n, a.work) for n in names}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; HTA: {_hta_version(hta_py)}; runs per tool: {a.repeat} "
        f"(median); load average at start {os.getloadavg()[0]:.1f}"
    )
    warm_up(hta_py, env)
    whole = []
    for n in names:
        runs = whole_process(paths[n], hta_py, a.repeat, env, memory_runs=a.memory_runs)
        whole.append((n, paths[n], runs))
    if a.huge:
        huge = trace_path("2gb", a.work)
        limit = int(a.hta_limit_gb * 2**30)
        whole.append(("2gb", huge, whole_process(huge, hta_py, 1, env, limit, memory_run=False)))
    print_whole(whole)
    if a.huge:
        print(f"(2gb: one run each; HTA under RLIMIT_AS = {a.hta_limit_gb:g} GiB)")
    if not a.no_inprocess:
        inproc = [(n, in_process(paths[n], hta_py, a.repeat, env)) for n in names]
        print_in_process(inproc)
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
