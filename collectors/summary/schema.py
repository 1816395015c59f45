"""The JSON summary (``gpuscope analyze --json``, schema_version 1) as typed dictionaries.

Every section ``reports/summary.py`` writes is a :class:`typing.TypedDict` here, in the shape its
section function returns (``reports/*_sections.py``; keys defined in ``docs/metrics.md``,
``docs/idle-and-launch.md``, ``docs/efficiency.md``, ``docs/communication.md`` and
``docs/report.md`` §2).  msgspec validates these types on decode and returns plain dicts
(:func:`collectors.summary.reader.read_summary`), so readers index keys as before while mypy
checks them.

Required and optional keys: the foundation keys (``schema_version``, ``tool``, ``sources``,
``ranks[]`` with ``rank``, ``device``, ``window``, ``kernel_summary``, ``temporal``,
``overlap``, ``steps``) are required; the sections later features added are optional, since a
schema-1 summary written before them lacks them (``later features only add keys``).  Inside a
section every key the writer always writes is required.  Requiredness is spelled with
``total=False`` subclasses (PEP 589) rather than ``typing.NotRequired``: the project supports
Python 3.10, where ``NotRequired`` does not exist, and this form means the same to typing,
mypy and msgspec on every version.  Keys the schema does not name are dropped on decode (a
newer gpuscope may add sections; an older reader ignores them).

Impossible values are rejected through :class:`msgspec.Meta` constraints where the constraint
holds by definition: durations (``Ns``), counts (``Count``) and ranks are ≥ 0, percentages of
a whole (``Pct``) lie in [0, 100], shares of a whole (``Share``) in [0, 1], and every integer
fits int64 (``Int``).  Timestamps, step ids, byte counts (−1 = unknown), launch delays and
sentinel fields (−1) are only bounded to int64.  JSON has no NaN or infinity, and msgspec
refuses a float literal beyond the double range, so every float is finite.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from msgspec import Meta

SCHEMA_VERSION = 1
"""The ``schema_version`` this gpuscope writes and reads."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

Int = Annotated[int, Meta(ge=INT64_MIN, le=INT64_MAX)]
"""Any integer that fits int64: timestamps (ns), ids, signed values, −1 sentinels."""
Ns = Annotated[int, Meta(ge=0, le=INT64_MAX)]
"""A duration in integer nanoseconds (≥ 0)."""
Count = Annotated[int, Meta(ge=0, le=INT64_MAX)]
"""How many of something (≥ 0)."""
Rank = Annotated[int, Meta(ge=0, le=INT64_MAX)]
"""A rank (≥ 0)."""
Pct = Annotated[float, Meta(ge=0.0, le=100.0)]
"""A percentage of a whole, 100 × part / whole (0–100)."""
Share = Annotated[float, Meta(ge=0.0, le=1.0)]
"""A fraction of a whole, part / whole (0–1)."""
NonNeg = Annotated[float, Meta(ge=0.0)]
"""A non-negative float (rates, bandwidths, ratios without an upper bound)."""
Number = Int | float
"""A number the writer passes through as it computed it (an int or a float)."""
NonNegNumber = Ns | NonNeg
"""A non-negative int or float."""


# --- the foundation (docs/metrics.md) ---------------------------------------------------------
class Tool(TypedDict):
    """``tool``: the writer."""

    name: str
    version: str


class Device(TypedDict):
    """``ranks[].device``: the GPU's properties as the trace records them (docs/metrics.md §8);
    ``None`` = unknown.  Bounded to int64 only: these are the source's figures, not ours."""

    id: Int
    name: str | None
    vendor: str | None
    compute_major: Int | None
    compute_minor: Int | None
    sm_count: Int | None
    total_memory_bytes: Int | None
    memory_bandwidth_bytes_per_s: Number | None
    l2_cache_bytes: Int | None
    clock_rate_khz: Int | None
    warp_size: Int | None
    max_threads_per_block: Int | None
    max_threads_per_sm: Int | None
    max_warps_per_sm: Int | None
    max_blocks_per_sm: Int | None
    regs_per_block: Int | None
    regs_per_sm: Int | None
    smem_per_block_bytes: Int | None
    smem_per_block_optin_bytes: Int | None
    smem_per_sm_bytes: Int | None
    arch: str | None


