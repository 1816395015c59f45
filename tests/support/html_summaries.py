"""Summaries the HTML report tests render: the synthetic two-rank sample with NVML counters
(``sample_summary``) and a two-rank trace whose kernel, range, host and file names carry HTML and
a closing script tag (``hostile_summary``); both module-scoped fixtures, registered for every
test module by ``tests/conftest.py``'s ``pytest_plugins``."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from collectors.load import load_traces
from collectors.model import Trace, TraceMeta, make_trace
from collectors.nvml import CSV_HEADER, read_counters
from reports.summary import build_summary
from tests.support.builders import h100
from tests.support.env import SAMPLES

ALL_FIGURES = [
    "fig-steps",
    "fig-kernel-types",
    "fig-comm",
    "fig-occupancy",
    "fig-roofline",
    "fig-counters",
    "fig-heatmap",
]

XSS_IMG = '<img src=x onerror="window.__gpuscope_xss=1">'
XSS_SCRIPT = "</script><script>window.__gpuscope_xss=2</script>"
EVIL_KERNELS = (f"void evil_kernel{XSS_IMG}(float*)", f"gemm{XSS_SCRIPT}<T&U>")
EVIL_RANGES = (f"nvtx {XSS_IMG}", f"range {XSS_SCRIPT}")


def nvml_counters(tmp: Path, t0: int = 1_700_000_000_000_000_000) -> dict[str, Any]:
    """One node, one GPU: power, clocks, a throttle band, three step marks, energy."""
    rows = []
    for i in range(40):
        t = t0 + i * 100_000_000
        rows += [
            (t, 0, "power_instant_mw", 250_000.0 + 1000 * (i % 7)),
            (t, 0, "sm_clock_mhz", 1980.0 - 10 * (i % 5)),
            (t, 0, "clock_event_reasons", float(0x40 if 10 <= i < 14 else 0)),
            (t, 0, "energy_mj", 1000.0 + 25 * i),
        ]
    rows += [(t0 + k * 1_000_000_000, -1, "step_begin", float(k)) for k in range(3)]
    rows.sort()
    body = "".join(f"{t - t0},{t},{g},{f},{v}\n" for t, g, f, v in rows)
    path = tmp / "node0.csv.gz"
    path.write_bytes(gzip.compress((CSV_HEADER + body).encode()))
    return {"node0": read_counters(path)}


def hostile_trace(rank: int) -> Trace:
    """Two steps of kernels and an NCCL all-reduce whose names (and NVTX ranges, host and
    file names) carry HTML and a closing script tag."""
    names, starts, ends, streams = [], [], [], []
    for s in range(2):
        base = 1_000_000 * (s + 1)
        for i, name in enumerate(EVIL_KERNELS):
            names.append(name)
            starts.append(base + 20_000 + 100_000 * i)
            ends.append(base + 90_000 + 100_000 * i + 5_000 * rank)
            streams.append(7)
        names.append("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
        starts.append(base + 150_000)
        ends.append(base + 400_000 + 20_000 * rank)
        streams.append(20)
    n = len(names)
    gpu = {
        "name": names,
        "kind": ["kernel"] * n,
        "start_ns": starts,
        "end_ns": ends,
        "device": [rank] * n,
        "stream": streams,
        "correlation": list(range(n)),
        "grid_x": [132] * n,
        "grid_y": [1] * n,
        "grid_z": [1] * n,
        "block_x": [256] * n,
        "block_y": [1] * n,
        "block_z": [1] * n,
        "registers_per_thread": [128] * n,
        "shared_mem_bytes": [0] * n,
    }
    ann = {
        "name": ["ProfilerStep#1", "ProfilerStep#2", *EVIL_RANGES],
        "kind": ["step", "step", "nvtx", "user"],
        "start_ns": [1_000_000, 2_000_000, 1_010_000, 2_010_000],
        "end_ns": [1_900_000, 2_900_000, 1_500_000, 2_300_000],
        "step": [1, 2, -1, -1],
    }
    meta = TraceMeta(
        rank=rank,
        source_format="kineto",
        world_size=2,
        hostname=f"host{XSS_IMG}",
        source_path=f"/runs/{XSS_SCRIPT}/rank-{rank}.json",
        devices=[h100(rank)],
    )
    return make_trace(meta, gpu=gpu, annotations=ann)


@pytest.fixture(scope="module")
def sample_summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    traces = load_traces([SAMPLES / "synthetic_2rank"])
    return build_summary(traces, extras={"nvml": nvml_counters(tmp_path_factory.mktemp("c"))})


@pytest.fixture(scope="module")
def hostile_summary() -> dict[str, Any]:
    return build_summary([hostile_trace(0), hostile_trace(1)])
