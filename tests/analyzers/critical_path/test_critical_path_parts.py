"""The per-rank graph part survives its table (the many-rank digest) exactly — its labels as
strings, whatever their codes — and the table is much smaller than the rank's Trace."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analyzers.critical_path.part_table import part_from_table, part_table
from analyzers.critical_path.rank_graph import rank_graph
from collectors.load import load_traces
from tests.support.critical_path_traces import training_run
from tests.support.env import SAMPLES, shared_path


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        if a.dtype.kind == "f":
            return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        return a.shape == b.shape and bool((a == b).all())
    return a == b


@pytest.mark.parametrize(
    "source",
    [
        "training_run",
        "synthetic_8rank",
        ("negative_queue_length_values_check", "rank0.json.gz"),
    ],
    ids=str,
)
def test_part_table_round_trip_is_exact(source: object) -> None:
    if source == "training_run":
        traces = training_run(world=2)
    elif source == "synthetic_8rank":
        traces = load_traces([SAMPLES / "synthetic_8rank"])
    else:
        traces = load_traces([shared_path("kineto", "hta", *source)])  # type: ignore[misc]
    for t in traces:
        g = rank_graph(t)
        back = part_from_table(part_table(g))
        codes = {"labels", "cause_code", "detail_code", "name_code", "category_code"}
        for f in dataclasses.fields(g):
            if f.name not in codes:
                assert _same(getattr(g, f.name), getattr(back, f.name)), f.name
        for f in ("cause", "detail", "name", "category"):  # the labels, whatever their codes
            assert getattr(g, f).tolist() == getattr(back, f).tolist(), f
        assert len(set(back.labels.tolist())) == len(back.labels)  # distinct strings


def test_part_table_of_a_large_rank_is_a_fraction_of_its_trace() -> None:
    t = load_traces([shared_path("kineto", "hta", "negative_queue_length_values_check")])[0]
    g = rank_graph(t)
    table = part_table(g).memory_usage(deep=True).sum()
    trace = sum(x.memory_usage(deep=True).sum() for x in (t.host, t.gpu, t.annotations))
    assert table < 0.3 * trace
    assert table < 32 * len(g.src)  # bytes per edge