class Window(TypedDict):
    """``ranks[].window`` (docs/metrics.md §2); start/end are ``None`` for an empty trace."""

    start_ns: Int | None
    end_ns: Int | None
    steps: list[Int]


class KernelRow(TypedDict):
    """``ranks[].kernel_summary[]`` (docs/metrics.md §4)."""

    name: str
    type: str
    count: Count
    total_ns: Ns
    avg_ns: Ns | None
    median_ns: Ns | None
    min_ns: Ns
    max_ns: Ns
    stddev_ns: Ns | None
    time_pct: Pct | None


class Temporal(TypedDict):
    """``ranks[].temporal`` (docs/metrics.md §5)."""

    span_ns: Ns
    idle_ns: Ns
    compute_ns: Ns
    non_compute_ns: Ns
    idle_pct: Pct | None
    compute_pct: Pct | None
    non_compute_pct: Pct | None


class Overlap(TypedDict):
    """``ranks[].overlap`` (docs/metrics.md §6)."""

    comm_ns: Ns
    compute_ns: Ns
    overlap_ns: Ns
    exposed_comm_ns: Ns
    overlap_pct: Pct | None


class _StepRowFoundation(TypedDict):
    step: Int
    start_ns: Int
    end_ns: Int
    duration_ns: Ns
    compute_ns: Ns
    exposed_comm_ns: Ns
    idle_ns: Ns


class StepRow(_StepRowFoundation, total=False):
    """``ranks[].steps[]`` (docs/metrics.md §7): one ProfilerStep of the window, its GPU figures
    on the GPU clock.  The GPU-clock keys are absent from summaries written before them (there
    ``compute_ns``/``exposed_comm_ns``/``idle_ns`` are of the host range ``duration_ns``)."""

    gpu_start_ns: Int | None
    gpu_end_ns: Int | None
    gpu_duration_ns: Ns
    work_events: Count
    work_ns: Ns
    launch_lag_ns: Int | None
    steps_behind: float | None


class EdgeGap(TypedDict):
    """``ranks[].integrity.edge_gaps[]`` (docs/metrics.md §10)."""

    edge: Literal["first", "last"]
    step: Int
    start_ns: Int
    end_ns: Int
    idle_ns: Ns
    share: Share


class GpuLag(TypedDict):
    """``ranks[].integrity.lag`` (docs/metrics.md §10)."""

    steps: Count
    median_launch_lag_ns: Int
    median_steps_behind: float | None
    max_steps_behind: float | None


class Integrity(TypedDict):
    """``ranks[].integrity`` (docs/metrics.md §10): what makes the rank's numbers mean less
    than they seem, and one note per case."""

    capture: bool
    capture_regions: Count
    graph_launches: Count
    graph_launches_unrecorded: Count
    unrecorded_idle_ns: Ns
    prelaunched_events: Count
    prelaunched_ns: Ns
    prelaunched_included: bool
    edge_gaps: list[EdgeGap]
    lag: GpuLag | None
    notes: list[str]


# --- efficiency (docs/efficiency.md) ----------------------------------------------------------
class _OccupancyKernel(TypedDict):
    name: str
    block: str
    threads: Int
    registers: Int | None
    """Registers (VGPRs on AMD) per thread; None when the source does not record them."""
    smem_bytes: Int | None
    """Shared memory (LDS on AMD) per block; None when the source does not record it."""
    calls: Count
    time_ns: Ns
    time_share: Share | None
    theoretical_pct: Pct | None
    active_blocks: Int
    active_warps: Int
    limiters: list[str]
    est_achieved_pct: NonNeg | None
    ncu_achieved_pct: NonNeg | None
    ncu_launches: Count
    error: str


class OccupancyKernel(_OccupancyKernel, total=False):
    """``ranks[].occupancy.by_kernel[]``: one (kernel, launch configuration) group.  AMD (CDNA)
    groups add ``upper_bound`` and ``limits_not_applied`` (docs/efficiency.md §1b)."""

    upper_bound: bool | None
    limits_not_applied: list[str]


