"""Step time of examples/train_tiny.py with and without ``gpuscope run`` (ratio).

    python benchmarks/bench_run_overhead.py [--reps 3] [--steps 60] [--warmup 20]

Runs the example plainly and under ``gpuscope run --steps 2:4`` (NVML at the default 10 Hz,
regions on, the torch profiler's window over before the measured steps), alternating the two,
``reps`` times each.  The example prints the median wall time of its steps after ``--warmup``;
the benchmark prints each run's figure, the median per mode and the ratio captured / plain.
``--concurrent`` runs each pair at the same time, so that both see the same machine load (for
shared machines whose load swings more than the effect being measured).
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
LINE = re.compile(r"step_time_ms median=([0-9.]+) steps=(\d+)")


def command(captured: bool, args: argparse.Namespace, workdir: Path, i: int) -> list[str]:
    prog = [sys.executable, str(EXAMPLE), "--steps", str(args.steps), "--warmup",
            str(args.warmup), "--hidden", str(args.hidden), "--batch", str(args.batch)]  # fmt: skip
    if not captured:
        return prog
    run = workdir / f"run{i}"
    return [sys.executable, "-m", "cli.main", "run", "-o", str(run), "--steps", "2:4",
            "--no-report", "--", *prog]  # fmt: skip


def start(cmd: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSCOPE_")}
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env
    )


def finish(proc: subprocess.Popen[str]) -> float:
    out, err = proc.communicate(timeout=1800)
    m = LINE.search(out)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"run failed ({proc.returncode}):\n{out}\n{err}")
    return float(m.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument(
        "--concurrent",
        action="store_true",
        help="run each plain/captured pair at the same time (both see the same machine load; "
        "for shared, noisy machines)",
    )
    args = p.parse_args(argv)
    plain: list[float] = []
    captured: list[float] = []
    info: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.reps):
            a = start(command(False, args, Path(tmp), i))
            if not args.concurrent:
                plain.append(finish(a))
            b = start(command(True, args, Path(tmp), i))
            if args.concurrent:
                plain.append(finish(a))
            captured.append(finish(b))
            meta = json.loads((Path(tmp) / f"run{i}" / "meta.json").read_text())
            info = {"nvml": meta["nvml"]}
            print(f"rep {i}: plain {plain[-1]:.3f} ms  gpuscope run {captured[-1]:.3f} ms  "
                  f"ratio {captured[-1] / plain[-1]:.4f}", flush=True)  # fmt: skip
    mp, mc = statistics.median(plain), statistics.median(captured)
    print(f"median step time: plain {mp:.3f} ms, under gpuscope run {mc:.3f} ms")
    ratios = [c / q for c, q in zip(captured, plain, strict=True)]
    print(f"ratio of medians captured/plain: {mc / mp:.4f}; median of per-rep ratios "
          f"{statistics.median(ratios):.4f} (target <= 1.02)")  # fmt: skip
    for host, st in (info.get("nvml") or {}).items():
        state = "sampled" if st.get("available") else f"unavailable ({st.get('reason')})"
        cost = st.get("cpu_ns_per_poll")
        extra = f", sampler CPU {cost / 1e3:.1f} us/poll" if cost else ""
        print(f"NVML on {host}: {state}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
