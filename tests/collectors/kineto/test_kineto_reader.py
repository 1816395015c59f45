"""The Kineto reader on every shared HTA fixture, checked against the plain ``json`` module.

Expected values are recomputed here from the raw JSON (``json`` with exact ``Decimal`` times
where nanoseconds matter) or taken from ``../shared/data/kineto/MANIFEST.md``; none comes from
gpuscope itself.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.errors import InputError
from collectors.kineto import rank_from_filename, read_kineto, read_kineto_files
from collectors.kineto.decode import COMM_SCAN
from tests.support import kineto_json as kj
from tests.support.env import SAMPLES, shared_path
from tests.support.raw_kineto import document

KINETO_FILES = (
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "call_stack/backward_thread.json",
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz",
    "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
    "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    "distributed_info_unavailable/distributed_info_not_found.json.gz",
    "execution_trace/benchmark_simple_add_trace.json.gz",
    "large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
    "mtia_inference_trace/mtia_inference_rank_0.json.gz",
    "mtia_trace_single_rank/mtia_rank_0.json.gz",
    "nccl_parser_config/nccl_data.json.gz",
    "negative_queue_length_values_check/rank0.json.gz",
    "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "rank_non_gpu/rank_non_gpu.json.gz",
    "rank_unavailable/rank_not_found.json.gz",
    "trace_compare/base/base.json.gz",
    "trace_compare/test/test.json.gz",
    "trace_file_list/inference_rank_1.json.gz",
    "trace_filter/sampled_rank-0.json.gz",
    "triton_example/triton_example.json.gz",
    "with_gpu_user_annotation/step_based_trace_2543932.json.gz",
)
NOT_KINETO = (
    "execution_trace/benchmark_simple_add_et.json.gz",
    "memory_analysis/memory_timeline.raw.gz",
)

# The documented mapping (docs/kineto-reader.md), restated for the independent count.
HOST_CATS = {
    "cpu_op",
    "user_annotation",
    "python_function",
    "cuda_runtime",
    "cuda_driver",
    "Runtime",
    "Operator",
    "mtia_runtime",
    "cpu_instant_event",
}
KERNEL_CATS = {"kernel", "Kernel", "mtia_ccp_events"}
STEP = re.compile(r"^ProfilerStep#(\d+)")
COMM_KEYS = {
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "In split size",
    "Out split size",
    "Global rank start",
    "Global rank stride",
    "Process Group ID",
    "Process Group Name",
    "Process Group Description",
    "Process Group Ranks",
    "Src Rank",
    "Dst Rank",
    "Input Tensors start",
    "Output Tensors start",
    "Seq",
    "Comms Id",
    "Rank",
}


def _load_json(path: Path, exact: bool = False) -> Any:
    return document(path, exact=exact)


def _ns(v: Any) -> int:
    """Exact ns of a µs value parsed as int or Decimal."""
    return int((Decimal(v) * 1000).to_integral_value())


def _split(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The rows of each table, per the documented rule, from the raw JSON events."""
    acts = [
        e
        for e in doc["traceEvents"]
        if e.get("ph") == "X"
        and e.get("dur") is not None
        and e.get("ts") is not None
        and isinstance(e.get("cat"), str)
        and e["cat"] != "Trace"
    ]

    def has_stream(e: dict[str, Any]) -> bool:
        s = (e.get("args") or {}).get("stream")
        return type(s) is int

    gpu = [
        e for e in acts if (has_stream(e) and e["cat"] not in HOST_CATS) or e["cat"] == "cuda_sync"
    ]
    gpu_ids = {id(e) for e in gpu}
    gpu_user = [e for e in acts if e["cat"] == "gpu_user_annotation" and id(e) not in gpu_ids]
    host = [
        e
        for e in acts
        if id(e) not in gpu_ids and e["cat"] not in ("gpu_user_annotation", "python_function")
    ]
    return {"acts": acts, "gpu": gpu, "gpu_user": gpu_user, "host": host}


@pytest.fixture(scope="module")
def loaded() -> dict[str, tuple[Any, Any]]:
    """(trace, raw JSON) per file, loaded once for the module."""
    return {}


def _get(loaded: dict[str, tuple[Any, Any]], rel: str) -> tuple[Any, Any]:
    if rel not in loaded:
        p = shared_path("kineto", "hta", rel)
        loaded[rel] = (read_kineto(p), _load_json(p))
    return loaded[rel]