class OccupancyFlag(TypedDict):
    """``ranks[].occupancy.flags[]``: a hot kernel at low theoretical occupancy."""

    name: str
    block: str
    time_share: Share
    theoretical_pct: Pct
    limiters: list[str]
    suggestion: str


class _Occupancy(TypedDict):
    arch: str | None
    limits_source: str | None
    kernels: Count
    kernels_with_config: Count
    coverage: Share | None
    time_weighted_theoretical_pct: Pct | None
    time_weighted_est_achieved_pct: NonNeg | None
    reason: str | None
    groups_total: Count
    by_kernel: list[OccupancyKernel]
    flags: list[OccupancyFlag]


class Occupancy(_Occupancy, total=False):
    """``ranks[].occupancy``; ``upper_bound``/``limits_not_applied`` when some limits could not
    be applied (AMD traces record no VGPRs/LDS), ``notes`` on what was left out."""

    upper_bound: bool
    limits_not_applied: list[str]
    notes: list[str]


class Ceilings(TypedDict):
    """``...points[].ceilings``: the roofs a point is measured against."""

    flops_per_s: dict[str, NonNegNumber]
    bytes_per_s: dict[str, NonNegNumber]
    source: dict[str, str]
    unverified: list[str]


class _RooflinePoint(TypedDict):
    key: str
    name: str
    calls: Count
    time_ns: Ns | None
    time_source: str | None
    time_share: Share | None
    flop: dict[str, NonNegNumber]
    flop_total: NonNegNumber | None
    flops_per_s: dict[str, NonNegNumber]
    flops_per_s_total: NonNegNumber | None
    dominant_precision: str | None
    tensor_precision: str | None
    bytes: dict[str, NonNegNumber]
    byte_sources: dict[str, str]
    bytes_per_s: dict[str, NonNegNumber]
    intensity_flop_per_byte: dict[str, NonNegNumber]
    ceilings: Ceilings
    ridge_flop_per_byte: NonNegNumber | None
    attainable_flops_per_s: NonNegNumber | None
    bound: str | None
    pct_of_attainable: NonNeg | None
    pct_of_peak_bandwidth: NonNeg | None
    headroom_ns: Ns | None
    achieved_occupancy_pct: NonNeg | None
    tensor_instructions: NonNegNumber | None
    missing: list[str]


class RooflinePoint(_RooflinePoint, total=False):
    """``ranks[].roofline.ops.points[]`` and ``ranks[].roofline.ncu.kernels[]``; op points add
    whether their cost is exact (``exact``, ``model_note``: why an estimate) and
    ``model_error`` (why a point above its roof is a model error, not an achievement)."""

    exact: bool | None
    model_note: str
    model_error: str | None


class RooflineCoverage(TypedDict):
    """``ranks[].roofline.ops.coverage``: the GPU time the derived roofline headlines cover
    (:class:`analyzers.roofline.RooflineCoverage`; docs/efficiency.md); each ``*_share`` is the
    ``*_ns`` over ``gpu_time_ns``."""

    gpu_time_ns: Ns | None
    modelled_ns: Ns
    modelled_share: NonNeg | None
    exact_ns: Ns
    exact_share: NonNeg | None
    achieved_ns: Ns
    achieved_share: NonNeg | None
    achieved_exact_ns: Ns
    achieved_exact_share: NonNeg | None
    roofline_ns: Ns
    roofline_share: NonNeg | None
    roofline_exact_ns: Ns
    roofline_exact_share: NonNeg | None
    model_error_ns: Ns
    model_error_share: NonNeg | None
    achieved_flops_per_s: NonNeg | None
    pct_of_roofline: NonNeg | None
    model_errors: Count


class _RooflineOps(TypedDict):
    gpu_peaks: str | None
    device: str | None
    modelled_calls: Count
    modelled_gpu_time_ns: Ns
    modelled_gpu_time_share: NonNeg | None
    points_total: Count
    points: list[RooflinePoint]


class RooflineOps(_RooflineOps, total=False):
    """``ranks[].roofline.ops``: the op-shape roofline of the rank; ``gpu_peaks_match`` when the
    peak entry was found other than by the device name, ``gpu_peaks_missing`` why none applies
    (docs/efficiency.md §6)."""

    gpu_peaks_match: str
    gpu_peaks_missing: str
    coverage: RooflineCoverage


