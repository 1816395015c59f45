"""Capture a small CPU training run with ``torch.profiler`` into a Kineto trace.

    python sample_traces/capture_torch_cpu.py sample_traces/torch_cpu/rank-0.json.gz

A 3-layer MLP trained for 6 iterations under ``schedule(wait=1, warmup=1, active=4)``, with
shapes and memory recorded, so the trace holds ``ProfilerStep#2``..``#5`` (``cpu_op`` rows),
CPU ops with ``Input Dims``, and ``[memory]`` instant events.  Only CPU activity is recorded:
the machines this runs on have no GPU.  Timings differ from run to run (it is a real capture).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
from pathlib import Path


def capture(out: Path, *, steps: int = 6, seed: int = 0) -> Path:
    """Run the model under the profiler and write its trace to *out* (``.json`` or ``.gz``)."""
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"

        def on_ready(prof: profile) -> None:
            prof.export_chrome_trace(str(raw))

        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=steps - 2, repeat=1),
            on_trace_ready=on_ready,
            record_shapes=True,
            profile_memory=True,
        ) as prof:
            for _ in range(steps):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                prof.step()
        if out.name.endswith(".gz"):
            with raw.open("rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.copyfile(raw, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="trace file to write (.json or .json.gz)")
    ap.add_argument("--steps", type=int, default=6, help="iterations (default 6)")
    a = ap.parse_args(argv)
    print(capture(a.out, steps=a.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
