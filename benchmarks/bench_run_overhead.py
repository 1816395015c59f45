"""Step time of examples/train_tiny.py with and without ``gpuscope run`` (ratio).

    python benchmarks/bench_run_overhead.py [--reps 5] [--steps 80] [--warmup 20]

Runs the example plainly and under ``gpuscope run --steps 2:4`` (NVML at the default 10 Hz,
regions on, the torch profiler's window over before the measured steps), alternating the two,
``reps`` times each.  The example prints the median wall time and the median process CPU time
(all threads, so the NVML sampler's share is included) of its steps after ``--warmup``; the
benchmark prints each run's figures, the median per mode and the ratios captured / plain.  CPU
time is the steadier figure on a shared machine.
The example runs single-threaded by default (``--threads``): on a small shared machine,
torch's intra-op thread pool waiting for a descheduled thread makes step times swing by 100×.
Target (issue 6): within 2 % (ratio ≤ 1.02).  Whether NVML was available is printed too: on a
machine without a GPU the sampler is unavailable and costs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "train_tiny.py"
LINE = re.compile(r"step_time_ms median=([0-9.]+) steps=(\d+) cpu_ms median=([0-9.]+)")


def command(captured: bool, args: argparse.Namespace, workdir: Path, i: int) -> list[str]:
    prog = [sys.executable, str(EXAMPLE), "--steps", str(args.steps), "--warmup",
            str(args.warmup), "--hidden", str(args.hidden), "--batch", str(args.batch)]  # fmt: skip
    if not captured:
        return prog
    run = workdir / f"run{i}"
    return [sys.executable, "-m", "cli.main", "run", "-o", str(run), "--steps", "2:4",
            "--no-report", "--", *prog]  # fmt: skip


def start(cmd: list[str], threads: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSCOPE_")}
    if threads > 0:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env
    )


def finish(proc: subprocess.Popen[str]) -> tuple[float, float]:
    """(median wall ms, median CPU ms) per step, as the example printed them."""
    out, err = proc.communicate(timeout=1800)
    m = LINE.search(out)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"run failed ({proc.returncode}):\n{out}\n{err}")
    return float(m.group(1)), float(m.group(3))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OMP/MKL threads of the example (default 1: multi-threaded ops on a loaded small "
        "machine make step times bimodal; 0 = torch's default)",
    )
    args = p.parse_args(argv)
    plain: list[tuple[float, float]] = []
    captured: list[tuple[float, float]] = []
    info: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.reps):
            plain.append(finish(start(command(False, args, Path(tmp), i), args.threads)))
            captured.append(finish(start(command(True, args, Path(tmp), i), args.threads)))
            meta = json.loads((Path(tmp) / f"run{i}" / "meta.json").read_text())
            info = {"nvml": meta["nvml"]}
            (pw, pc), (cw, cc) = plain[-1], captured[-1]
            print(f"rep {i}: wall plain {pw:.3f} ms, gpuscope run {cw:.3f} ms; "
                  f"CPU plain {pc:.3f} ms, gpuscope run {cc:.3f} ms", flush=True)  # fmt: skip
    for what, k in (("wall", 0), ("CPU", 1)):
        mp = statistics.median(x[k] for x in plain)
        mc = statistics.median(x[k] for x in captured)
        print(f"median {what} time per step: plain {mp:.3f} ms, under gpuscope run {mc:.3f} ms, "
              f"ratio {mc / mp:.4f} (target <= 1.02)")  # fmt: skip
    for host, st in (info.get("nvml") or {}).items():
        state = "sampled" if st.get("available") else f"unavailable ({st.get('reason')})"
        cost = st.get("cpu_ns_per_poll")
        extra = f", sampler CPU {cost / 1e3:.1f} us/poll" if cost else ""
        print(f"NVML on {host}: {state}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
