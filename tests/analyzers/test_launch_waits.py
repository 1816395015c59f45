"""Launch delays as waiting time (docs/idle-and-launch.md §4.2): overlapping waits count once
(their union), and ops a graph launch enqueued are left out of the delay figures (their
"delay" is a position inside the graph), counted in ``graph_ops``."""

from __future__ import annotations

from analyzers.launch import all_launches, delay_union_by, delay_union_ns
from reports.summary import build_summary
from tests.support.builders import US, trace_us

RT = "cuda_runtime"


def _trace() -> object:
    # K1 launched at 0, starts at 10; K2/K3 launched at 1/2, start at 20/30 (waits overlap);
    # one graph launch at 50 whose two kernels run at 60 and 160
    return trace_us(
        [
            ("K1", 7, 10, 20, 1),
            ("K2", 7, 20, 30, 2),
            ("K3", 7, 30, 40, 3),
            ("G1", 7, 60, 160, 4),
            ("G2", 7, 160, 260, 4),
        ],
        [
            ("cudaLaunchKernel", RT, 0, 1, 1, 1),
            ("cudaLaunchKernel", RT, 1, 2, 1, 2),
            ("cudaLaunchKernel", RT, 2, 3, 1, 3),
            ("cudaGraphLaunch", RT, 50, 52, 1, 4),
        ],
        [],
    )


def test_overlapping_waits_count_once_and_graph_ops_are_left_out() -> None:
    t = _trace()
    a = all_launches(t)
    assert a["graph"].tolist() == [False, False, False, True, True]
    eager = a[~a["graph"]]
    assert eager["launch_delay_ns"].tolist() == [9 * US, 18 * US, 27 * US]
    assert delay_union_ns(eager) == 29 * US  # [1, 30)
    per_name = delay_union_by(a, "name")
    assert per_name["K3"] == 27 * US and per_name["G2"] == 108 * US
    launch = build_summary([t])["ranks"][0]["launch"]
    assert launch["all"]["ops"] == 5 and launch["all"]["graph_ops"] == 2
    assert launch["all"]["launch_delay"]["n"] == 3  # the graph's kernels are not waits
    assert launch["all"]["launch_delay_union_ns"] == 29 * US
    assert {k["name"] for k in launch["per_kernel"]} == {"K1", "K2", "K3"}
    assert [k["launch_delay_union_ns"] for k in launch["per_kernel"]] == [27 * US, 18 * US, 9 * US]
