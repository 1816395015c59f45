"""collectors.linking.launching_calls: the one kernel → launching-call link (by correlation id;
the earliest start wins among calls sharing an id, then table order), against hand-computed
cases, a brute force, and the shared traces where the choice matters (MTIA's repeated ids, an old
trace's ``Runtime`` category)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.kineto import read_kineto
from collectors.linking import launch_mask, launching_calls
from collectors.model import LAUNCH_CATS, TraceMeta, make_trace
from tests.support.env import shared_path


def _host(rows: list[tuple[str, str, int, int]]) -> pd.DataFrame:
    """Host table from (name, cat, start_ns, correlation) rows."""
    return make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        host={
            "name": [r[0] for r in rows],
            "cat": [r[1] for r in rows],
            "start_ns": [r[2] for r in rows],
            "end_ns": [r[2] + 5 for r in rows],
            "correlation": [r[3] for r in rows],
        },
    ).host


def test_hand_computed_links() -> None:
    host = _host(
        [
            ("cudaLaunchKernel", "cuda_runtime", 30, 7),  # row 0
            ("cuLaunchKernel", "cuda_driver", 20, 7),  # row 1: starts first, wins id 7
            ("aten::mm", "cpu_op", 10, 8),  # not a device-API call
            ("cudaLaunchKernel", "Runtime", 40, 8),  # row 3: Kineto before 2023
            ("cudaMemcpyAsync", "cuda_runtime", 50, 9),  # row 4: ties with row 5, first row
            ("cudaMemcpyAsync", "cuda_runtime", 50, 9),
        ]
    )
    got = launching_calls(host, np.array([7, 8, 9, 10, -1, 7]))
    assert got.tolist() == [1, 3, 4, -1, -1, 1]


def test_every_device_api_category_launches_and_no_other() -> None:
    rows = [(f"call_{c}", c, i, i) for i, c in enumerate((*LAUNCH_CATS, "cpu_op", "kernel"))]
    host = _host(rows)
    n = len(LAUNCH_CATS)
    assert launching_calls(host, np.arange(n + 2)).tolist() == [*range(n), -1, -1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["cuda_runtime", "Runtime", "cpu_op"]), st.integers(0, 6),
                  st.integers(-1, 4)),
        max_size=25,
    ),
    st.lists(st.integers(-2, 5), max_size=15),
)  # fmt: skip
def test_matches_a_brute_force(rows: list[tuple[str, int, int]], query: list[int]) -> None:
    host = _host([("call", c, s, k) for c, s, k in rows])
    want = []
    for q in query:
        cands = [(s, i) for i, (c, s, k) in enumerate(rows) if c != "cpu_op" and k == q and q >= 0]
        want.append(min(cands)[1] if cands else -1)
    assert launching_calls(host, np.array(query, dtype=np.int64)).tolist() == want


def test_repeated_ids_of_the_mtia_trace_link_to_their_earliest_call() -> None:
    path = shared_path("kineto", "hta", "mtia_inference_trace", "mtia_inference_rank_0.json.gz")
    h = read_kineto(path).host
    pos = np.flatnonzero(launch_mask(h))
    calls = pd.DataFrame(
        {"row": pos, "id": h["correlation"].to_numpy()[pos], "start": h["start_ns"].to_numpy()[pos]}
    )
    repeated = calls[calls["id"].duplicated(keep=False)]
    assert len(repeated) > 100  # the trace repeats ids: the tie-break matters here
    first = repeated.sort_values(["id", "start", "row"]).drop_duplicates("id")
    assert launching_calls(h, first["id"].to_numpy()).tolist() == first["row"].tolist()


def test_an_old_trace_links_its_runtime_category_launches() -> None:
    trace = read_kineto(shared_path("kineto", "hta", "trace_file_list", "inference_rank_1.json.gz"))
    h, g = trace.host, trace.gpu
    runtime = h.index[np.asarray(h["cat"] == "Runtime", dtype=bool)]
    assert len(runtime) == 8
    rows = launching_calls(h, g["correlation"].to_numpy())
    linked = set(rows[rows >= 0].tolist())
    assert set(runtime.tolist()) & linked  # some GPU work was launched from a Runtime call