class NcuRoofline(TypedDict, total=False):
    """``ranks[].roofline.ncu``: the Nsight Compute roofline (``source`` and ``gpu_peaks``,
    ``missing``, ``kernels``), or ``source`` and the ``error`` that prevented it."""

    source: str | None
    gpu_peaks: str | None
    missing: list[str]
    kernels: list[RooflinePoint]
    error: str


class Roofline(TypedDict, total=False):
    """``ranks[].roofline``: ``ops``, ``ncu`` or both."""

    ops: RooflineOps
    ncu: NcuRoofline


# --- idle, launch, memory (docs/idle-and-launch.md) -------------------------------------------
class IdleStream(TypedDict):
    """``ranks[].idle.streams[]``: HTA's idle time per (stream, category).  ``idle_ns`` and
    ``ratio`` are signed: HTA measures a gap from the previous event in start order, so
    overlapping events on a stream give negative gaps (docs/idle-and-launch.md §1)."""

    stream: Int
    category: str
    idle_ns: Int
    intervals: Count
    ratio: float | None


class IdleGpu(TypedDict):
    """``ranks[].idle.gpu``: the GPU-wide view."""

    span_ns: Ns
    busy_ns: Ns
    idle_ns: Ns
    gaps: Count
    by_cause: dict[str, Ns]
    by_cpu_activity: dict[str, Ns]


class HostBound(TypedDict):
    """``ranks[].idle.host_bound``: the rank's verdict."""

    verdict: str | None
    basis: str
    duration_ns: Ns
    host_wait_ns: Ns
    exposed_comm_ns: Ns
    host_share: NonNeg | None
    comm_share: NonNeg | None
    host_threshold: NonNeg
    comm_threshold: NonNeg
    steps_by_verdict: dict[str, Count]
    host_wait_by_activity: dict[str, Ns]


class TopOp(TypedDict):
    """``ranks[].idle.steps[].top_ops[]``."""

    name: str
    overlap_ns: Ns


class _IdleStepFoundation(TypedDict):
    step: Int
    start_ns: Int
    end_ns: Int
    duration_ns: Ns
    idle_ns: Ns
    host_wait_ns: Ns
    exposed_comm_ns: Ns
    host_share: NonNeg | None
    comm_share: NonNeg | None
    verdict: str | None
    host_wait_by_activity: dict[str, Ns]
    top_ops: list[TopOp]


class IdleStep(_IdleStepFoundation, total=False):
    """``ranks[].idle.steps[]``: one step's verdict; the shares are of ``gpu_duration_ns``, the
    step on the GPU clock (absent from older summaries, whose shares are of ``duration_ns``)."""

    gpu_start_ns: Int | None
    gpu_end_ns: Int | None
    gpu_duration_ns: Ns


class Idle(TypedDict):
    """``ranks[].idle``."""

    threshold_ns: Ns
    streams: list[IdleStream]
    gpu: IdleGpu
    host_bound: HostBound
    steps: list[IdleStep]
    notes: list[str]


class LaunchHta(TypedDict):
    """``ranks[].launch.hta``: HTA's launch statistics."""

    launches: Count
    cpu_duration_sum_ns: Ns
    gpu_duration_sum_ns: Ns
    launch_delay_sum_ns: Ns
    cpu_duration_mean_us: NonNeg | None
    gpu_duration_mean_us: NonNeg | None
    launch_delay_mean_us: NonNeg | None
    launch_delay_median_us: NonNeg | None
    launch_delay_max_ns: Ns | None
    short_kernels: Count
    runtime_outliers: Count
    launch_delay_outliers: Count
    runtime_cutoff_ns: Ns
    launch_delay_cutoff_ns: Ns


class _DistributionCount(TypedDict):
    n: Count


class Distribution(_DistributionCount, total=False):
    """A distribution of integer ns values (``{"n": 0}`` when empty); quantiles are observed
    values.  Signed: a launch delay or start-after-call is negative when clocks disagree."""

    sum_ns: Int
    min_ns: Int
    p50_ns: Int
    p90_ns: Int
    p99_ns: Int
    max_ns: Int


