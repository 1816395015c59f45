"""The synthetic generator: deterministic bytes, and ground truth that a brute-force count on a
1-ns grid of the written JSON reproduces (independent of ``analyzers/`` and of the reader)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.kineto import read_kineto_files
from tests.support.env import SAMPLES
from tests.support.raw_kineto import trace_events
from tests.support.synthetic import GROUND_TRUTH_FILE, main, read_ground_truth, write_samples

STEP = re.compile(r"^ProfilerStep#(\d+)")


def _ns(v: Any) -> int:
    return int((Decimal(v) * 1000).to_integral_value())


def _events(path: Path) -> list[dict[str, Any]]:
    return trace_events(path, exact=True)


def _brute_force_steps(
    events: list[dict[str, Any]], steps: list[tuple[int, int, int]]
) -> list[dict[str, Any]]:
    """Steps on the GPU clock (metrics.md §7) by painting a 1-ns grid: every GPU event of the
    file belongs to the step whose range holds its launching call's start; a step runs on the
    GPU from the previous step's last GPU end (the first: from its host start, or the end of
    earlier GPU work when later, but no later than its first event) to its own last GPU end."""
    launch = {
        e["args"]["correlation"]: _ns(e["ts"]) for e in events if e.get("cat") == "cuda_runtime"
    }
    gpu = [
        (_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"], launch[e["args"]["correlation"]])
        for e in events
        if e.get("ph") == "X" and e["cat"] in ("kernel", "gpu_memcpy")
    ]
    lo = min(s for s, _, _, _ in gpu)
    hi = max(e for _, e, _, _ in gpu)
    comp, comm, busy = (np.zeros(hi - lo, dtype=bool) for _ in range(3))
    for s, e, name, _ in gpu:
        busy[s - lo : e - lo] = True
        grid = comm if name.startswith("nccl") else None if name.startswith("Memcpy") else comp
        if grid is not None:
            grid[s - lo : e - lo] = True
    rows = []
    prev_end: int | None = None
    for n, s, e in steps:
        mine = [g for g in gpu if s <= g[3] < e]
        first = min(g[0] for g in mine)
        last = max(g[1] for g in mine)
        if prev_end is None:
            earlier = [g[1] for g in gpu if g[0] < first]
            g0 = min(first, max([s, *earlier]))
        else:
            g0 = prev_end
        prev_end = g1 = max(last, g0)
        a, b = g0 - lo, g1 - lo
        lags = sorted(g[0] - g[3] for g in mine)
        k = len(lags)
        lag = lags[k // 2] if k % 2 else round((lags[k // 2 - 1] + lags[k // 2]) / 2)
        rows.append(
            {
                "step": n,
                "start_ns": s,
                "end_ns": e,
                "duration_ns": e - s,
                "gpu_start_ns": g0,
                "gpu_end_ns": g1,
                "gpu_duration_ns": g1 - g0,
                "compute_ns": int(comp[a:b].sum()),
                "exposed_comm_ns": int((comm & ~comp)[a:b].sum()),
                "idle_ns": (g1 - g0) - int(busy[a:b].sum()),
                "work_events": len(mine),
                "work_ns": sum(g[1] - g[0] for g in mine),
                "launch_lag_ns": lag,
                "steps_behind": lag / (e - s),
            }
        )
    return rows


def _brute_force(events: list[dict[str, Any]], all_events: bool) -> dict[str, Any]:
    """Metrics of one rank by painting every GPU event on a 1-ns grid.

    Window (metrics.md §2): with two or more ProfilerSteps, keep GPU events whose correlation
    belongs to a runtime call starting before the last step starts.  Types by name: ``nccl*``
    communication, ``Memcpy*`` memory, anything else computation.
    """
    steps = sorted(
        (int(m.group(1)), _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]))
        for e in events
        if e.get("ph") == "X" and (m := STEP.match(e["name"]))
    )
    gpu = [e for e in events if e.get("ph") == "X" and e["cat"] in ("kernel", "gpu_memcpy")]
    if not all_events and len(steps) >= 2:
        cutoff = steps[-1][1]
        kept = {
            e["args"]["correlation"]
            for e in events
            if e.get("cat") == "cuda_runtime" and _ns(e["ts"]) < cutoff
        }
        gpu = [e for e in gpu if e["args"]["correlation"] in kept]
        steps = steps[:-1]
    iv = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]) for e in gpu]
    lo = min(s for s, _, _ in iv)
    hi = max(e for _, e, _ in iv)
    comp = np.zeros(hi - lo, dtype=bool)
    comm = np.zeros(hi - lo, dtype=bool)
    mem = np.zeros(hi - lo, dtype=bool)
    for s, e, name in iv:
        grid = comm if name.startswith("nccl") else mem if name.startswith("Memcpy") else comp
        grid[s - lo : e - lo] = True
    busy = comp | comm | mem
    out: dict[str, Any] = {
        "steps_in_window": [s for s, _, _ in steps],
        "temporal": {
            "span_ns": hi - lo,
            "idle_ns": int((~busy).sum()),
            "compute_ns": int(comp.sum()),
            "non_compute_ns": int((busy & ~comp).sum()),
        },
        "overlap": {
            "comm_ns": int(comm.sum()),
            "compute_ns": int(comp.sum()),
            "overlap_ns": int((comm & comp).sum()),
            "exposed_comm_ns": int((comm & ~comp).sum()),
        },
        "steps": [],
        "kernels": {},
        "memcpy": {},
    }
    out["steps"] = _brute_force_steps(events, steps)
    for s, e, name in iv:
        table = out["memcpy" if name.startswith("Memcpy") else "kernels"]
        k = table.setdefault(name, {"count": 0, "total_ns": 0, "min_ns": e - s, "max_ns": e - s})
        k["count"] += 1
        k["total_ns"] += e - s
        k["min_ns"] = min(k["min_ns"], e - s)
        k["max_ns"] = max(k["max_ns"], e - s)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("syn")
    write_samples(out, ranks=3, steps=4, seed=11)
    return out


def test_same_seed_writes_identical_bytes(tmp_path: Path, generated: Path) -> None:
    write_samples(tmp_path, ranks=3, steps=4, seed=11)
    for p in sorted(generated.iterdir()):
        assert (tmp_path / p.name).read_bytes() == p.read_bytes(), p.name


def test_another_seed_changes_the_timing(tmp_path: Path, generated: Path) -> None:
    write_samples(tmp_path, ranks=3, steps=4, seed=12)
    assert (tmp_path / "rank-0.json.gz").read_bytes() != (generated / "rank-0.json.gz").read_bytes()


@pytest.mark.parametrize(
    ("folder", "args"),
    [
        ("synthetic_2rank", ["--ranks", "2", "--steps", "5", "--seed", "1"]),
        ("synthetic_8rank", ["--ranks", "8", "--steps", "3", "--seed", "8", "--int-us"]),
    ],
)
def test_committed_samples_are_reproduced_by_their_documented_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str, args: list[str]
) -> None:
    assert main([str(tmp_path), *args]) == 0
    committed = sorted(p.name for p in (SAMPLES / folder).iterdir())
    assert committed == sorted(p.name for p in tmp_path.iterdir())
    for name in committed:
        assert (tmp_path / name).read_bytes() == (SAMPLES / folder / name).read_bytes(), name
    assert f"{GROUND_TRUTH_FILE}" in capsys.readouterr().out


@pytest.mark.parametrize("window", ["default", "all_events"])
@pytest.mark.parametrize("folder", ["generated", "synthetic_2rank", "synthetic_8rank"])
def test_ground_truth_matches_a_brute_force_count_of_the_written_json(
    generated: Path, folder: str, window: str
) -> None:
    where = generated if folder == "generated" else SAMPLES / folder
    for truth in read_ground_truth(where):
        got = _brute_force(_events(where / truth["file"]), all_events=window == "all_events")
        assert got == truth["windows"][window], (truth["rank"], window)


@pytest.mark.parametrize("folder", ["synthetic_2rank", "synthetic_8rank"])
def test_ground_truth_is_self_consistent(folder: str) -> None:
    truths = read_ground_truth(SAMPLES / folder)
    assert [t["rank"] for t in truths] == list(range(truths[0]["arguments"]["ranks"]))
    spans = set()
    for t in truths:
        for name, w in t["windows"].items():
            tm, ov = w["temporal"], w["overlap"]
            assert tm["idle_ns"] + tm["compute_ns"] + tm["non_compute_ns"] == tm["span_ns"]
            assert ov["overlap_ns"] + ov["exposed_comm_ns"] == ov["comm_ns"]
            assert 0 < ov["overlap_ns"] < ov["comm_ns"]  # known partial overlap
            assert tm["idle_ns"] > 0  # known gaps
            assert ov["compute_ns"] == tm["compute_ns"]
            for s in w["steps"]:
                assert s["duration_ns"] == s["end_ns"] - s["start_ns"]
                parts = s["compute_ns"] + s["exposed_comm_ns"] + s["idle_ns"]
                assert parts < s["gpu_duration_ns"]  # the rest: memcpy-only time
            assert sum(s["exposed_comm_ns"] for s in w["steps"]) == ov["exposed_comm_ns"]
            n_steps = t["arguments"]["steps"]
            assert len(w["steps"]) == (n_steps - 1 if name == "default" else n_steps)
        spans.add(t["windows"]["default"]["temporal"]["span_ns"])
    assert len(spans) == len(truths)  # every rank has its own timing


def test_ns_sample_has_sub_microsecond_float_times_and_int_sample_has_integers() -> None:
    ev2 = _events(SAMPLES / "synthetic_2rank" / "rank-0.json.gz")
    ts2 = [e["ts"] for e in ev2 if e.get("ph") == "X" and e["cat"] == "kernel"]
    assert all(isinstance(t, Decimal) for t in ts2)
    assert sum(_ns(t) % 1000 != 0 for t in ts2) > len(ts2) // 2
    ev8 = _events(SAMPLES / "synthetic_8rank" / "rank-0.json.gz")
    assert all(isinstance(e["ts"], int) for e in ev8 if e.get("ph") == "X" and e["cat"] != "Trace")


def test_reader_reproduces_the_generated_tables(generated: Path) -> None:
    truths = read_ground_truth(generated)
    traces = read_kineto_files(sorted(generated.glob("rank-*.json.gz")))
    assert [t.rank for t in traces] == [0, 1, 2]
    for trace, truth in zip(traces, truths, strict=True):
        events = _events(generated / truth["file"])
        gpu = [e for e in events if e.get("ph") == "X" and e["cat"] in ("kernel", "gpu_memcpy")]
        want = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]) for e in gpu)
        got = sorted(
            zip(
                trace.gpu["start_ns"].tolist(),
                trace.gpu["end_ns"].tolist(),
                trace.gpu["name"].astype(str),
                strict=True,
            )
        )
        assert got == want
        assert trace.meta.world_size == 3 and trace.meta.rank_source == "distributedInfo"
        assert trace.gpu_device.name == "NVIDIA H100 80GB HBM3"
        assert trace.steps()["step"].tolist() == [10, 11, 12, 13]
        nccl = trace.gpu[trace.gpu["name"].astype(str).str.startswith("ncclDevKernel")]
        seqs = [c["Seq"] for c in nccl["comm_args"]]
        assert seqs == [0, 1, 2, 3]
        assert all(c["Comms Id"] >= 2**63 for c in nccl["comm_args"] if c["Seq"] % 2)
        mem = trace.counters[trace.counters["name"] == "Total Allocated"]
        assert mem["ts_ns"].tolist() == [m["ts_ns"] for m in truth["memory_counters"]]
        assert mem["value"].tolist() == [m["total_allocated"] for m in truth["memory_counters"]]
        assert "python_function" not in set(trace.host["cat"].astype(str))
