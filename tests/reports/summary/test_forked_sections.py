"""A rank's sections on two CPUs (:mod:`reports.summary.forked`) give exactly the serial entry
and digest; a section that fails in the helper is run again here, and one that fails
everywhere raises as the serial code does."""

from __future__ import annotations

import dataclasses
import os
import time

import pandas as pd
import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.errors import InputError
from collectors.load import load_traces
from reports.summary import forked
from reports.summary.assemble import rank_entry
from reports.summary.many_ranks import rank_digest
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES

OPTS, INPUTS = AnalysisOptions(), AnalysisInputs()


def _traces():
    return [
        *load_traces([SAMPLES / "synthetic_2rank"]),
        *load_traces([SAMPLES / "torch_cpu"]),
        training_run(late_rank=1, delay=150_000)[1],
    ]


def _same_digest(a, b) -> None:
    assert a.rank == b.rank and a.meta == b.meta and a.parts.keys() == b.parts.keys()
    for k, v in a.parts.items():
        if isinstance(v, pd.DataFrame):
            pd.testing.assert_frame_equal(v, b.parts[k])
        else:
            assert v == b.parts[k]


@pytest.mark.parametrize("trace", _traces(), ids=lambda t: f"rank{t.rank}-{len(t.gpu)}rows")
def test_two_cpus_give_the_serial_entry_and_digest(trace, monkeypatch) -> None:
    monkeypatch.setenv(forked.ENV, "2")
    assert forked.wanted(trace)
    entry, digest = forked.entry_and_digest(trace, OPTS, INPUTS)
    assert entry == rank_entry(trace, OPTS, INPUTS)
    assert list(entry) == list(rank_entry(trace, OPTS, INPUTS))
    _same_digest(digest, rank_digest(trace, OPTS, INPUTS))


def test_a_section_failing_in_the_helper_is_run_here(monkeypatch, tmp_path) -> None:
    trace = load_traces([SAMPLES / "torch_cpu"])[0]
    parent = os.getpid()

    def slow(t, o, i):
        time.sleep(0.5)  # the helper claims the other job meanwhile
        return 1

    def only_here(t, o, i):
        if os.getpid() != parent:
            (tmp_path / "helper-tried").write_text("1")
            raise RuntimeError("helper side")
        return {"ok": len(t.host)}

    todo = [("entry", "slow", slow), ("entry", "zz", only_here)]
    monkeypatch.setattr(forked, "jobs", lambda *args: todo)
    monkeypatch.setenv(forked.ENV, "2")
    entry, _ = forked.entry_and_digest(trace, OPTS, INPUTS)
    assert (tmp_path / "helper-tried").exists()
    assert entry == {"rank": trace.rank, "slow": 1, "zz": {"ok": len(trace.host)}}


def test_a_section_failing_everywhere_raises_its_error(monkeypatch) -> None:
    trace = load_traces([SAMPLES / "torch_cpu"])[0]

    def bad(t, o, i):
        raise InputError("bad section input", path="x.json")

    sections = (*forked.RANK_SECTIONS, ("zz_bad", bad))
    monkeypatch.setattr(forked, "RANK_SECTIONS", sections)
    monkeypatch.setenv(forked.ENV, "2")
    with pytest.raises(InputError, match="bad section input"):
        forked.entry_and_digest(trace, OPTS, INPUTS)


def test_jobs_that_share_tables_are_claimed_from_the_same_end() -> None:
    todo = forked.jobs()
    keys = [key for _, key, _ in todo]
    order = [keys[i] for i in forked.claim_order(todo)]
    assert sorted(order) == sorted(keys)  # every job once
    assert order[: len(forked.FRONT)] == list(forked.FRONT)  # this process's first claims
    assert order[::-1][: len(forked.BACK)] == list(forked.BACK)[::-1]  # the helper's