class GroupDistribution(TypedDict, total=False):
    """A distribution of one launch group (the keys of :class:`Distribution` but ``n``)."""

    sum_ns: Int
    min_ns: Int
    p50_ns: Int
    p90_ns: Int
    p99_ns: Int
    max_ns: Int


class _LaunchAllFoundation(TypedDict):
    calls: Count
    ops: Count
    by_api: dict[str, Count]
    cpu_duration: Distribution
    launch_delay: Distribution
    start_after_call: Distribution


class LaunchAll(_LaunchAllFoundation, total=False):
    """``ranks[].launch.all``: gpuscope's wider launch view (docs/idle-and-launch.md §4.2);
    ``graph_ops`` (left out of the delay figures) and ``launch_delay_union_ns`` are absent
    from older summaries."""

    graph_ops: Count
    launch_delay_union_ns: Ns


class _LaunchGroupCounts(TypedDict):
    launches: Count
    cpu_duration: GroupDistribution
    launch_delay: GroupDistribution


class LaunchGroup(_LaunchGroupCounts, total=False):
    """``ranks[].launch.per_kernel[]`` (keyed by ``name``) and ``per_step[]`` (by ``step``);
    ``launch_delay_union_ns``: the union of the group's waits."""

    name: str
    step: Int
    launch_delay_union_ns: Ns


class QueueRow(TypedDict):
    """``ranks[].launch.queue[]``: HTA's queue length per stream (may dip below 0)."""

    stream: Int
    changes: Count
    max: Int
    max_ts_ns: Int
    time_weighted_mean: float | None


class Launch(TypedDict):
    """``ranks[].launch``."""

    hta: LaunchHta
    all: LaunchAll
    per_kernel: list[LaunchGroup]
    per_step: list[LaunchGroup]
    queue: list[QueueRow]
    notes: list[str]


class MemorySeries(TypedDict):
    """``ranks[].memory.series[]``: one memory series of one device over the trace."""

    device: Int
    series: str
    samples: Count
    peak_bytes: Int
    peak_ts_ns: Int
    peak_op: str | None
    first_bytes: Int
    last_bytes: Int


class MemoryStep(TypedDict):
    """``ranks[].memory.steps[]``."""

    device: Int
    series: str
    step: Int
    at_start_bytes: Int | None
    peak_bytes: Int | None
    peak_ts_ns: Int | None
    peak_op: str | None
    at_end_bytes: Int | None


class Memory(TypedDict):
    """``ranks[].memory``."""

    series: list[MemorySeries]
    steps: list[MemoryStep]
    notes: list[str]


# --- communication (docs/communication.md) ----------------------------------------------------
class CollectiveRow(TypedDict):
    """``ranks[].collectives[]``: one collective type and size bucket of the window."""

    collective: str
    size_bucket: str
    count: Count
    bytes: Int
    time_ns: Ns
    median_time_ns: Int
    median_algbw_gbps: NonNeg | None
    median_busbw_gbps: NonNeg | None
    max_busbw_gbps: NonNeg | None
    median_busbw_link_pct: NonNeg | None


class CommByCollective(TypedDict):
    """``ranks[].comm.by_collective[]``."""

    collective: str
    comm_ns: Ns
    exposed_ns: Ns


class CommByStep(TypedDict):
    """``ranks[].comm.by_step[]``."""

    step: Int
    start_ns: Int
    end_ns: Int
    collective: str
    comm_ns: Ns
    exposed_ns: Ns


class ProcessGroup(TypedDict):
    """``ranks[].comm.process_groups[]`` (``ranks`` ``None`` and ``size`` −1 when unknown)."""

    pg_name: str
    pg_desc: str | None
    ranks: list[Int] | None
    size: Int
    stride: Int
    calls: Count
    collectives: dict[str, Count]
    dimension: str
    source: str


class CommByDimension(TypedDict):
    """``ranks[].comm.by_dimension[]``."""

    dimension: str
    calls: Count
    bytes: Int
    time_ns: Ns
    comm_ns: Ns
    exposed_ns: Ns


