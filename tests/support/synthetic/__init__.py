"""Deterministic synthetic multi-rank Kineto traces, with their ground truth by construction.

Each rank's trace is what ``torch.profiler`` writes for a data-parallel training loop:
``ProfilerStep#N`` ``cpu_op`` rows; per step ``K`` compute kernels on stream 7 launched by
``cudaLaunchKernel``, one ``Memcpy HtoD`` on stream 7, and one NCCL all-reduce kernel
(``ncclDevKernel_AllReduce_Sum_f32_RING_LL``) on the communication stream 20, launched under
``record_param_comms`` / ``nccl:all_reduce`` and carrying PyTorch's collective metadata.
Timing differs per rank (each rank draws its own durations).

The layout of one step's GPU work is fixed, so every metric follows from the drawn durations
without any interval arithmetic (metrics.md §2, §5, §6; ``c_i = [s_i, e_i)`` are the compute
kernels, ``m`` the memcpy, ``n = [ns, ne)`` the NCCL kernel)::

    stream 7    c_0  c_1 .. m .. c_2 ... c_{K-2}  gap  c_{K-1}
    stream 20                               [ns ................ ne)

* compute kernels are disjoint; the memcpy lies inside the gap after ``c_1``;
* the NCCL kernel starts inside ``c_{K-2}`` and ends after ``c_{K-1}``, so
  ``overlap = (e_{K-2} - ns) + d_{K-1}`` and ``exposed = (s_{K-1} - e_{K-2}) + (ne - e_{K-1})``;
* busy time of the step = Σ d_i + d_m + exposed; all of it lies inside the step's
  ``ProfilerStep`` range, and one initialisation kernel runs before the first step.

Ground truth is given for HTA's default window (kernels launched before the last step starts;
metrics.md §2) and for ``--all-events``.  Writing: ``python -m tests.support.synthetic OUT_DIR
--ranks N --steps S --seed K [--int-us]``; files ``rank-<r>.json.gz`` and ``ground_truth.jsonl``
(format in ``sample_traces/README.md``).  Same arguments → byte-identical files.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from tests.support.synthetic.layout import (
    COMM_STREAM,
    COMPUTE_NAMES,
    COMPUTE_STREAM,
    GENERATOR_VERSION,
    MEMCPY_NAME,
    NCCL_NAME,
    RankLayout,
    StepLayout,
    layout_rank,
)
from tests.support.synthetic.render import render_kineto
from tests.support.synthetic.truth import ground_truth


def generate(
    ranks: int = 2, steps: int = 4, seed: int = 0, *, int_us: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-rank Kineto JSON objects and per-rank ground-truth records (README format)."""
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    layouts = [layout_rank(r, ranks, steps, seed, int_us=int_us) for r in range(ranks)]
    header = {
        "format": "gpuscope-synthetic-ground-truth",
        "generator_version": GENERATOR_VERSION,
        "arguments": {"ranks": ranks, "steps": steps, "seed": seed, "int_us": int_us},
        "timestamps": "integer µs" if int_us else "float µs with ns precision",
        "definitions": "reference/metrics.md §2 (window), §5 (temporal), §6 (overlap, "
        "exposed communication); steps on the GPU clock (docs/metrics.md §7)",
    }
    truth = [{**header, **ground_truth(lay)} for lay in layouts]
    return [render_kineto(lay, int_us=int_us) for lay in layouts], truth


GROUND_TRUTH_FILE = "ground_truth.jsonl"
"""One JSON object per line, one line per rank.  Not ``*.json``, so that ``gpuscope analyze
OUT_DIR`` reads only the traces."""


def read_ground_truth(folder: str | Path) -> list[dict[str, Any]]:
    """The per-rank ground-truth records written by :func:`write_samples`, by rank."""
    text = (Path(folder) / GROUND_TRUTH_FILE).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_samples(
    out_dir: str | Path, ranks: int = 2, steps: int = 4, seed: int = 0, *, int_us: bool = False
) -> list[Path]:
    """Write ``rank-<r>.json.gz`` files and :data:`GROUND_TRUTH_FILE` into *out_dir*."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces, truth = generate(ranks, steps, seed, int_us=int_us)
    written = []
    for r, trace in enumerate(traces):
        p = out / f"rank-{r}.json.gz"
        text = json.dumps(trace, separators=(",", ":")).encode()
        p.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        written.append(p)
    gt = out / GROUND_TRUTH_FILE
    lines = [json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in truth]
    gt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.append(gt)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.synthetic OUT_DIR --ranks N --steps S --seed K [--int-us]``."""
    ap = argparse.ArgumentParser(
        prog="python -m tests.support.synthetic",
        description="Write deterministic synthetic Kineto traces and their ground truth.",
    )
    ap.add_argument("out_dir", type=Path, help="folder to write rank-<r>.json.gz into")
    ap.add_argument("--ranks", type=int, default=2, help="number of ranks (default 2)")
    ap.add_argument("--steps", type=int, default=4, help="ProfilerSteps per rank (default 4)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument(
        "--int-us", action="store_true", help="integer-µs timestamps (default: ns-precision floats)"
    )
    a = ap.parse_args(argv)
    if a.ranks < 1 or a.steps < 1:
        ap.error("--ranks and --steps must be >= 1")
    for p in write_samples(a.out_dir, a.ranks, a.steps, a.seed, int_us=a.int_us):
        print(p)
    return 0


__all__ = [
    "COMM_STREAM",
    "COMPUTE_NAMES",
    "COMPUTE_STREAM",
    "GENERATOR_VERSION",
    "GROUND_TRUTH_FILE",
    "MEMCPY_NAME",
    "NCCL_NAME",
    "RankLayout",
    "StepLayout",
    "generate",
    "ground_truth",
    "layout_rank",
    "main",
    "read_ground_truth",
    "render_kineto",
    "write_samples",
]
