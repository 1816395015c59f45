"""Definitions of every figure the HTML report shows (the report's last section).

Each entry: id → (name, one-paragraph definition, where it is defined in full).  The page lists
the entries of the figures it actually shows.  Keep in step with docs/report.md.
"""

from __future__ import annotations

DEFINITIONS: dict[str, tuple[str, str, str]] = {
    "step_time": (
        "Step time (median, p90)",
        "A step's time is the largest duration_ns of that ProfilerStep (its host range) over "
        "the ranks (a synchronous step ends with its slowest rank). Median and p90 over the "
        "steps of the analysis window (p90 interpolates linearly between order statistics).",
        "docs/report.md §3; docs/metrics.md §7",
    ),
    "gpu_busy": (
        "GPU busy %",
        "100 × Σ (gpu_duration − idle) / Σ gpu_duration over every (rank, step) of the window, "
        "steps on the GPU clock: a step's GPU work is what its host range launched, and the step "
        "runs on the GPU from the end of the previous step's work to the end of its own. "
        "Without steps: over each rank's GPU span (HTA window: temporal.span_ns − idle_ns).",
        "docs/report.md §3; docs/metrics.md §5, §7",
    ),
    "overlap": (
        "Compute–communication overlap, exposed communication",
        "Overlap % = 100 × Σ overlap_ns / Σ comm_ns over the ranks (HTA window). Exposed "
        "communication per step (GPU clock): median over steps of the largest per-rank "
        "exposed_comm_ns of the step; its share = 100 × Σ exposed_comm_ns / Σ gpu_duration_ns "
        "over every (rank, step).",
        "docs/report.md §3; docs/metrics.md §6, §7",
    ),
    "occupancy": (
        "Time-weighted occupancy",
        "Per rank, Σ duration × theoretical occupancy / Σ duration over the kernels with a known "
        "launch configuration (and the same weighting of CUPTI's estimated achieved occupancy); "
        "the card shows the mean over the ranks and the share of kernel time with a launch "
        "configuration (mean coverage). ≤: an upper bound, some limit could not be applied "
        "(AMD traces record no registers or LDS).",
        "docs/report.md §3; docs/efficiency.md",
    ),
    "throughput": (
        "Achieved TFLOP/s and % of roofline",
        "Over the op-roofline points listed per rank, except points above their roof (model "
        "errors): Σ FLOP / Σ kernel time (per GPU), and "
        "100 × Σ FLOP / Σ (attainable FLOP/s × time) for the points whose attainable rate is "
        "known (attainable = min(peak, intensity × DRAM bandwidth)), over every modelled op "
        "(roofline.ops.coverage). The card states the share of GPU time (kernels, memcpys, "
        "memsets) those ops cover and the share of that time whose cost model is exact.",
        "docs/report.md §3; docs/efficiency.md",
    ),
    "lag": (
        "GPU lag",
        "Per step, the median over its GPU work of (GPU start − start of the launching call); "
        "steps behind = that ÷ the step's host duration. The card shows the median over every "
        "(rank, step) and the largest steps-behind.",
        "docs/metrics.md §7",
    ),
    "integrity": (
        "Trace notes",
        "What makes a trace's numbers mean less than they seem: a graph-capture trace (no "
        "host-bound verdict), graph launches whose kernels were not recorded and the idle after "
        "them, GPU work launched before the profiler started (left out of the per-step figures "
        "unless --include-prelaunched), an idle gap that dominates the first or last step, and "
        "how far the GPU runs behind the CPU.",
        "docs/metrics.md §10",
    ),
    "energy": (
        "Energy per step",
        "NVML energy counter delta between consecutive step_begin marks, summed over a node's "
        "GPUs; median (observed) over the steps, summed over the nodes.",
        "docs/report.md §2–3; docs/capture.md §6",
    ),
    "breakdown": (
        "Step breakdown",
        "Per (step, rank), on the GPU clock (the step's interval from the end of the previous "
        "step's GPU work to the end of its own): compute = time some computation kernel runs; "
        "exposed comm = communication with no computation beside it; memory/other = "
        "gpu_duration − compute − exposed comm − idle (only MEMORY or OTHER events run); idle = "
        "no GPU event runs. The four parts add up to the step's gpu_duration.",
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
        "= total / count, min and max over ranks, % kernel time = 100 × total / Σ total of "
        "every kernel (HTA window), ranks = ranks that ran it.",
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