class Comm(TypedDict):
    """``ranks[].comm``."""

    calls_in_window: Count
    calls_without_gpu_work: Count
    sizes_known: Count
    group_size_known: Count
    comm_ns: Ns
    exposed_ns: Ns
    by_collective: list[CommByCollective]
    by_step: list[CommByStep]
    process_groups: list[ProcessGroup]
    by_dimension: list[CommByDimension]


class SkewRank(TypedDict):
    """``comm_skew.per_rank[]``."""

    rank: Rank
    collectives: Count
    wait_ns: Ns
    transfer_ns: Ns
    late_count: Count
    unmatched: Count


class SkewStep(TypedDict):
    """``comm_skew.per_step[]`` (``straggler`` −1: none)."""

    step: Int
    collectives: Count
    arrival_skew_ns: Ns
    transfer_ns: Ns
    straggler: Int
    straggler_caused_wait_ns: Ns


class SkewCollective(TypedDict):
    """``comm_skew.collectives[]``: one collective matched across ranks (``collective``
    ``None`` when the ranks disagree, ``pg_name`` ``None`` when no rank names the group)."""

    key: str
    match_by: str
    collective: str | None
    pg_name: str | None
    n_ranks: Count
    ranks: list[Int]
    step: Int
    message_bytes: Int
    consistent: bool
    transfer_ns: Ns
    arrival_skew_ns: Ns
    late_rank: Int
    start_spread_ns: Ns


class CommSkew(TypedDict):
    """``comm_skew`` (run level)."""

    matched: Count
    mismatched: Count
    match_by: list[str]
    arrival_skew_ns: Ns
    transfer_ns: Ns
    per_rank: list[SkewRank]
    per_step: list[SkewStep]
    collectives: list[SkewCollective]


# --- the run section (docs/report.md §2) ------------------------------------------------------
class Range(TypedDict):
    """``run.ranks[].ranges[]``: annotated ranges by (kind, name)."""

    kind: str
    name: str
    count: Count
    total_ns: Ns
    max_ns: Ns


class RunRank(TypedDict):
    """``run.ranks[]``: where a rank's trace came from."""

    rank: Rank
    hostname: str | None
    source_format: str
    source_version: str | None
    source_path: str | None
    world_size: Int | None
    ranges: list[Range]


class RunMeta(TypedDict):
    """``run.meta``: facts of ``RUN/meta.json`` (``None`` where it lacks them)."""

    command: list[str] | None
    host: str | None
    hosts: list[str] | None
    world_size: Int | None
    exit_code: Int | None
    started_unix_ns: Int | None
    ended_unix_ns: Int | None
    git_commit: str | None
    versions: dict[str, str | None] | None


class CounterSeries(TypedDict):
    """``run.nvml[].series[]``: one NVML field of one device, decimated for plotting."""

    device: Int
    field: str
    samples: Count
    decimated: bool
    t_ns: list[Int]
    value: list[float]


class StepMark(TypedDict):
    """``run.nvml[].step_marks[]``."""

    step: Int
    t_ns: Int


class ThrottleBand(TypedDict):
    """``run.nvml[].throttle[]``."""

    device: Int
    start_ns: Int
    end_ns: Int
    reasons: list[str]


class EnergyStep(TypedDict):
    """``run.nvml[].energy_steps[]``."""

    step: Int
    device: Int
    start_ns: Int
    end_ns: Int
    energy_mj: float | None
    avg_power_w: float | None


class NvmlHost(TypedDict):
    """``run.nvml[]``: one node's counters."""

    host: str
    t0_unix_ns: Int
    duration_ns: Ns
    devices: list[Int]
    series: list[CounterSeries]
    step_marks: list[StepMark]
    throttle: list[ThrottleBand]
    throttle_bands_dropped: Count
    energy_steps: list[EnergyStep]
    energy_per_step_mj: float | None


class Run(TypedDict):
    """``run`` (run level)."""

    ranks: list[RunRank]
    meta: RunMeta | None
    nvml: list[NvmlHost]


