"""Many-rank analysis in worker processes: the summary of ``build_summary(load_traces(...))``,
bad files reported by name, the results cache, pool sizing."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.errors import InputError, UsageError
from collectors.kineto.parallel import usable_cpus
from collectors.load import load_traces
from reports.summary import build_summary, planning
from reports.summary.engine import analyze_paths
from reports.summary.many_ranks import RUN_REDUCERS
from reports.summary.planning import Unit, pool_size
from reports.summary.registry import RUN_SECTIONS
from tests.support import kineto_json as kj
from tests.support.env import SAMPLES, shared_path
from tests.support.synthetic import write_samples

RANKS = 8


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ranks")
    write_samples(d, ranks=RANKS, steps=2, seed=11)
    return d


@pytest.fixture(scope="module")
def reference(ranks_dir: Path) -> dict[str, Any]:
    """The sequential path: every trace in memory, then every section."""
    return build_summary(load_traces([ranks_dir]))


def tiny_trace(rank: int, kernel_us: int = 2) -> dict[str, Any]:
    return kj.trace([kj.kernel("k", 1, kernel_us, 1)], rank=rank)


def write_json(path: Path, doc: dict[str, Any]) -> Path:
    return kj.write(path, doc)


def test_the_synthetic_ranks_exercise_the_cross_rank_sections(reference: dict[str, Any]) -> None:
    assert [r["rank"] for r in reference["ranks"]] == list(range(RANKS))
    assert reference["comm_skew"]["matched"] > 0
    assert len(reference["run"]["ranks"]) == RANKS


def test_a_pool_of_two_workers_gives_the_sequential_summary(
    ranks_dir: Path, reference: dict[str, Any]
) -> None:
    res = analyze_paths([ranks_dir], scheduler="processes", workers=2, use_cache=False)
    assert res.summary == reference
    assert (res.scheduler, res.workers, res.errors, res.exit_code) == ("processes", 2, [], 0)
    peaks = res.peak_rss_by_worker()
    assert 1 <= len(peaks) <= 2 and all(p > 0 for p in peaks.values())
    assert {u.cache_status for u in res.units} == {"bypass"}


def test_one_corrupt_file_among_the_ranks_is_named_and_the_rest_analysed(
    ranks_dir: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    d = tmp_path / "run"
    shutil.copytree(ranks_dir, d)
    bad = d / f"rank-{RANKS}.json.gz"
    bad.write_bytes((d / "rank-0.json.gz").read_bytes()[:300])  # cut short
    calls: list[tuple[int, int, str]] = []
    res = analyze_paths(
        [d], scheduler="processes", workers=2, cache_dir=tmp_path / "cache",
        progress=lambda done, total, label: calls.append((done, total, label)),
    )  # fmt: skip
    expected = json.loads(json.dumps(reference).replace(str(ranks_dir), str(d)))
    assert res.summary == expected
    assert [e.path for e in res.errors] == [str(bad)]
    assert "truncated" in res.errors[0].message
    assert res.errors[0].line().startswith(str(bad))
    assert res.exit_code == 2
    assert [c[:2] for c in calls] == [(i, RANKS + 1) for i in range(1, RANKS + 2)]
    assert bad.name in {c[2] for c in calls}

    # again, from the cache the workers filled (which cache level answers is tested in
    # test_cached_reanalysis_...: a concurrent edit of the sources can change the keys here)
    again = analyze_paths([d], cache_dir=tmp_path / "cache")
    assert again.summary == res.summary
    assert [e.path for e in again.errors] == [str(bad)]


def test_sources_and_run_sections_name_the_copied_files(ranks_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "copy"
    d.mkdir()
    for r in (0, 1):
        shutil.copyfile(ranks_dir / f"rank-{r}.json.gz", d / f"rank-{r}.json.gz")
    res = analyze_paths([d], scheduler="sync", cache_dir=tmp_path / "cache")
    assert res.summary == build_summary(load_traces([d]))
    assert res.summary["sources"] == [str(d / "rank-0.json.gz"), str(d / "rank-1.json.gz")]


def test_cached_reanalysis_reads_results_then_traces_and_changes_nothing(
    tmp_path: Path,
) -> None:
    d = tmp_path / "run"
    d.mkdir()
    for r in range(3):
        write_json(d / f"rank-{r}.json", tiny_trace(r, kernel_us=2 + r))
    cache = tmp_path / "cache"
    first = analyze_paths([d], scheduler="sync", cache_dir=cache)
    assert first.summary == build_summary(load_traces([d]))
    assert [u.cache_status for u in first.units] == ["built"] * 3
    second = analyze_paths([d], cache_dir=cache)  # default executor: no pool needed
    assert [u.cache_status for u in second.units] == ["results"] * 3
    assert second.summary == first.summary
    assert second.scheduler == "in-process"
    assert any("cached" in n for n in second.notes)
    from collectors.cache import TraceCache

    TraceCache(cache).results.clear()
    third = analyze_paths([d], scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in third.units] == ["hit"] * 3
    assert third.summary == first.summary
    other = analyze_paths([d], AnalysisOptions(all_events=True), scheduler="sync", cache_dir=cache)
    assert [u.cache_status for u in other.units] == ["hit"] * 3  # options are part of the key
    assert other.summary == build_summary(load_traces([d]), AnalysisOptions(all_events=True))


def test_no_cache_neither_reads_nor_writes_the_cache(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    write_json(d / "rank-0.json", tiny_trace(0))
    cache = tmp_path / "cache"
    res = analyze_paths([d], use_cache=False, cache_dir=cache)
    assert [u.cache_status for u in res.units] == ["bypass"]
    assert not cache.exists()
    assert res.summary == build_summary(load_traces([d]))


def test_a_second_file_claiming_a_rank_is_reported_and_the_first_kept(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    first = write_json(d / "a.json", tiny_trace(1))
    second = write_json(d / "b.json", tiny_trace(1, kernel_us=9))
    write_json(d / "c.json", tiny_trace(0))
    with pytest.raises(InputError) as seq:
        load_traces([d])
    res = analyze_paths([d], scheduler="sync", use_cache=False)
    assert [e.path for e in res.errors] == [str(second)] == [seq.value.path]
    assert "claims rank 1" in res.errors[0].message and str(first) in res.errors[0].message
    assert res.summary == build_summary(load_traces([d / "c.json", first]))


def test_a_single_unreadable_input_raises_the_same_error_as_the_sequential_path(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "rank-0.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(InputError) as seq:
        load_traces([bad])
    with pytest.raises(InputError) as par:
        analyze_paths([bad], use_cache=False)
    assert str(par.value) == str(seq.value)


def test_when_no_input_is_readable_every_file_is_named(tmp_path: Path) -> None:
    for r in range(2):
        (tmp_path / f"rank-{r}.json").write_text("not json")
    with pytest.raises(InputError) as err:
        analyze_paths([tmp_path], scheduler="sync", use_cache=False)
    assert "no input could be analysed" in str(err.value)
    assert "rank-0.json" in str(err.value) and "rank-1.json" in str(err.value)


def test_missing_paths_and_bad_options_are_errors_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        analyze_paths([tmp_path / "absent.json"])
    write_json(tmp_path / "rank-0.json", tiny_trace(0))
    with pytest.raises(UsageError):
        analyze_paths([tmp_path], workers=0)
    with pytest.raises(UsageError):
        analyze_paths([tmp_path], scheduler="threads")


def test_nsys_exports_are_read_as_one_run_like_the_sequential_path(tmp_path: Path) -> None:
    a = shared_path("nsys", "nsys2023.1.2.43__recon-stream__report13.sqlite")
    b = shared_path("nsys", "nsys2025.5.2.266__cuda-perf-sandbox__report1.sqlite")
    units = planning.plan_units([a, b])
    assert [(u.kind, len(u.paths)) for u in units] == [("nsys", 2)]
    res = analyze_paths([a, b], cache_dir=tmp_path / "cache")
    assert res.summary == build_summary(load_traces([a, b]))
    assert [r["rank"] for r in res.summary["ranks"]] == [0, 1]


def test_every_run_section_has_a_per_rank_reducer() -> None:
    missing = [key for key, _ in RUN_SECTIONS if key not in RUN_REDUCERS]
    assert not missing, (
        f"run sections {missing} have no reducer in reports.summary.many_ranks.RUN_REDUCERS: "
        "analyze_paths computes them from whole Traces re-read in one process; add a reducer"
    )


def test_pool_is_sized_down_when_memory_is_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [write_json(tmp_path / f"rank-{r}.json", tiny_trace(r)) for r in range(4)]
    units = [Unit("kineto", (p,)) for p in paths]
    peak = planning.estimate_peak_bytes(units[0], None)
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: int(2.6 * peak))
    n, planned, _, notes = pool_size(units, 4, None)
    assert (n, planned) == (2, peak)  # floor(0.8 * 2.6) = 2 workers fit
    assert notes and "using 2" in notes[0]
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 64 * peak)
    assert pool_size(units, None, None)[0] == min(4, usable_cpus())


def test_peak_estimate_reads_the_uncompressed_size_of_gzip_files(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(gzip.compress(b" " * 3_000_000))
    assert planning._json_bytes(p) == 3_000_000
    est = planning.estimate_peak_bytes(Unit("kineto", (p,)), None)
    assert est == planning.WORKER_BASE_BYTES + int(planning.PARSE_BYTES_PER_JSON_BYTE * 3_000_000)


def test_side_inputs_that_cannot_go_to_workers_are_used_in_this_process(tmp_path: Path) -> None:
    for r in range(3):
        write_json(tmp_path / f"rank-{r}.json", tiny_trace(r))
    inputs = AnalysisInputs(run_meta={"callback": lambda: None})  # cannot be pickled
    res = analyze_paths([tmp_path], inputs=inputs, workers=2, use_cache=False)
    assert res.scheduler == "in-process"
    assert any("side inputs" in n for n in res.notes)
    assert res.summary == build_summary(load_traces([tmp_path]), None, inputs)


@pytest.mark.parametrize("procs", ["1", "2"])
def test_in_this_process_the_last_rank_combines_the_critical_path(
    procs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from reports.summary import forked

    monkeypatch.setenv(forked.ENV, procs)
    paths = [SAMPLES / "synthetic_8rank"]
    want = build_summary(load_traces(paths))
    assert want["critical_path"]["ranks"] == list(range(8))

    def no_combine(*args: Any) -> Any:
        raise AssertionError("combined at the end, not by the last rank")

    red = RUN_REDUCERS["critical_path"]
    monkeypatch.setitem(RUN_REDUCERS, "critical_path", dataclasses.replace(red, combine=no_combine))
    res = analyze_paths(paths, scheduler="sync", use_cache=False)
    assert res.summary == want
