"""The per-key reductions of cross-rank matching equal a group-by-group reference: transfer,
late rank (lowest on ties), the step most ranks report (lowest on ties), consistency."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.skew import _FIXED_SIZE, _match_rows

row = st.tuples(
    st.sampled_from(["g#0", "g#1", "g#2", "id:7"]),
    st.integers(0, 4),  # rank
    st.integers(0, 50),  # start
    st.integers(1, 30),  # duration
    st.sampled_from(["all_reduce", "send", None]),
    st.sampled_from([-1, 64, 128]),
    st.integers(-1, 2),  # step
)


def _reference(allr: pd.DataFrame) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    matched, waits = [], []
    for key, grp in allr.groupby("key", sort=False):
        grp = grp.sort_values("rank")
        d = grp["duration_ns"].to_numpy(dtype=np.int64)
        st_ = grp["start_ns"].to_numpy(dtype=np.int64)
        ranks = grp["rank"].to_numpy(dtype=np.int64)
        transfer = int(d.min())
        colls = set(grp["collective"].dropna())
        coll = next(iter(colls)) if len(colls) == 1 else None
        sizes = set(grp["message_bytes"][grp["message_bytes"] >= 0])
        steps = grp["step"][grp["step"] >= 0]
        matched.append(
            {
                "key": key,
                "match_by": grp["match_by"].iloc[0],
                "collective": coll,
                "pg_name": grp["pg_name"].iloc[0],
                "n_ranks": len(grp),
                "ranks": tuple(int(r) for r in ranks),
                "step": int(steps.mode().min()) if len(steps) else -1,
                "message_bytes": int(max(sizes)) if sizes else -1,
                "consistent": len(colls) <= 1 and not (coll in _FIXED_SIZE and len(sizes) > 1),
                "transfer_ns": transfer,
                "arrival_skew_ns": int(d.max() - d.min()),
                "late_rank": int(ranks[int(np.argmin(d))]),
                "start_spread_ns": int(st_.max() - st_.min()),
            }
        )
        for r, s0, dd in zip(ranks, st_, d, strict=True):
            waits.append((key, int(r), int(s0), int(dd), int(dd - transfer)))
    return matched, waits


@settings(max_examples=300, deadline=None)
@given(st.lists(row, min_size=1, max_size=25))
def test_match_rows_equal_the_group_by_group_reference(rows: list[tuple[Any, ...]]) -> None:
    allr = pd.DataFrame(
        rows,
        columns=["key", "rank", "start_ns", "duration_ns", "collective", "message_bytes", "step"],
    ).drop_duplicates(["key", "rank"], keep="first")
    allr["collective"] = allr["collective"].astype(object)
    allr["match_by"] = np.where(allr["key"].str.startswith("id:"), "comms_id", "ordinal")
    allr["pg_name"] = pd.Series(
        np.where(allr["key"] == "g#2", None, "g"), index=allr.index, dtype=object
    )
    got = _match_rows(allr)
    want = _reference(allr)
    assert got[1] == want[1]
    assert len(got[0]) == len(want[0])
    for g, w in zip(got[0], want[0], strict=True):
        assert g == w