@pytest.mark.parametrize("rel", KINETO_FILES)
def test_every_shared_kineto_file_maps_to_the_documented_tables(loaded, rel: str) -> None:
    trace, doc = _get(loaded, rel)
    rows = _split(doc)
    assert len(trace.gpu) == len(rows["gpu"])
    assert int((trace.gpu["stream"] >= 0).sum()) == sum(
        1 for e in rows["gpu"] if (e.get("args") or {}).get("stream", -1) >= 0
    )
    assert int((trace.gpu["kind"] == "kernel").sum()) == sum(
        e["cat"] in KERNEL_CATS for e in rows["gpu"]
    )
    assert Counter(trace.host["cat"].astype(str)) == Counter(e["cat"] for e in rows["host"])
    steps = sorted(int(m.group(1)) for e in rows["host"] if (m := STEP.match(e["name"])))
    assert sorted(trace.steps()["step"].tolist()) == steps
    ann = trace.annotations
    assert int((ann["kind"] == "gpu_user").sum()) == len(rows["gpu_user"])
    n_user = sum(e["cat"] == "user_annotation" and not STEP.match(e["name"]) for e in rows["host"])
    assert int((ann["kind"] == "user").sum()) == n_user
    # durations are non-negative and names kept verbatim
    assert (trace.gpu["end_ns"] >= trace.gpu["start_ns"]).all()
    assert Counter(trace.gpu["name"].astype(str)) == Counter(e["name"] for e in rows["gpu"])
    # devices as listed in deviceProperties
    props = doc.get("deviceProperties") or []
    assert [d.id for d in trace.meta.devices] == [p["id"] for p in props]
    assert [d.name for d in trace.meta.devices] == [p.get("name") for p in props]
    assert trace.meta.source_format == "kineto"
    if "schemaVersion" in doc:
        assert trace.meta.source_version == str(doc["schemaVersion"])


