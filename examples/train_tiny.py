"""A tiny training loop for trying gpuscope: runs on CPU in seconds, on a GPU if there is one.

    gpuscope run -o runs/tiny -- python examples/train_tiny.py
    gpuscope run -o runs/tiny2 -- torchrun --nproc_per_node 2 examples/train_tiny.py
    python examples/train_tiny.py --profile-out runs/tiny3       # without gpuscope run

An MLP on random data, with ``profiler.region`` around data, forward, backward and optimizer
and ``profiler.step()`` after each step.  Under ``torchrun`` it trains with DDP (gloo on CPU,
NCCL on GPUs).  At the end rank 0 prints one line ``step_time_ms median=<ms> steps=<n>
cpu_ms median=<ms>``: the median wall time and the median process CPU time (all threads,
``time.process_time``) of the steps after ``--warmup`` (read by
benchmarks/bench_run_overhead.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import torch
import torch.distributed as dist

import profiler


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="steps left out of the median")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--device", default="auto", help="cpu | cuda | auto (default)")
    p.add_argument("--exit-code", type=int, default=0, help="exit with this status at the end")
    p.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep in each step")
    p.add_argument("--profile-out", default=None, help="capture with profiler.profile(out=...)")
    p.add_argument("--profile-steps", default="5:10", help="window for --profile-out")
    return p.parse_args(argv)


def build(hidden: int, layers: int) -> torch.nn.Module:
    mods: list[torch.nn.Module] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    mods.append(torch.nn.Linear(hidden, 1))
    return torch.nn.Sequential(*mods)


def train(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    if world > 1:
        dist.init_process_group("nccl" if use_cuda else "gloo")
    torch.manual_seed(0)
    model = build(args.hidden, args.layers).to(device)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    times, cpu = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        c0 = time.process_time()
        with profiler.region("data"):
            x = torch.randn(args.batch, args.hidden, device=device)
            y = torch.randn(args.batch, 1, device=device)
        with profiler.region("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with profiler.region("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with profiler.region("optimizer"):
            opt.step()
        if args.sleep:
            time.sleep(args.sleep)
        if use_cuda:
            torch.cuda.synchronize()
        profiler.step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return times, cpu


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.profile_out:
        with profiler.profile(out=args.profile_out, steps=args.profile_steps):
            times, cpu = train(args)
    else:
        times, cpu = train(args)
    if int(os.environ.get("RANK", "0")) == 0:
        kept = times[args.warmup :] or times
        kept_cpu = cpu[args.warmup :] or cpu
        print(
            f"step_time_ms median={statistics.median(kept) * 1e3:.4f} steps={len(times)} "
            f"cpu_ms median={statistics.median(kept_cpu) * 1e3:.4f}"
        )
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