def test_the_first_error_in_the_serial_order_is_raised_whatever_the_claim_order(
    monkeypatch,
) -> None:
    """serving is claimed first (FRONT); an earlier job in the serial order that fails too
    must still be the error raised, as the serial code raises it."""
    trace = load_traces([SAMPLES / "torch_cpu"])[0]

    def failing(message: str):
        def fn(t, o, i):
            raise InputError(message, path="x.json")

        return fn

    todo = [
        ("entry", "window", failing("window first")),
        ("entry", "middle", lambda t, o, i: 1),
        ("entry", "serving", failing("serving later")),
    ]
    monkeypatch.setattr(forked, "jobs", lambda *args: todo)
    assert forked.claim_order(todo)[0] == 2
    for procs in ("1", "2"):
        monkeypatch.setenv(forked.ENV, procs)
        with pytest.raises(InputError, match="window first"):
            forked.entry_and_digest(trace, OPTS, INPUTS)


def test_small_traces_and_the_serial_setting_stay_in_this_process(monkeypatch) -> None:
    trace = load_traces([SAMPLES / "torch_cpu"])[0]
    monkeypatch.delenv(forked.ENV, raising=False)
    assert len(trace.host) + len(trace.gpu) < forked.MIN_EVENTS and not forked.wanted(trace)
    monkeypatch.setenv(forked.ENV, "1")
    monkeypatch.setattr(forked, "MIN_EVENTS", 0)
    assert not forked.wanted(trace)


@pytest.mark.parametrize("procs", ["1", "2"])
@pytest.mark.parametrize("parts", [True, False], ids=["parts kept", "parts not kept"])
def test_a_sole_rank_carries_its_critical_path_section_equal_to_the_combined_one(
    procs: str, parts: bool, monkeypatch
) -> None:
    from reports.summary.many_ranks import run_sections

    trace = training_run(n_small=40, small_host=20_000)[0]
    monkeypatch.setenv(forked.ENV, procs)
    entry, digest = forked.entry_and_digest(trace, OPTS, INPUTS, alone=True, parts=parts)
    serial = rank_digest(trace, OPTS, INPUTS)
    assert entry == rank_entry(trace, OPTS, INPUTS)
    if parts:
        _same_digest(dataclasses.replace(digest, alone={}), serial)
    else:
        assert "critical_path" not in digest.parts  # no part table built or sent back
        assert set(digest.parts) == set(serial.parts) - {"critical_path"}
    assert set(digest.alone) == {"critical_path"}
    combined = run_sections([serial], OPTS, INPUTS, lambda: [trace])
    assert digest.alone["critical_path"] == combined["critical_path"]
    assert run_sections([digest], OPTS, INPUTS, lambda: [trace]) == combined


def test_no_helper_without_the_memory_it_may_need(monkeypatch) -> None:
    from collectors.kineto import parallel as kineto_parallel
    from reports.summary import planning

    trace = load_traces([SAMPLES / "torch_cpu"])[0]
    monkeypatch.delenv(forked.ENV, raising=False)
    monkeypatch.delenv(kineto_parallel.ENV, raising=False)
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(forked, "MIN_EVENTS", 0)
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 64 << 30)
    assert forked.wanted(trace)
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 0)
    assert not forked.wanted(trace)


