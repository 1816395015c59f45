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


def paired(args: argparse.Namespace) -> int:
    """In-process ABBA comparison of capture on/off (see the module docstring)."""
    import time

    import torch

    sys.path.insert(0, str(REPO))
    import profiler
    from examples.train_tiny import build
    from profiler import regions
    from profiler import session as S

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build(args.hidden, 3)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def block(n: int) -> tuple[float, float]:
        c0, w0 = time.thread_time(), time.perf_counter()
        for _ in range(n):
            with profiler.region("data"):
                x = torch.randn(args.batch, args.hidden)
                y = torch.randn(args.batch, 1)
            with profiler.region("forward"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            with profiler.region("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with profiler.region("optimizer"):
                opt.step()
            profiler.step()
        return (time.thread_time() - c0) / n * 1e3, (time.perf_counter() - w0) / n * 1e3

    with tempfile.TemporaryDirectory() as tmp:
        sess = S.Session(tmp, steps="2:4", nvml_hz=10, backend="torch").start()
        block(args.warmup)  # past the window: what the steady state of a captured run pays

        def capture(on: bool) -> None:
            regions.set_recorder(sess._recorder if on else None)
            S._current = sess if on else None

        ratios_cpu, ratios_wall = [], []
        for _ in range(args.reps * 4):
            res = {}
            for on in (True, False, False, True):
                capture(on)
                c, w = block(args.block)
                res.setdefault(on, []).append((c, w))
            (c1, w1), (c2, w2) = res[True]
            (c3, w3), (c4, w4) = res[False]
            ratios_cpu.append((c1 + c2) / (c3 + c4))
            ratios_wall.append((w1 + w2) / (w3 + w4))
        capture(True)
        st = sess._sampler.status() if sess._sampler else sess._nvml_status
        sess.stop()
    print(f"paired blocks: {len(ratios_cpu)} ABBA groups of {args.block} steps")
    print(f"median on/off CPU time per step: {statistics.median(ratios_cpu):.4f} "
          f"(IQR {_q(ratios_cpu, 0.25):.4f}..{_q(ratios_cpu, 0.75):.4f})")  # fmt: skip
    print(f"median on/off wall time per step: {statistics.median(ratios_wall):.4f} "
          f"(IQR {_q(ratios_wall, 0.25):.4f}..{_q(ratios_wall, 0.75):.4f})")  # fmt: skip
    state = "sampled" if st and st.get("available") else f"unavailable ({(st or {}).get('reason')})"
    print(f"NVML: {state}")
    return 0


def _q(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * len(ys)))]


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
    p.add_argument("--paired", action="store_true", help="in-process ABBA on/off comparison")
    p.add_argument("--block", type=int, default=10, help="steps per block with --paired")
    args = p.parse_args(argv)
    if args.paired:
        return paired(args)
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
