"""The per-step stragglers of the cross-rank skew against the pandas loop they replaced, on
random matches: ties in caused wait, steps nobody waited in, keys without waits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.skew import _per_step


def reference(ok: pd.DataFrame, w_ok: pd.DataFrame) -> list[dict[str, int]]:
    steps = []
    total_wait = w_ok.groupby("key")["wait_ns"].sum()
    okk = ok.assign(total_wait=ok["key"].map(total_wait).fillna(0).astype(np.int64))
    step: Any
    for step, grp in okk.groupby("step", sort=True):
        caused = grp.groupby("late_rank")["total_wait"].sum()
        best = int(caused.max()) if len(caused) else 0
        straggler = int(caused[caused == best].index.min()) if best > 0 else -1
        steps.append(
            {
                "step": int(step),
                "collectives": len(grp),
                "arrival_skew_ns": int(grp["arrival_skew_ns"].sum()),
                "transfer_ns": int(grp["transfer_ns"].sum()),
                "straggler": straggler,
                "straggler_caused_wait_ns": best if straggler >= 0 else 0,
            }
        )
    return steps


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 3), st.integers(0, 3), st.integers(0, 9), st.integers(0, 9)),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.tuples(st.integers(0, 25), st.integers(0, 4)), max_size=40),
)
def test_stragglers_per_step_are_those_of_the_loop(
    matches: list[tuple[int, int, int, int]], waits: list[tuple[int, int]]
) -> None:
    ok = pd.DataFrame(
        {
            "key": [f"pg#{i}" for i in range(len(matches))],
            "step": [m[0] for m in matches],
            "late_rank": [m[1] for m in matches],
            "arrival_skew_ns": [m[2] for m in matches],
            "transfer_ns": [m[3] for m in matches],
        }
    )
    w_ok = pd.DataFrame(
        {"key": [f"pg#{k}" for k, _ in waits], "wait_ns": [w for _, w in waits]},
        columns=["key", "wait_ns"],
    )
    assert _per_step(ok, w_ok) == reference(ok, w_ok)


def test_a_tie_in_caused_wait_names_the_lowest_rank() -> None:
    ok = pd.DataFrame(
        {
            "key": ["a", "b", "c"],
            "step": [0, 0, 1],
            "late_rank": [2, 1, 3],
            "arrival_skew_ns": [1, 2, 3],
            "transfer_ns": [4, 5, 6],
        }
    )
    w_ok = pd.DataFrame({"key": ["a", "b", "a"], "wait_ns": [3, 5, 2]})
    got = _per_step(ok, w_ok)
    assert [(s["straggler"], s["straggler_caused_wait_ns"]) for s in got] == [(1, 5), (-1, 0)]
    assert got == reference(ok, w_ok)
