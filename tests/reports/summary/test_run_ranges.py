"""The ``run`` section's annotated ranges against the pandas groupby they replaced, on random
annotations: several kinds, missing names and a name spelled "nan", ties in total time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.model import Trace, TraceMeta, make_trace
from reports.summary.sections.series import RANGE_KINDS, TOP_RANGES, ranges


def reference(trace: Trace) -> list[dict[str, object]]:
    a = trace.annotations
    a = a[a["kind"].isin(RANGE_KINDS)]
    if a.empty:
        return []
    d = (a["end_ns"] - a["start_ns"]).to_numpy(dtype=np.int64)
    g = (
        a.assign(d=d, kind=a["kind"].astype(str), name=a["name"].astype(str))
        .groupby(["kind", "name"], sort=False)["d"]
        .agg(["count", "sum", "max"])
        .reset_index()
        .sort_values(["sum", "kind", "name"], ascending=[False, True, True], kind="stable")
    )
    return [
        {"kind": k, "name": n, "count": int(c), "total_ns": int(s), "max_ns": int(m)}
        for k, n, c, s, m in g.head(TOP_RANGES).itertuples(index=False, name=None)
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "nvtx", "gpu_user", "step"]),
            st.sampled_from(["fwd", "bwd", "nan", None, "opt", "b", "a"]),
            st.integers(0, 5),
        ),
        max_size=40,
    )
)
def test_ranges_are_the_groupby_of_kind_and_name(rows: list[tuple[str, str | None, int]]) -> None:
    trace = make_trace(
        TraceMeta(rank=0, source_format="synthetic"),
        annotations={
            "name": [n for _, n, _ in rows],
            "kind": [k for k, _, _ in rows],
            "start_ns": [10 * i for i in range(len(rows))],
            "end_ns": [10 * i + d for i, (_, _, d) in enumerate(rows)],
            "step": [-1] * len(rows),
        },
    )
    assert ranges(trace) == reference(trace)
