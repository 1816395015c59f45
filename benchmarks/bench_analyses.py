"""Cost of each analysis per million events, on generated traces of 1M+ events.

Each trace is generated once (``benchmarks/scale_generator.py``, into ``--work``, default
``/tmp/gpuscope-bench-analyses``; never into the repository) from a shared trace with its steps
replicated, loaded once, and then every registered summary section
(:data:`reports.summary.registry.RANK_SECTIONS`, then :data:`RUN_SECTIONS` over the ranks) is
run on it in this process, in registry order, timed with ``time.perf_counter``.  The memoised
tables several sections share are rows of their own before the sections, which are then timed
with them built: the collectives table (:func:`analyzers.collectives.collectives_table`), the
window's GPU events (:func:`analyzers.window.gpu_events`) and the kernels' ops and categories
(:func:`analyzers.serving.ops.categorized_kernel_ops`).  The serving section
and the critical path are registered sections (``serving`` per rank, ``critical_path`` across
ranks), timed in the loop like the others, one process, one CPU (``gpuscope analyze`` shares a
rank's sections between two CPUs: :mod:`reports.summary.forked`).

*Events* are the rows of the loaded trace model: GPU rows + host rows + annotations + counter
samples (a Kineto JSON holds more events: its ``ph: M`` metadata and flow events are not rows).
*s/M* = seconds per million such rows.  Median of ``--repeat`` runs of each section (memo
cleared between runs only for the shared tables' own rows).

Usage::

    python benchmarks/bench_analyses.py [--repeat 1] [--only nccl,negq] [--work DIR]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
HTA = SHARED / "data" / "kineto" / "hta"

TRACES = {
    # name: (source, copies of its steps, ranks)
    "nccl": (HTA / "nccl_parser_config" / "nccl_data.json.gz", 39, 1),
    "negq": (HTA / "negative_queue_length_values_check" / "rank0.json.gz", 16, 1),
    "mtia": (HTA / "mtia_trace_single_rank" / "mtia_rank_0.json.gz", 8, 1),
    "nccl-2r": (HTA / "nccl_parser_config" / "nccl_data.json.gz", 20, 2),
}
"""The generated traces: ``nccl`` is the 300 MB trace of docs/performance.md (39 copies of
the 3 steps of nccl_data), ``negq`` a 108k-event trace ×16, ``mtia`` the largest shared trace
×8, ``nccl-2r`` two ranks for the cross-rank sections."""


def _timed(fn: Callable[[], Any], repeat: int, reset: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if reset is not None:
            reset()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _events(traces: list[Any]) -> int:
    return sum(len(t.gpu) + len(t.host) + len(t.annotations) + len(t.counters) for t in traces)


def bench(name: str, work: Path, repeat: int) -> list[tuple[str, float, int]]:
    """(analysis, seconds, events) rows for the generated trace *name*."""
    from scale_generator import generate

    from analyzers import memo, window
    from analyzers.collectives import collectives_table
    from analyzers.inputs import AnalysisInputs
    from analyzers.options import AnalysisOptions
    from analyzers.serving import ops
    from analyzers.window import gpu_events
    from collectors.load import load_traces
    from collectors.peaks import load_peaks
    from reports.summary.registry import RANK_SECTIONS, RUN_SECTIONS

    source, copies, ranks = TRACES[name]
    out = work / name
    if not (out / f"rank-{ranks - 1}.json.gz").exists():
        generate(out, ranks, 0.0, source, copies=copies, log=lambda m: print(f"[gen] {m}"))
    t0 = time.perf_counter()
    traces = load_traces([str(out)])
    load_s = time.perf_counter() - t0
    n = _events(traces)
    opts, inputs = AnalysisOptions(), AnalysisInputs(gpu_peaks=load_peaks(None))
    rows = [("load (read + model)", load_s, n)]

    def reset() -> None:
        for t in traces:
            memo._slots.pop(id(t), None)

    rows.append(
        (
            "collectives table",
            _timed(lambda: [collectives_table(t) for t in traces], repeat, reset),
            n,
        )
    )
    for t in traces:
        collectives_table(t)
    rows.append(
        (
            "window GPU events",
            _timed(lambda: [gpu_events(t, opts) for t in traces], repeat, window._CACHE.clear),
            n,
        )
    )
    for t in traces:
        gpu_events(t, opts)

    from analyzers.op_models import attribution, calls

    def reset_kernel_ops() -> None:  # and the call-stack memos they are built from
        kept = (calls.host_threads, calls.call_parents, attribution.modelled_tops)
        for t in traces:
            for m in (ops._plain_kernel_ops, ops._plain_categorized, *kept):
                memo._slots.get(id(t), {}).pop(m, None)

    rows.append(
        (
            "kernel ops and categories",
            _timed(
                lambda: [ops.categorized_kernel_ops(t) for t in traces], repeat, reset_kernel_ops
            ),
            n,
        )
    )
    for t in traces:
        ops.categorized_kernel_ops(t)
    for key, fn in RANK_SECTIONS:
        rows.append((key, _timed(lambda fn=fn: [fn(t, opts, inputs) for t in traces], repeat), n))
    for key, run_fn in RUN_SECTIONS:
        rows.append((f"{key} (run)", _timed(lambda f=run_fn: f(traces, opts, inputs), repeat), n))

    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated trace names: " + ",".join(TRACES))
    ap.add_argument("--work", type=Path, default=Path("/tmp/gpuscope-bench-analyses"))
    a = ap.parse_args(argv)
    names = [x for x in a.only.split(",") if x] or list(TRACES)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f}; "
        f"median of {a.repeat}"
    )
    for name in names:
        rows = bench(name, a.work, a.repeat)
        n = rows[0][2]
        src, copies, ranks = TRACES[name]
        print(f"\n{name}: {src.name} x{copies} copies, {ranks} rank(s), {n:,} events")
        print(f"{'analysis':32} {'s':>8} {'s/M events':>11}")
        total = 0.0
        for label, s, _ in rows:
            if not label.startswith("load"):
                total += s
            print(f"{label:32} {s:8.3f} {s / (n / 1e6):11.3f}")
        print(f"{'all summary sections':32} {total:8.3f} {total / (n / 1e6):11.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