# --- what to fix first (docs/critical-path.md §5) ---------------------------------------------
class FixFirst(TypedDict):
    """``critical_path.what_to_fix_first[]``: one what-if, ranked by the step time it would
    recover (``recovered_ns_per_step`` may be negative: the change would not help)."""

    change: str
    kind: str
    category: str | None
    rank: Rank | None
    recovered_ns_per_step: float
    recovered_share: float
    predicted_ns_by_step: dict[str, Int]
    assumptions: str


class PathCause(TypedDict):
    """``critical_path.steps[].by_cause[]``."""

    cause: str
    detail: str
    rank: Rank | None
    ns: Ns


class PathSegment(TypedDict):
    """``critical_path.steps[].top_segments[]``."""

    cause: str
    detail: str
    rank: Int
    name: str
    start_ns: Int
    duration_ns: Ns


class PathStep(TypedDict):
    """``critical_path.steps[]``: one step's critical path across ranks."""

    step: Int
    rank: Rank
    duration_ns: Int
    replayed_ns: Int | None
    duration_ns_by_rank: dict[str, Int]
    segments: Count
    unresolved_waits: Count
    by_cause: list[PathCause]
    top_segments: list[PathSegment]


class CriticalPathSection(TypedDict):
    """``critical_path`` (run level, written before ``ranks``)."""

    what_to_fix_first: list[FixFirst]
    measured_ns_per_step: float
    ranks: list[Rank]
    clock_offset_ns_by_rank: dict[str, Int]
    matched_collectives: Count
    measured_ns_by_step: dict[str, Int]
    replay_exact: bool
    cause_ns_per_step: dict[str, float]
    unresolved_waits: Count
    notes: list[str]
    steps: list[PathStep]


class EnvironmentFacts(TypedDict, total=False):
    """``environment`` (optional input, docs/gating.md §5): the testbed facts a caller records
    in the summary; gpuscope's writer does not write it."""

    gpu_model: str
    gpu_count: Count
    nodes: Count
    driver: str
    cuda: str
    nccl: str
    torch: str


# --- LLM serving and inference (docs/inference.md "JSON") -------------------------------------
class ServingCapture(TypedDict):
    """``serving.capture``: the capture regions (graphs) and nodes a capture trace records."""

    graphs: Count
    nodes: Count


ServingAttribution = TypedDict(
    "ServingAttribution",
    {"op": Ns, "capture": Ns, "graph": Ns, "no-op": Ns, "no-launch": Ns},
)
"""``serving.attribution_ns_by_source``: GPU work time by where each row's op came from."""


class ServingGraph(TypedDict):
    """``serving.graphs.per_graph[]``: graph launches with one kernel sequence."""

    graph: Count
    launches: Count
    kernels_per_launch: list[Count]
    kernel_ns: Ns
    attributed_ns: Ns
    match: list[str]


class ServingGraphs(TypedDict):
    """``serving.graphs``: graph-replayed kernels and their attribution."""

    method: Literal["capture", "kernel-name", "none"]
    captures: Count
    launches: Count
    graphs: Count
    graph_kernel_ns: Ns
    attributed_ns: Ns
    coverage: Share | None
    per_graph: list[ServingGraph]


class CategoryRow(TypedDict):
    """A row of a category breakdown: GPU work time of one op category."""

    category: str
    kernels: Count
    time_ns: Ns
    share: Share | None


class CategoryRoofRow(CategoryRow):
    """A category row with its modelled part and the time it would take at its roof."""

    modelled_ns: Ns
    model_flops: NonNeg
    roof_ns: Ns | None
    pct_of_roof: NonNeg | None


class ServingPeaks(TypedDict):
    """``serving.peaks``: the peak-table entry MFU is measured against."""

    name: str | None
    match: str | None
    missing: str | None


class Mfu(TypedDict):
    """``mfu`` of a serving step, phase, ProfilerStep or the rank (docs/inference.md "MFU")."""

    busy_ns: Ns
    gpu_ns: Ns
    modelled_ns: Ns
    coverage: Share | None
    model_flops: NonNeg
    recomputed_flops: NonNeg
    exact_share: Share | None
    dtype: str | None
    peak: str | None
    peak_flops: NonNeg | None
    achieved_flops_per_s: NonNeg | None
    mfu: NonNeg | None
    hfu: NonNeg | None