@pytest.mark.parametrize("rel", NOT_KINETO)
def test_non_kineto_json_in_the_shared_data_is_rejected(rel: str) -> None:
    p = shared_path("kineto", "hta", rel)
    with pytest.raises(InputError, match="not a Kineto trace") as err:
        read_kineto(p)
    assert str(p) in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("rel", "kernels"),
    [
        ("nccl_parser_config/nccl_data.json.gz", 2700),
        ("negative_queue_length_values_check/rank0.json.gz", 6080),
        ("ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 4350),
        ("trace_filter/sampled_rank-0.json.gz", 1154),
        ("critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 79),
        ("amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 14),
        ("trace_file_list/inference_rank_1.json.gz", 4),
    ],
)
def test_kernel_counts_match_the_manifest(loaded, rel: str, kernels: int) -> None:
    trace, _ = _get(loaded, rel)
    assert int((trace.gpu["kind"] == "kernel").sum()) == kernels


@pytest.mark.parametrize(
    ("rel", "rank", "source"),
    [
        ("rank_unavailable/rank_not_found.json.gz", 0, "default"),
        ("distributed_info_unavailable/distributed_info_not_found.json.gz", 0, "default"),
        ("cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 34, "distributedInfo"),
        ("large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz", 70, "filename"),
        ("trace_file_list/inference_rank_1.json.gz", 1, "distributedInfo"),
        ("mtia_inference_trace/mtia_inference_rank_0.json.gz", 0, "filename"),
        ("nccl_parser_config/nccl_data.json.gz", 0, "distributedInfo"),
    ],
)
def test_rank_comes_from_distributed_info_then_file_name_then_zero(
    loaded, rel: str, rank: int, source: str
) -> None:
    trace, doc = _get(loaded, rel)
    assert trace.rank == rank
    assert trace.meta.rank_source == source
    info = doc.get("distributedInfo") or {}
    assert trace.meta.world_size == info.get("world_size")


@pytest.mark.parametrize(
    "rel",
    [
        "nccl_parser_config/nccl_data.json.gz",  # float µs < 2**43 (float path)
        "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",  # epoch µs floats
        "mtia_inference_trace/mtia_inference_rank_0.json.gz",
        "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "trace_filter/sampled_rank-0.json.gz",  # integer µs
    ],
)
def test_times_are_the_exact_nanoseconds_of_the_decimal_text(loaded, rel: str) -> None:
    trace, _ = _get(loaded, rel)
    doc = _load_json(shared_path("kineto", "hta", rel), exact=True)
    rows = _split(doc)
    for table, key in ((trace.gpu, "gpu"), (trace.host, "host")):
        want = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in rows[key])
        got = sorted(zip(table["start_ns"].tolist(), table["end_ns"].tolist(), strict=True))
        assert got == want


def test_float_timestamps_keep_sub_microsecond_digits(loaded) -> None:
    trace, _ = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    # {"cat": "kernel", "name": "void cudnn::bn_bw_1C11_kernel_new<...>", "ts": 4458676983543.183,
    #  "dur": 41.407, ...} is the first kernel of the file
    row = trace.gpu[trace.gpu["correlation"] == 57541].iloc[0]
    assert row["start_ns"] == 4_458_676_983_543_183
    assert row["end_ns"] - row["start_ns"] == 41_407
    trace, _ = _get(loaded, "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    steps = trace.steps()
    # "ProfilerStep#102" has "ts": 1712195495537248.299; beyond 2**43 µs a double holds only
    # ...248.25, so this needs the reader's exact decimal fallback
    assert steps.loc[steps["step"] == 102, "start_ns"].item() == 1_712_195_495_537_248_299


def test_launch_attributes_and_device_fields_of_an_a100_kernel(loaded) -> None:
    trace, _ = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    row = trace.gpu[trace.gpu["correlation"] == 57541].iloc[0]
    assert (row["device"], row["stream"], row["external_id"]) == (0, 7, 12353)
    assert (row["grid_x"], row["grid_y"], row["grid_z"]) == (512, 1, 1)
    assert (row["block_x"], row["block_y"], row["block_z"]) == (512, 1, 1)
    assert row["registers_per_thread"] == 40
    assert row["shared_mem_bytes"] == 400
    assert row["blocks_per_sm"] == pytest.approx(4.740741)
    assert row["warps_per_sm"] == pytest.approx(75.851852)
    assert row["est_achieved_occupancy"] == 75
    dev = trace.gpu_device
    assert (dev.name, dev.vendor, dev.arch, dev.sm_count) == (
        "NVIDIA A100-PG509-200",
        "NVIDIA",
        "sm_80",
        108,
    )
    assert (dev.smem_per_block_optin_bytes, dev.smem_per_sm_bytes) == (166912, 167936)
    assert (dev.regs_per_sm, dev.max_threads_per_sm, dev.total_memory_bytes) == (
        65536,
        2048,
        42297524224,
    )


def test_memcpy_direction_and_bytes_come_from_the_event(loaded) -> None:
    trace, doc = _get(loaded, "trace_filter/sampled_rank-0.json.gz")
    mem = trace.gpu[trace.gpu["kind"] == "memcpy"]
    raw = [e for e in _split(doc)["gpu"] if e["cat"] == "gpu_memcpy"]
    want = Counter(re.match(r"Memcpy (\w+)", e["name"]).group(1) for e in raw)
    assert Counter(mem["copy_kind"].astype(str)) == want
    assert sorted(mem["bytes"].tolist()) == sorted(e["args"]["bytes"] for e in raw)
    assert trace.gpu.loc[trace.gpu["kind"] != "memcpy", "copy_kind"].isna().all()


def test_rocm_trace_strings_as_streams_are_no_stream_and_vendor_is_amd(loaded) -> None:
    trace, _ = _get(loaded, "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    hip = trace.host[trace.host["name"].astype(str).str.startswith("hip")]
    assert len(hip) == 21  # hip* runtime calls with "stream": "0x0"
    assert set(trace.gpu["stream"]) == {0}
    assert {d.vendor for d in trace.meta.devices} == {"AMD"}
    assert {d.warp_size for d in trace.meta.devices} == {64}
    assert {d.smem_per_sm_bytes for d in trace.meta.devices} == {65536}
    mem = trace.gpu[trace.gpu["kind"] == "memcpy"]
    assert set(mem["copy_kind"].astype(str)) == {"HtoD"}
    # the GPU-side ProfilerStep#1 is a gpu_user annotation, not a second step
    assert trace.steps()["step"].tolist() == [1, 2]
    gu = trace.annotations[trace.annotations["kind"] == "gpu_user"]
    assert gu.loc[gu["name"] == "ProfilerStep#1", "step"].tolist() == [1]


def test_mtia_device_events_are_kernels_and_vendor_is_mtia(loaded) -> None:
    trace, doc = _get(loaded, "mtia_inference_trace/mtia_inference_rank_0.json.gz")
    assert [(d.id, d.name, d.vendor) for d in trace.meta.devices] == [(17, "ARTEMIS", "MTIA")]
    n = sum(
        1
        for e in doc["traceEvents"]
        if e.get("cat") == "mtia_ccp_events" and type((e.get("args") or {}).get("stream")) is int
    )
    assert int((trace.gpu["kind"] == "kernel").sum()) == n == 1313


def test_stream_less_cuda_sync_rows_are_gpu_rows_on_stream_minus_one(loaded) -> None:
    trace, doc = _get(loaded, "critical_path/cuda_event_sync/event_sync_trace.json.gz")
    sync = trace.gpu[trace.gpu["kind"] == "sync"]
    raw = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_sync"]
    assert len(sync) == len(raw) == 4
    assert Counter(zip(sync["name"].astype(str), sync["stream"].tolist(), strict=True)) == Counter(
        (e["name"], e["args"]["stream"]) for e in raw
    )
    assert (sync.loc[sync["name"] == "Event Sync", "stream"] == -1).all()


def test_inductor_launcher_cpu_op_with_a_stream_arg_stays_on_the_host(loaded) -> None:
    trace, _ = _get(loaded, "triton_example/triton_example.json.gz")
    name = "triton_poi_fused_add_cos_sin_0"
    assert trace.gpu["name"].astype(str).tolist() == [name]
    assert trace.host.loc[trace.host["name"] == name, "cat"].astype(str).tolist() == ["cpu_op"]


def test_old_2022_categories_and_lowercase_external_id(loaded) -> None:
    trace, doc = _get(loaded, "trace_file_list/inference_rank_1.json.gz")
    assert set(trace.gpu["kind"]) == {"kernel"}
    assert set(trace.host["cat"].astype(str)) == {"Runtime"}
    want = sorted(e["args"]["external id"] for e in doc["traceEvents"] if e.get("cat") == "Runtime")
    assert sorted(trace.host["external_id"].tolist()) == want


def test_input_shapes_are_compact_json(loaded) -> None:
    trace, doc = _get(loaded, "trace_filter/sampled_rank-0.json.gz")
    raw = [e for e in _split(doc)["host"]]
    dims = Counter(
        json.dumps(e["args"]["Input Dims"], separators=(",", ":"))
        for e in raw
        if "Input Dims" in (e.get("args") or {})
    )
    assert sum(dims.values()) > 100
    assert Counter(trace.host["input_dims"].dropna()) == dims
    types = Counter(
        json.dumps(e["args"]["Input type"], separators=(",", ":"))
        for e in raw
        if "Input type" in (e.get("args") or {})
    )
    assert Counter(trace.host["input_types"].dropna()) == types


def test_kernels_link_to_their_runtime_launch_by_correlation(loaded) -> None:
    trace, doc = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    rows = _split(doc)
    host_corr = {e["args"]["correlation"] for e in rows["host"] if "correlation" in e["args"]}
    want = sum(e["args"].get("correlation") in host_corr for e in rows["gpu"])
    got = trace.gpu["correlation"].isin(trace.host["correlation"][trace.host["correlation"] >= 0])
    assert int(got.sum()) == want == len(rows["gpu"])


def test_collective_metadata_is_kept_verbatim(loaded) -> None:
    trace, doc = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    raw = [
        e
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and "Collective name" in (e.get("args") or {})
    ]
    want = Counter(
        (
            e["name"],
            json.dumps({k: v for k, v in e["args"].items() if k in COMM_KEYS}, sort_keys=True),
        )
        for e in raw
    )
    got = Counter()
    for table in (trace.gpu, trace.host):
        for name, ca in zip(table["name"], table["comm_args"], strict=True):
            if ca:
                got[(name, json.dumps(ca, sort_keys=True))] += 1
    assert got == want
    nccl_kernels = trace.gpu[trace.gpu["name"].astype(str).str.startswith("ncclKernel")]
    assert len(nccl_kernels) == 21 and nccl_kernels["comm_args"].map(bool).all()
    # torch <= 2.0 era: record_param_comms without metadata still marks a collective
    trace, _ = _get(loaded, "trace_filter/sampled_rank-0.json.gz")
    rpc = trace.host[trace.host["name"] == "record_param_comms"]
    assert len(rpc) > 0 and all(c == {} for c in rpc["comm_args"])


def test_uint64_comms_id_keeps_its_full_value(loaded) -> None:
    trace, _ = _get(loaded, "large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz")
    rpc = trace.host[trace.host["name"] == "record_param_comms"]
    assert rpc["comm_args"].iloc[0] == {"Comms Id": 10159970886766084423}


def test_gpu_user_annotations_keep_their_stream(loaded) -> None:
    trace, doc = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    raw = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
    gu = trace.annotations[trace.annotations["kind"] == "gpu_user"]
    assert Counter(zip(gu["name"].astype(str), gu["stream"].tolist(), strict=True)) == Counter(
        (e["name"], e["tid"]) for e in raw
    )


def test_process_and_thread_names_from_metadata_events(loaded) -> None:
    trace, _ = _get(loaded, "nccl_parser_config/nccl_data.json.gz")
    extra = trace.meta.extra
    assert extra["process_names"][2910249] == "python3.10"
    assert extra["thread_names"][0] == {7: "stream 7 ", 40: "stream 40 "}
    assert extra["distributedInfo"]["nccl_version"] == "2.17.1"
    assert trace.meta.base_time_ns == 1711964646000000000


def graph_trace() -> dict[str, Any]:
    """Three kernels of one ``cudaGraphLaunch`` (correlation 77) and an eager launch (78)."""
    launch = kj.runtime("cudaGraphLaunch", 100, 20, 77, **{"External id": 5})
    kernels = [
        kj.kernel(f"graph_kernel_{i}", 130 + 10 * i, 8, 77, stream=7 + i % 2, device=0,
                  **{"graph node id": i})
        for i in range(3)
    ]  # fmt: skip
    other = kj.kernel("eager", 200, 5, 78)
    eager = kj.runtime("cudaLaunchKernel", 190, 4, 78)
    return kj.trace([launch, *kernels, other, eager])


def test_cuda_graph_kernels_all_link_to_their_graph_launch(tmp_path: Path) -> None:
    p = kj.write(tmp_path / "graph.json", graph_trace())
    trace = read_kineto(p)
    joined = trace.gpu.merge(trace.host, on="correlation", suffixes=("", "_launch"))
    by_launch = joined.groupby(joined["name_launch"].astype(str))["name"].apply(
        lambda s: sorted(map(str, s))
    )
    assert by_launch["cudaGraphLaunch"] == ["graph_kernel_0", "graph_kernel_1", "graph_kernel_2"]
    assert by_launch["cudaLaunchKernel"] == ["eager"]
    assert sorted(trace.gpu["stream"].tolist()) == [7, 7, 7, 8]


def counter_events() -> list[dict[str, Any]]:
    memory = {
        "Total Reserved": 2097152,
        "Total Allocated": 512,
        "Bytes": 512,
        "Device Type": 1,
        "Device Id": 3,
    }
    return [
        kj.event("aten::add", "cpu_op", 1, 2),
        kj.counter("power", 5.5, watts=300),
        kj.counter("clocks", 6, sm=1980, mem=2619.5),
        kj.instant("[memory]", "cpu_instant_event", 7, **memory),
    ]


def test_counter_and_memory_events_become_counters(tmp_path: Path) -> None:
    trace = read_kineto(kj.write(tmp_path / "c.json", kj.trace(counter_events())))
    got = sorted(
        zip(
            trace.counters["name"].astype(str),
            trace.counters["ts_ns"].tolist(),
            trace.counters["value"].tolist(),
            trace.counters["device"].tolist(),
            strict=True,
        )
    )
    assert got == [
        ("Total Allocated", 7000, 512.0, 3),
        ("Total Reserved", 7000, 2097152.0, 3),
        ("clocks.mem", 6000, 2619.5, -1),
        ("clocks.sm", 6000, 1980.0, -1),
        ("power", 5500, 300.0, -1),
    ]


def python_events() -> list[dict[str, Any]]:
    return [
        kj.event("train.py(10): step", "python_function", 1, 9),
        kj.event("aten::mm", "cpu_op", 2, 3),
    ]


def test_python_functions_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    p = kj.write(tmp_path / "py.json", kj.trace(python_events()))
    assert read_kineto(p).host["cat"].astype(str).tolist() == ["cpu_op"]
    assert sorted(read_kineto(p, include_python=True).host["cat"].astype(str)) == [
        "cpu_op",
        "python_function",
    ]


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank-3.json", 3),
        ("rank_12.json.gz", 12),
        ("Rank7.pt.trace.json", 7),
        ("mtia_inference_rank_0.json.gz", 0),
        ("trainer.5.json.gz", 5),
        ("host_1234.1717171717171717171.pt.trace.json", None),
        ("worker.pt.trace.json", None),
        ("crank5.json", None),
    ],
)
def test_rank_from_file_name_patterns(name: str, rank: int | None) -> None:
    assert rank_from_filename(name) == rank


ONE_OP = kj.event("a", "cpu_op", 1, 1)
"""One ``cpu_op`` without ``args``: the least a readable trace holds."""


def test_explicit_rank_overrides_the_file(tmp_path: Path) -> None:
    p = kj.write(tmp_path / "rank-2.json", kj.trace([ONE_OP], rank=4))
    assert (read_kineto(p).rank, read_kineto(p).meta.rank_source) == (4, "distributedInfo")
    assert (read_kineto(p, rank=9).rank, read_kineto(p, rank=9).meta.rank_source) == (9, "argument")


def test_several_files_are_sorted_by_rank_with_progress(tmp_path: Path) -> None:
    paths = [kj.write(tmp_path / f"rank-{r}.json", kj.trace([ONE_OP])) for r in (2, 0, 1)]
    calls: list[tuple[int, int, str]] = []
    traces = read_kineto_files(paths, progress=lambda *a: calls.append(a))
    assert [t.rank for t in traces] == [0, 1, 2]
    assert calls == [(1, 3, "rank-2.json"), (2, 3, "rank-0.json"), (3, 3, "rank-1.json")]
    assert np.unique([t.meta.source_path for t in traces]).size == 3


COMMITTED = sorted(p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*.json.gz"))


@pytest.mark.parametrize("rel", COMMITTED)
def test_every_committed_sample_trace_loads_without_shared_data(rel: str) -> None:
    path = SAMPLES / rel
    trace = read_kineto(path)
    rows = _split(_load_json(path))
    assert len(trace.gpu) == len(rows["gpu"])
    assert len(trace.host) == len(rows["host"])
    assert len(trace.steps()) >= 2


def test_real_samples_are_the_hta_fixtures_with_their_licence() -> None:
    real = SAMPLES / "real"
    assert "MIT License" in (real / "LICENSE.HTA").read_text(encoding="utf-8")
    for folder, name, kernels in (
        ("trace_compare_base", "base.json.gz", 6),
        ("trace_compare_test", "test.json.gz", 5),
    ):
        trace = read_kineto(real / folder / name)
        assert trace.rank == 1
        assert int((trace.gpu["kind"] == "kernel").sum()) == kernels  # MANIFEST.md
        digest = hashlib.sha256((real / folder / name).read_bytes()).hexdigest()
        assert digest in (real / "ATTRIBUTION.md").read_text(encoding="utf-8")


def test_multi_member_gzip_is_read_whole(tmp_path: Path) -> None:
    text = kj.dumps(kj.trace([ONE_OP] * 3))
    half = len(text) // 2
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    assert len(read_kineto(p).host) == 3


_WORDS = st.sampled_from(
    [
        "Collective name",
        "Comms Id",
        "In msg nelems",
        "Process Group Name",
        "Process Group ",
        'x"Comms Id"Collective name"',
        "name",
        "",
    ]
)
_JSON = st.recursive(
    st.one_of(_WORDS, st.integers(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_WORDS, inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.lists(_JSON, max_size=8), st.booleans())
def test_one_scan_counts_what_the_four_counts_counted_in_json_text(
    events: list[Any], spaced: bool
) -> None:
    """In JSON text a marker's closing quote is followed by a structural character, never by
    the next marker's word, so the alternation's matches are exactly the four counts'."""
    from collectors.kineto.stream import _COMM_SCAN

    text = json.dumps(events, separators=(", ", ": ") if spaced else (",", ":")).encode()
    assert len(_COMM_SCAN.findall(text)) == sum(text.count(m) for m in COMM_SCAN)
