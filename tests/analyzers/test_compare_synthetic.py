"""A synthetic pair with known changes: one kernel 20 % slower, one collective added.

BASE is :func:`tests.support.synthetic.generate` (2 ranks, 12 ProfilerSteps).  CURRENT is the same
trace with time *inserted*: every instance of the GEMM kernel gets ``round(d / 5)`` ns longer
(everything after its end moves later, ranges that straddle it grow), the host-to-device
memcpy gets 10 % longer (a small third change), and in every step a new all-gather (its
``record_param_comms``, launch and NCCL kernel) runs right after the all-reduce.  So, by
construction, each compared step grows by exactly what was inserted into it, the GEMM and the
all-gather are the two largest contributors, and nothing else changes.  Both sides go through
the Kineto reader from files.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from analyzers.compare import compare
from analyzers.compare_sides import side_from_summary, side_from_traces
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from reports.summary import build_summary
from tests.support import kineto_json as kj
from tests.support.synthetic import COMM_STREAM, COMPUTE_NAMES, MEMCPY_NAME, NCCL_NAME, generate

RANKS = 2
STEPS = 12
SLOW = COMPUTE_NAMES[0]
"""The kernel made 20 % slower (every instance)."""
NOISE = MEMCPY_NAME
"""Made 10 % slower (a small third contributor).  Not a compute kernel: the last two overlap
the all-reduce, which would grow with them."""
GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GATHER_NS = 37_000
"""Duration of the added all-gather, once per step."""


def ns(x: Any) -> int:
    """A Kineto µs value as exact ns."""
    return int(Decimal(str(x)) * 1000)


def us(n: int) -> int | float:
    """ns as a Kineto µs value (≤ 3 decimals, read back exactly)."""
    return n // 1000 if n % 1000 == 0 else n / 1000


def insert_time(events: list[dict[str, Any]], t_ns: int, d_ns: int) -> None:
    """Insert *d_ns* of time at *t_ns*: later events move, events straddling it grow."""
    for e in events:
        if not isinstance(e.get("ts"), (int, float)):
            continue
        ts = ns(e["ts"])
        if ts >= t_ns:
            e["ts"] = us(ts + d_ns)
        elif isinstance(e.get("dur"), (int, float)) and ts + ns(e["dur"]) > t_ns:
            e["dur"] = us(ns(e["dur"]) + d_ns)


def _kernels(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return sorted(
        (e for e in events if e.get("cat") in ("kernel", "gpu_memcpy") and e["name"] == name),
        key=lambda e: ns(e["ts"]),
    )


def slow_down(events: list[dict[str, Any]], name: str, divisor: int) -> None:
    """Every instance of kernel *name* gets ``round(d / divisor)`` ns longer (latest first)."""
    for k in reversed(_kernels(events, name)):
        d = ns(k["dur"])
        extra = round(d / divisor)
        end = ns(k["ts"]) + d
        insert_time(events, end, extra)
        k["dur"] = us(d + extra)


def add_all_gather(trace: dict[str, Any], rank: int) -> None:
    """After each all-reduce: insert GATHER_NS and run a new all-gather there (launched in the
    step, on its own host thread, under ``record_param_comms``)."""
    events = trace["traceEvents"]
    pid = 4000 + rank
    tid = pid + 1
    for i, ar in enumerate(reversed(_kernels(events, NCCL_NAME))):
        t = ns(ar["ts"]) + ns(ar["dur"]) + 1000
        insert_time(events, t, GATHER_NS)
        corr, ext = 900_000 + i, 800_000 + i
        device = ar["args"]["device"]
        meta = {
            "Collective name": "allgather",
            "In msg nelems": 1 << 20,
            "Out msg nelems": RANKS << 20,
            "Group size": RANKS,
            "dtype": "Float",
            "Process Group Name": "0",
            "Process Group Description": "default_pg",
            "Process Group Ranks": json.dumps(list(range(RANKS))),
        }
        events += [
            kj.op("record_param_comms", us(t - 30_000), us(20_000), pid=pid, tid=tid,
                  **{"External id": ext, **meta}),
            kj.runtime("cudaLaunchKernel", us(t - 25_000), us(5_000), corr, pid=pid, tid=tid),
            kj.kernel(GATHER, us(t), us(GATHER_NS), corr, stream=COMM_STREAM, pid=device,
                      device=device, **meta),
        ]  # fmt: skip


def write(folder: Path, traces: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for r, t in enumerate(traces):
        kj.write(folder / f"rank-{r}.json.gz", t)
    return folder


def make_pair(root: Path) -> tuple[Path, Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """(BASE folder, CURRENT folder, BASE traces, CURRENT traces) as Kineto dicts."""
    base, _ = generate(RANKS, STEPS, seed=11)
    cur, _ = generate(RANKS, STEPS, seed=11)
    for r, t in enumerate(cur):
        slow_down(t["traceEvents"], SLOW, 5)
        slow_down(t["traceEvents"], NOISE, 10)
        add_all_gather(t, r)
    return write(root / "base", base), write(root / "current", cur), base, cur


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    return make_pair(tmp_path_factory.mktemp("synthetic_pair"))


def _steps(trace: dict[str, Any]) -> list[tuple[int, int]]:
    s = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    return sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in s)


def _launch(trace: dict[str, Any]) -> dict[int, int]:
    return {
        e["args"]["correlation"]: ns(e["ts"])
        for e in trace["traceEvents"]
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }


def raw_kernel_total(trace: dict[str, Any], name: str, steps: list[tuple[int, int]]) -> int:
    """Σ duration of kernel *name* launched inside *steps*, from the raw events."""
    launch = _launch(trace)
    total = 0
    for k in _kernels(trace["traceEvents"], name):
        t = launch.get(k["args"]["correlation"], ns(k["ts"]))
        if any(lo <= t < hi for lo, hi in steps):
            total += ns(k["dur"])
    return total


def expected_delta(base: list[dict[str, Any]], cur: list[dict[str, Any]], name: str, n: int) -> int:
    """Σ over ranks of the change in *name*'s time launched in the first *n* steps (raw)."""
    return sum(
        raw_kernel_total(cur[r], name, _steps(cur[r])[:n])
        - raw_kernel_total(base[r], name, _steps(base[r])[:n])
        for r in range(RANKS)
    )


