"""The analyzer memo: one value per Trace object, seeded stand-ins, nothing kept in the model."""

from __future__ import annotations

import copy
import gc
import pickle

from analyzers import memo
from analyzers.collectives import build_collectives, collectives_table
from collectors.model import Trace
from tests.support.builders import trace_us


def _calls() -> tuple[memo.TraceMemo[int], list[Trace]]:
    seen: list[Trace] = []

    @memo.memoised
    def n_gpu_rows(trace: Trace) -> int:
        seen.append(trace)
        return len(trace.gpu)

    return n_gpu_rows, seen


def test_a_value_is_computed_once_per_trace_and_separately_for_a_copy() -> None:
    t = trace_us([("k", 7, 0, 5, 1), ("k", 7, 6, 9, 2)], [], [])
    n_gpu_rows, seen = _calls()
    assert (n_gpu_rows(t), n_gpu_rows(t)) == (2, 2)
    assert len(seen) == 1
    other = copy.copy(t)
    assert n_gpu_rows(other) == 2 and len(seen) == 2


def test_a_seeded_value_is_served_instead_of_computing() -> None:
    t = trace_us([("k", 7, 0, 5, 1)], [], [])
    n_gpu_rows, seen = _calls()
    n_gpu_rows.seed(t, 41)
    assert n_gpu_rows(t) == 41 and not seen


def test_the_memo_is_not_stored_in_or_pickled_with_the_trace() -> None:
    t = trace_us([("ncclKernel_AllReduce_RING_LL_Sum_float", 7, 0, 5, 1)], [], [])
    table = collectives_table(t)
    assert collectives_table.cached(t)
    assert "collectives" not in vars(t)
    back = pickle.loads(pickle.dumps(t))
    assert not collectives_table.cached(back)
    assert collectives_table(back).equals(table)
    assert build_collectives(t).equals(table)


def test_a_slot_is_dropped_with_its_trace() -> None:
    t = trace_us([("k", 7, 0, 5, 1)], [], [])
    n_gpu_rows, seen = _calls()
    n_gpu_rows(t)
    key = id(t)
    assert key in memo._slots
    del t
    seen.clear()
    gc.collect()
    assert key not in memo._slots


def test_forgetting_a_trace_drops_its_values_and_keeps_the_others() -> None:
    t = trace_us([("k", 7, 0, 5, 1)], [], [])
    other = trace_us([("k", 7, 0, 5, 1), ("k", 7, 6, 9, 2)], [], [])
    n_gpu_rows, seen = _calls()
    n_gpu_rows(t), n_gpu_rows(other)
    memo.forget(t)
    assert not n_gpu_rows.cached(t) and n_gpu_rows.cached(other)
    assert n_gpu_rows(t) == 1 and seen == [t, other, t]  # computed again when asked for
    memo.forget(trace_us([], [], []))  # a trace with nothing memoised: nothing to do
