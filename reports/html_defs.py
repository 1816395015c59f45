"""Definitions of every figure the HTML report shows (the report's last section).

Each entry: id → (name, one-paragraph definition, where it is defined in full).  The page lists
the entries of the figures it actually shows.  Keep in step with docs/report.md.
"""

from __future__ import annotations

DEFINITIONS: dict[str, tuple[str, str, str]] = {
    "step_time": (
        "Step time (median, p90)",
        "A step's time is the largest duration_ns of that ProfilerStep over the ranks (a "
        "synchronous step ends with its slowest rank). Median and p90 are observed quantiles "
        "over the steps of the analysis window: the smallest step time with at least 50 % / "
        "90 % of the steps at or below it.",
        "docs/report.md §3; docs/metrics.md §7",
    ),
    "gpu_busy": (
        "GPU busy %",
        "100 × Σ (duration − idle) / Σ duration over every (rank, step) of the window: the share "
        "of step time during which at least one GPU event runs. Without steps: over each rank's "
        "GPU span (temporal.span_ns − idle_ns).",
        "docs/report.md §3; docs/metrics.md §5, §7",
    ),
    "overlap": (
        "Compute–communication overlap, exposed communication",
        "Overlap % = 100 × Σ overlap_ns / Σ comm_ns over the ranks. Exposed communication per "
        "step: median over steps of the largest per-rank exposed_comm_ns of the step; its share "
        "= 100 × Σ exposed_comm_ns / Σ duration_ns over every (rank, step).",
        "docs/report.md §3; docs/metrics.md §6, §7",
    ),
    "occupancy": (
        "Time-weighted occupancy",
        "Per rank, Σ duration × theoretical occupancy / Σ duration over the kernels with a known "
        "launch configuration (and the same weighting of CUPTI's estimated achieved occupancy); "
        "the card shows the mean over the ranks.",
        "docs/report.md §3; docs/efficiency.md",
    ),
    "throughput": (
        "Achieved TFLOP/s and % of roofline",
        "Over the op-roofline points listed per rank, except points above their roof (model "
        "errors): Σ FLOP / Σ kernel time (per GPU), and "
        "100 × Σ FLOP / Σ (attainable FLOP/s × time) for the points whose attainable rate is "
        "known (attainable = min(peak, intensity × DRAM bandwidth)).",
        "docs/report.md §3; docs/efficiency.md",
    ),
    "energy": (
        "Energy per step",
        "NVML energy counter delta between consecutive step_begin marks, summed over a node's "
        "GPUs; median (observed) over the steps, summed over the nodes.",
        "docs/report.md §2–3; docs/capture.md §6",
    ),
    "breakdown": (
        "Step breakdown",
        "Per (step, rank): compute = time some computation kernel runs; exposed comm = "
        "communication with no computation beside it; memory/other = duration − compute − "
        "exposed comm − idle (only MEMORY or OTHER events run); idle = no GPU event runs. The "
        "four parts add up to the step's duration.",
        "docs/metrics.md §7; docs/report.md §5",
    ),
    "ranges": (
        "Annotated ranges",
        "NVTX, user (record_function / profiler.region) and GPU-side user ranges of the whole "
        "trace, pooled over ranks by (kind, name): count, total = Σ (end − start), max = the "
        "longest; the largest totals first.",
        "docs/report.md §2, §5",
    ),
    "kernels": (
        "Top kernels",
        "Kernel summary rows pooled over the ranks by kernel name: count and total summed, avg "
        "= total / count, min and max over ranks, time % = 100 × total / Σ total of every "
        "kernel, ranks = ranks that ran it.",
        "docs/metrics.md §4; docs/report.md §6",
    ),
    "kernel_types": (
        "Kernel types",
        "Σ total kernel time by type (COMPUTATION, COMMUNICATION, MEMORY, OTHER) over every "
        "kernel name and rank.",
        "docs/metrics.md §3",
    ),
    "collectives": (
        "Collectives",
        "collectives.summary rows pooled over the ranks by (collective, size bucket): count, "
        "bytes and time summed; median bus bandwidth and % of link peak = median (observed) "
        "over the ranks of each rank's median; max = largest over the ranks.",
        "docs/communication.md §5; docs/report.md §6",
    ),
    "comm_ranks": (
        "Communication per rank",
        "comm = time some communication kernel runs; exposed = communication with no "
        "computation beside it; wait = time the rank spent inside collectives waiting for the "
        "last rank to arrive; transfer = the collectives' transfer time; late = how often the "
        "rank arrived last.",
        "docs/communication.md §6–7",
    ),
    "occupancy_kernels": (
        "Occupancy per kernel",
        "Theoretical occupancy from the launch configuration and the device limits, its "
        "binding limiters; estimated achieved occupancy = CUPTI's estimate, time-weighted over "
        "ranks. Rows pooled by (name, block, registers, shared memory).",
        "docs/efficiency.md",
    ),
    "roofline": (
        "Roofline",
        "One point per op shape, pooled over ranks: x = FLOP / DRAM bytes (arithmetic "
        "intensity), y = FLOP / kernel time; size ∝ √time. Lines: min(peak FLOP/s, intensity × "
        "peak DRAM bandwidth) per precision.",
        "docs/efficiency.md",
    ),
    "counters": (
        "NVML counters",
        "Samples of the node's sampler (collectors/nvml.py) on the Unix clock, seconds since "
        "the earliest sample; dashed lines = step_begin marks; shaded bands = clock throttling "
        "(power cap, slowdown, thermal, power brake reasons).",
        "docs/capture.md §6; docs/report.md §2, §5",
    ),
    "heatmap": (
        "Ranks × steps",
        "Step duration_ns per rank and step (ms); with many steps, each column is the mean over "
        "a group of consecutive steps.",
        "docs/report.md §5",
    ),
    "findings": (
        "Findings",
        "Rules over the summary, each with a documented threshold; ordered by the share of "
        "time concerned, at most five.",
        "docs/report.md §4",
    ),
}