def test_slowed_kernel_and_added_collective_are_the_top_two_contributors(pair: Any) -> None:
    base_dir, cur_dir, base, cur = pair
    opts = AnalysisOptions()
    result = compare(
        side_from_traces(load_traces([base_dir]), "base", opts),
        side_from_traces(load_traces([cur_dir]), "current", opts),
    )
    assert result.mode == "steps" and result.notes == ()
    # the window drops the last step: 11 compared steps per rank, measured from the raw events
    n = STEPS - 1
    tb = sum(hi - lo for r in range(RANKS) for lo, hi in _steps(base[r])[:n])
    tc = sum(hi - lo for r in range(RANKS) for lo, hi in _steps(cur[r])[:n])
    assert (result.base.total_ns, result.current.total_ns) == (tb, tc)
    assert result.total_change_ns == tc - tb > 0

    def expected(name: str) -> int:
        return expected_delta(base, cur, name, n)

    slow, gather, noise = expected(SLOW), expected(GATHER), expected(NOISE)
    assert gather == RANKS * n * GATHER_NS
    # 20 % of the GEMM's base time, to within the rounding of each instance to a whole ns
    base_gemm = sum(raw_kernel_total(base[r], SLOW, _steps(base[r])[:n]) for r in range(RANKS))
    assert abs(slow - base_gemm / 5) <= RANKS * n * 2 * 0.5

    kv = result.view("kernel")
    top = kv.entries[:3]
    assert [e.status for e in top] == ["added", "matched", "matched"]
    assert top[0].names == (GATHER,) and top[0].delta_ns == gather
    assert top[0].current_count == RANKS * n and top[0].base_count == 0
    assert top[1].names == (SLOW,) and top[1].delta_ns == slow
    assert top[1].delta_pct == pytest.approx(20.0, abs=0.01)
    assert top[1].per_call_delta_pct == pytest.approx(20.0, abs=0.01)
    assert top[2].names == (NOISE,) and top[2].delta_ns == noise
    assert all(e.delta_ns == 0 for e in kv.entries[3:])
    # every inserted ns lies inside a compared step: the entries explain the change exactly
    assert kv.other_ns == 0
    assert kv.matched_ns + kv.added_ns + kv.removed_ns + kv.other_ns == result.total_change_ns
    assert kv.share_pct(gather) == pytest.approx(100.0 * gather / (tc - tb))

    cv = result.view("collective")
    assert cv.entries[0].status == "added" and cv.entries[0].key.startswith("all_gather")
    assert cv.entries[0].delta_ns == gather
    assert all(e.delta_ns == 0 for e in cv.entries[1:])

    ov = result.view("op")
    mm = next(e for e in ov.entries if e.key.startswith("aten::mm"))
    copy = next(e for e in ov.entries if e.key.startswith("aten::copy_"))
    assert (mm.delta_ns, copy.delta_ns) == (slow, noise)

    sv = result.view("step")
    assert len(sv.entries) == n and sv.other_ns == 0
    assert sum(e.delta_ns for e in sv.entries) == tc - tb


def test_summary_against_trace_keeps_the_same_top_contributors(pair: Any) -> None:
    """A JSON summary as BASE: window mode, kernels over the whole window, same two leaders."""
    base_dir, cur_dir, base, cur = pair
    opts = AnalysisOptions()
    summary = json.loads(json.dumps(build_summary(load_traces([base_dir]), opts)))
    result = compare(
        side_from_summary(summary, "base.json"),
        side_from_traces(load_traces([cur_dir]), "current", opts),
    )
    assert result.mode == "window"
    assert any("JSON summary" in n for n in result.notes)
    assert not result.view("op").available and "JSON summary" in (result.view("op").note or "")
    kv = result.view("kernel")
    assert [e.names[0] for e in kv.entries[:2]] == [GATHER, SLOW]
    # every GEMM and all-gather of the window is launched in one of its 11 steps
    n = STEPS - 1
    assert [e.delta_ns for e in kv.entries[:2]] == [
        expected_delta(base, cur, GATHER, n),
        expected_delta(base, cur, SLOW, n),
    ]
    assert result.total_change_ns == sum(
        (hi - lo) for r in range(RANKS) for lo, hi in _steps(cur[r])[:n]
    ) - sum((hi - lo) for r in range(RANKS) for lo, hi in _steps(base[r])[:n])
    # window totals: the initialisation kernel is in both, unchanged; memcpy is not compared
    assert all("Memcpy" not in e.key for e in kv.entries)
    assert kv.matched_ns + kv.added_ns + kv.removed_ns + kv.other_ns == result.total_change_ns
