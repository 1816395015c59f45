"""The console on the GPU clock: a rank without steps gets its host-bound verdict in one line
(no empty per-step table), the step table shows the GPU-clock figures and the lag, the
integrity notes are printed, and launch waits are shown as their union."""

from __future__ import annotations

from rich.console import Console

from reports.console import print_summary
from reports.summary import build_summary
from tests.support.builders import trace_us
from tests.support.lag_traces import lag_run

RT = "cuda_runtime"


def _printed(summary: dict) -> str:
    console = Console(record=True, width=160)
    print_summary(summary, console)
    return console.export_text()


def test_a_rank_without_steps_gets_a_verdict_line_and_no_empty_step_table() -> None:
    t = trace_us(
        [("K1", 7, 0, 10, 1), ("K2", 7, 50, 60, 2)],
        [("cudaLaunchKernel", RT, 0, 1, 1, 1), ("cudaLaunchKernel", RT, 40, 41, 1, 2)],
        [],
    )
    text = _printed(build_summary([t]))
    assert "Rank 0: host-bound (host wait 66.7 %, exposed comm 0.0 % of the GPU span)" in text
    assert "CPU ops during host wait" not in text  # the per-step table's header
    assert "steps (GPU figures" not in text


def test_steps_lag_and_notes_are_printed_on_the_gpu_clock() -> None:
    doc = build_summary([r.trace for r in lag_run(1.7)])
    text = _printed(doc)
    assert "Rank 0: steps (GPU figures on the GPU clock)" in text
    assert "steps behind" in text and "1.70" in text
    assert "rank 0: note: the GPU runs 1.70 steps behind the CPU" in text
    assert "launched before the profiler started" in text
    assert "GPU time (HTA view" in text  # the HTA-compatible breakdown says which it is


def test_launch_waits_are_the_union_not_the_sum() -> None:
    # three kernels launched at once wait together: delays 10, 20, 30 µs overlap
    t = trace_us(
        [("K1", 7, 11, 20, 1), ("K2", 7, 21, 30, 2), ("K3", 7, 31, 40, 3)],
        [("cudaLaunchKernel", RT, 0, 1, 1, c) for c in (1, 2, 3)],
        [],
    )
    doc = build_summary([t])
    a = doc["ranks"][0]["launch"]["all"]
    assert a["launch_delay"]["sum_ns"] == (10 + 20 + 30) * 1000
    assert a["launch_delay_union_ns"] == 30 * 1000  # [1, 31)
    assert "waiting ms (union)" in _printed(doc)
