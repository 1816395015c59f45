"""End to end on the synthetic multi-rank Kineto traces (tests.support.synthetic), through the
Kineto reader: exposed communication per step against the generator's ground truth (by
construction), sizes against the raw ``record_param_comms`` args, and skew against the NCCL
kernel durations read from the raw JSON files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.collectives import collectives_table
from analyzers.comm import exposed_by_collective, window_collectives
from analyzers.skew import cross_rank_skew
from collectors.load import load_traces
from tests.support.raw_kineto import trace_events
from tests.support.synthetic import read_ground_truth, write_samples

RANKS, STEPS = 3, 5


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    out = tmp_path_factory.mktemp("synthetic")
    write_samples(out, ranks=RANKS, steps=STEPS, seed=11)
    return out, load_traces([out])


def _raw(folder: Path, rank: int) -> list[dict]:
    return [e for e in trace_events(folder / f"rank-{rank}.json.gz") if e.get("ph") == "X"]


def test_exposed_communication_per_step_is_the_ground_truth(run: tuple) -> None:
    folder, traces = run
    truth = {t["rank"]: t["windows"]["default"] for t in read_ground_truth(folder)}
    for t in traces:
        ex = exposed_by_collective(t)
        gt = truth[t.rank]
        assert ex.exposed_ns == gt["overlap"]["exposed_comm_ns"]
        assert ex.comm_ns == gt["overlap"]["comm_ns"]
        per_step = {
            r.step: r.exposed_ns for r in ex.by_step.itertuples() if r.label == "all_reduce"
        }
        assert per_step == {s["step"]: s["exposed_comm_ns"] for s in gt["steps"]}


def test_sizes_and_groups_come_from_record_param_comms(run: tuple) -> None:
    folder, traces = run
    elt = {"Float": 4, "BFloat16": 2, "Half": 2}
    for t in traces:
        ops = [e for e in _raw(folder, t.rank) if e["name"] == "record_param_comms"]
        want = sorted(e["args"]["In msg nelems"] * elt[e["args"]["dtype"]] for e in ops)
        c = collectives_table(t)
        assert sorted(c["in_bytes"]) == want
        assert set(c["group_size"]) == {RANKS}
        assert (c["collective"] == "all_reduce").all()


def test_skew_per_step_from_the_raw_kernel_durations(run: tuple) -> None:
    folder, traces = run
    s = cross_rank_skew(traces)
    assert s.mismatched == 0
    # raw NCCL kernel durations in ns, per rank, in launch order (one per step); the window
    # drops the last step
    durs = {}
    for r in range(RANKS):
        ev = _raw(folder, r)
        ks = sorted((e for e in ev if e["name"].startswith("ncclDevKernel")), key=lambda e: e["ts"])
        durs[r] = [round(e["dur"] * 1000) for e in ks]
    n_window = len(window_collectives(traces[0]))
    assert len(s.matched) == n_window
    m = s.matched.sort_values("step")  # one all-reduce per step
    for i, row in enumerate(m.itertuples()):
        d = [durs[r][i] for r in range(RANKS)]
        assert row.transfer_ns == min(d)
        assert row.arrival_skew_ns == max(d) - min(d)
        assert row.late_rank == d.index(min(d))
        assert row.ranks == tuple(range(RANKS))
    assert s.per_rank["wait_ns"].sum() == sum(
        sum(durs[r][i] - min(durs[q][i] for q in range(RANKS)) for r in range(RANKS))
        for i in range(n_window)
    )