class ServingStep(TypedDict):
    """``serving.steps[]``: one serving step (annotation fields null when not carried)."""

    step: Count
    name: str
    framework: str
    phase: str
    clock: Literal["cpu", "gpu"]
    start_ns: Int
    end_ns: Int
    batch_size: Count | None
    tokens: Count | None
    prefill_requests: Count | None
    prefill_tokens: Count | None
    decode_requests: Count | None
    decode_tokens: Count | None
    prefill_kv_tokens: Count | None
    decode_kv_tokens: Count | None
    prefill_q_sq: Count | None
    prefill_q_kv: Count | None
    decode_q_sq: Count | None
    decode_q_kv: Count | None
    kernels: Count
    kernel_ns: Ns
    gpu_start_ns: Int | None
    gpu_end_ns: Int | None
    gpu_span_ns: Ns
    busy_ns: Ns
    categories: list[CategoryRow]
    mfu: Mfu | None


class ServingPhase(TypedDict):
    """``serving.phases[]``: the steps of one phase, summed."""

    phase: str
    steps: Count
    kernels: Count
    kernel_ns: Ns
    gpu_span_ns: Ns
    busy_ns: Ns
    requests: Count | None
    tokens: Count | None
    prefill_tokens: Count | None
    decode_tokens: Count | None
    tokens_per_s: NonNeg | None
    output_tokens_per_s: NonNeg | None
    time_per_output_token_ns: Ns | None
    categories: list[CategoryRoofRow]
    mfu: Mfu | None


class ServingProfilerStep(TypedDict):
    """``serving.profiler_steps[]``: categories and MFU of the work a ProfilerStep launched."""

    step: Int
    categories: list[CategoryRow]
    mfu: Mfu | None


class MoeLayer(TypedDict):
    layer: str
    calls: Count
    kernels: Count
    time_ns: Ns
    share_of_gpu: Share | None


class MoeRole(TypedDict):
    layer: str
    role: str
    kernels: Count
    time_ns: Ns
    share_of_layer: Share | None
    share_of_gpu: Share | None


class MoeStep(TypedDict):
    step: Count
    layer: str
    time_ns: Ns
    step_kernel_ns: Ns
    share_of_step: Share | None


class Moe(TypedDict):
    """``serving.moe``: MoE layers per type, role and serving step."""

    layers: list[MoeLayer]
    roles: list[MoeRole]
    steps: list[MoeStep]


class Serving(TypedDict):
    """``ranks[].serving`` (docs/inference.md "JSON")."""

    capture_trace: bool
    capture: ServingCapture
    gpu_work_ns: Ns
    busy_ns: Ns
    attribution_ns_by_source: ServingAttribution
    graphs: ServingGraphs
    categories: list[CategoryRoofRow]
    peaks: ServingPeaks
    mfu: Mfu | None
    steps: list[ServingStep]
    phases: list[ServingPhase]
    profiler_steps: list[ServingProfilerStep]
    moe: Moe | None
    notes: list[str]


# --- ranks and the whole summary --------------------------------------------------------------
class _RankFoundation(TypedDict):
    rank: Rank
    device: Device | None
    window: Window
    kernel_summary: list[KernelRow]
    temporal: Temporal
    overlap: Overlap
    steps: list[StepRow]


class RankEntry(_RankFoundation, total=False):
    """``ranks[]``: one rank's sections (the foundation's always; later ones when they apply)."""

    integrity: Integrity
    notes: list[str]
    occupancy: Occupancy
    roofline: Roofline
    idle: Idle
    launch: Launch
    memory: Memory
    collectives: list[CollectiveRow]
    comm: Comm
    serving: Serving


class _SummaryFoundation(TypedDict):
    schema_version: Literal[1]
    tool: Tool
    sources: list[str]
    ranks: list[RankEntry]


class Summary(_SummaryFoundation, total=False):
    """The JSON summary.  ``gate`` (a ``gpuscope gate --json`` document, docs/gating.md §6, for
    the report's banner) is carried as it is; ``environment`` see :class:`EnvironmentFacts`."""

    comm_skew: CommSkew
    run: Run
    critical_path: CriticalPathSection
    environment: EnvironmentFacts
    gate: dict[str, Any]
