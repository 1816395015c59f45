"""Kineto load time: ``read_kineto`` against plain ``gzip`` + ``json.loads`` of the same file.

    python benchmarks/bench_kineto_load.py [TRACE ...] [--repeat 3]

Without arguments it times the largest traces of ``../shared/data/kineto/hta`` and the bundled
synthetic sample.  Every figure is the best of ``--repeat`` runs in this process; the ratios
(reference time / gpuscope time, > 1 = gpuscope faster) are what to compare across machines.
"decode" is the reader's own gunzip + typed decode, chunk by chunk, without building tables
(:func:`collectors.kineto.stream.stream_chunks`).  Peak memory is measured separately with
``tracemalloc`` (Python allocations only, including numpy/pandas buffers), because tracing
slows the timed runs.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.kineto import read_kineto  # noqa: E402
from collectors.kineto.source import read_bytes  # noqa: E402
from collectors.kineto.stream import stream_chunks  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "kineto" / "hta"
DEFAULT = (
    SHARED / "mtia_trace_single_rank" / "mtia_rank_0.json.gz",
    SHARED / "negative_queue_length_values_check" / "rank0.json.gz",
    SHARED / "ns_resolution_trace" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    SHARED / "nccl_parser_config" / "nccl_data.json.gz",
    REPO / "sample_traces" / "synthetic_2rank" / "rank-0.json.gz",
)


def _json_loads(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def _decode_only(path: Path) -> int:
    return sum(len(chunk.events) for chunk in stream_chunks(path))


def _best(fn: Callable[[Path], Any], path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn(path)
        times.append(time.perf_counter() - t0)
        del result
    return min(times)


def _peak_mib(fn: Callable[[Path], Any], path: Path) -> float:
    gc.collect()
    tracemalloc.start()
    result = fn(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path, help="Kineto files (default: see module doc)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (best of)")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    a = ap.parse_args(argv)
    paths = [p for p in (a.traces or DEFAULT) if p.exists()]
    if not paths:
        print("no trace found (give paths, or put the shared data beside the checkout)")
        return 1
    head = (
        f"{'trace':<44} {'MB':>6} {'json s':>7} {'decode s':>8} {'gpuscope s':>10} "
        f"{'json/gpuscope':>13} {'decode share':>12}"
    )
    if not a.no_memory:
        head += f" {'json MiB':>9} {'gpuscope MiB':>12} {'mem ratio':>9}"
    print(head)
    for p in paths:
        size = len(read_bytes(p)) / 1e6
        t_json = _best(_json_loads, p, a.repeat)
        t_dec = _best(_decode_only, p, a.repeat)
        t_read = _best(read_kineto, p, a.repeat)
        line = (
            f"{p.name[:44]:<44} {size:6.1f} {t_json:7.3f} {t_dec:8.3f} {t_read:10.3f} "
            f"{t_json / t_read:13.2f} {t_dec / t_read:12.2f}"
        )
        if not a.no_memory:
            m_json = _peak_mib(_json_loads, p)
            m_read = _peak_mib(read_kineto, p)
            line += f" {m_json:9.1f} {m_read:12.1f} {m_read / m_json:9.2f}"
        print(line, flush=True)
    print("MB = uncompressed JSON; json = gzip + json.loads (dicts); decode = gunzip + msgspec")
    print("typed decode in chunks; gpuscope = read_kineto (decode + tables).  Ratios > 1:")
    print("gpuscope faster; mem ratio < 1: gpuscope smaller.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