@pytest.mark.parametrize("procs", ["1", "2"])
@pytest.mark.parametrize("last", [0, 1], ids=["rank 0 last", "rank 1 last"])
def test_the_last_rank_carries_the_run_sections_combined_with_the_earlier_ranks(
    procs: str, last: int, monkeypatch
) -> None:
    from reports.summary.many_ranks import ranks_of, run_sections

    traces = training_run(late_rank=1, delay=150_000)
    first = rank_digest(traces[1 - last], OPTS, INPUTS)
    monkeypatch.setenv(forked.ENV, procs)
    entry, digest = forked.entry_and_digest(traces[last], OPTS, INPUTS, earlier=[first])
    serial = rank_digest(traces[last], OPTS, INPUTS)
    assert entry == rank_entry(traces[last], OPTS, INPUTS)
    _same_digest(dataclasses.replace(digest, early={}), serial)
    in_order = sorted([first, serial], key=lambda d: d.rank)
    combined = run_sections(in_order, OPTS, INPUTS, lambda: traces)
    ranks, value = digest.early["critical_path"]
    assert ranks == ranks_of(in_order) == ((0, None), (1, None))
    assert value == combined["critical_path"] and value["ranks"] == [0, 1]
    ranks, value = digest.early["comm_skew"]  # extracted, then combined in the rank's job
    assert ranks == ranks_of(in_order) and value == combined["comm_skew"] is not None
    mine = sorted([first, digest], key=lambda d: d.rank)
    assert run_sections(mine, OPTS, INPUTS, lambda: traces) == combined


@pytest.mark.parametrize("procs", ["1", "2"])
def test_a_last_rank_whose_parts_are_not_kept_gives_the_same_early_values_without_its_part(
    procs: str, monkeypatch
) -> None:
    from reports.summary.many_ranks import run_sections

    traces = training_run(late_rank=1, delay=150_000)
    first = rank_digest(traces[0], OPTS, INPUTS)
    monkeypatch.setenv(forked.ENV, procs)
    kept = forked.entry_and_digest(traces[1], OPTS, INPUTS, earlier=[first])
    bare = forked.entry_and_digest(traces[1], OPTS, INPUTS, parts=False, earlier=[first])
    assert bare[0] == kept[0] and bare[1].early == kept[1].early
    assert "critical_path" in kept[1].parts and "critical_path" not in bare[1].parts
    assert run_sections([first, bare[1]], OPTS, INPUTS, lambda: traces) == run_sections(
        [first, kept[1]], OPTS, INPUTS, lambda: traces
    )


def test_an_early_value_is_taken_only_for_the_ranks_it_was_computed_for() -> None:
    from reports.summary.many_ranks import ranks_of, run_sections

    traces = training_run(late_rank=1, delay=150_000)
    d0, d1 = (rank_digest(t, OPTS, INPUTS) for t in traces)
    combined = run_sections([d0, d1], OPTS, INPUTS, lambda: traces)["critical_path"]
    d1.early["critical_path"] = (ranks_of([d0, d1]), {"taken": True})
    assert run_sections([d0, d1], OPTS, INPUTS, lambda: traces)["critical_path"] == {"taken": True}
    other = dataclasses.replace(d0, meta=dataclasses.replace(d0.meta, source_path="other.json"))
    assert run_sections([other, d1], OPTS, INPUTS, lambda: traces)["critical_path"] == combined
    alone = run_sections([d1], OPTS, INPUTS, lambda: traces[1:])["critical_path"]
    assert alone != {"taken": True} and alone["ranks"] == [1]


def test_this_process_drops_its_derived_tables_before_it_waits_for_the_helper(
    monkeypatch,
) -> None:
    from analyzers import memo
    from analyzers.collectives import collectives_table

    monkeypatch.setenv(forked.ENV, "2")
    trace = load_traces([SAMPLES / "synthetic_2rank"])[0]
    at_read: list[tuple[bool, int]] = []
    trims: list[int] = []
    real_fork = forked.fork_helper

    def fork(child):
        helper = real_fork(child)
        real_read = helper.read

        def read():
            at_read.append((bool(memo._slots.get(id(trace))), len(trims)))
            return real_read()

        helper.read = read
        return helper

    monkeypatch.setattr(forked, "fork_helper", fork)
    monkeypatch.setattr(forked, "release_freed_memory", lambda: trims.append(1))
    entry, _ = forked.entry_and_digest(trace, OPTS, INPUTS)
    assert at_read == [(False, 1)]  # nothing memoised left, the pages handed back once
    assert entry == rank_entry(trace, OPTS, INPUTS)
    assert collectives_table.cached(trace)  # the serial reference memoised it again
